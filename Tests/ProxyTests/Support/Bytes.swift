import Proxy

/// Runs `body` over the UTF-8 bytes of `text`.
func withBytes<R>(_ text: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    Array(text.utf8).withUnsafeBytes(body)
}

/// An address from text that must parse.
func ip(_ text: String) -> IPAddress {
    guard let a = IPAddress(text) else { fatalError("test address \(text) does not parse") }
    return a
}

/// Keeps field values alive (as one buffer per line) and resolves them.
struct ForwardedCase {
    var lines: [(ForwardedField, [UInt8])] = []

    init(_ pairs: [(String, String)]) {
        for (name, value) in pairs {
            let field = Array(name.utf8).withUnsafeBytes { ForwardedField(name: $0) }
            guard let field else { fatalError("not a forwarding field: \(name)") }
            lines.append((field, Array(value.utf8)))
        }
    }

    /// Resolves and hands the result to `body` while the values are alive
    /// (host and obfuscated slices point into them).
    func resolve<R>(trusted: String, peer: PeerAddress, _ body: (ForwardedResolution) -> R) -> R {
        let resolver = ForwardedResolver(trusted: try! TrustedPeers(parsing: trusted))
        // Copy the values into one stable allocation per line.
        let buffers = lines.map { field, bytes -> (ForwardedField, UnsafeMutableRawBufferPointer) in
            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
            b.copyBytes(from: bytes)
            return (field, b)
        }
        defer { buffers.forEach { $0.1.deallocate() } }
        var fields = ForwardedFieldLines()
        for (field, b) in buffers { fields.append(field, value: UnsafeRawBufferPointer(b)) }
        return body(resolver.resolve(peer: peer, fields: fields))
    }
}

/// A resolution flattened to text, easy to compare in tests.
struct Outcome: Equatable, CustomStringConvertible {
    var client: String?
    var scheme: String?
    var host: String?
    var port: UInt16?
    var source: ForwardedResolution.Source

    init(client: String? = nil, scheme: String? = nil, host: String? = nil, port: UInt16? = nil,
         source: ForwardedResolution.Source = .none) {
        self.client = client
        self.scheme = scheme
        self.host = host
        self.port = port
        self.source = source
    }

    init(_ r: ForwardedResolution) {
        switch r.client {
        case nil: client = nil
        case .address(let a, let p)?: client = p.map { a.isIPv4 ? "\(a):\($0)" : "[\(a)]:\($0)" } ?? a.description
        case .unknown?: client = "unknown"
        case .obfuscated(let s)?: client = s.description
        }
        scheme = r.scheme.map { $0 == .https ? "https" : "http" }
        host = r.host?.description
        port = r.port
        source = r.source
    }

    var description: String { "client=\(client ?? "-") scheme=\(scheme ?? "-") host=\(host ?? "-") port=\(port.map(String.init) ?? "-") \(source)" }
}

let unchanged = Outcome()

func outcome(_ pairs: [(String, String)], trusted: String = "10.0.0.0/8, 2001:db8:ffff::/48",
             peer: PeerAddress = .ip(ip("10.0.0.1"))) -> Outcome {
    ForwardedCase(pairs).resolve(trusted: trusted, peer: peer) { Outcome($0) }
}
