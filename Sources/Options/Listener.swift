import CSys
import Core

/// A bound, listening socket and what the application is told about it.
public struct Listener {
    public let fd: Int32
    public let isUnix: Bool
    public let host: String
    public let port: Int
    public let unixPath: String?
    /// Connections are TLS (the URL says https).
    public var secure = false

    /// Binds per the configuration, or fails with one line for the operator.
    public static func bind(_ config: Config) throws(StartupFailure) -> Listener {
        var err = [CChar](repeating: 0, count: 256)
        if let path = config.unixPath {
            let fd = csys_listen_unix(path, Int32(config.backlog), &err, 256)
            guard fd >= 0 else { throw StartupFailure("cannot listen on unix socket \(path): \(text(err))") }
            return Listener(fd: fd, isUnix: true, host: path, port: 0, unixPath: path)
        }
        let fd = csys_listen_tcp(config.host, Int32(config.port), Int32(config.backlog), &err, 256)
        guard fd >= 0 else {
            throw StartupFailure("cannot listen on \(config.host):\(config.port): \(text(err).replacingFirst("cannot listen: ", with: ""))")
        }
        return Listener(fd: fd, isUnix: false, host: config.host, port: Int(csys_local_port(fd)), unixPath: nil)
    }

    /// A worker's view of the socket its supervisor bound.
    public static func inherited(_ config: Config) -> Listener {
        let fd = config.inheritedListener
        if let path = config.unixPath {
            return Listener(fd: fd, isUnix: true, host: path, port: 0, unixPath: path)
        }
        return Listener(fd: fd, isUnix: false, host: config.host, port: Int(csys_local_port(fd)), unixPath: nil)
    }

    public var displayURL: String {
        if let unixPath { return "unix:\(unixPath)" }
        let h = host.contains(":") ? "[\(host)]" : host
        return "\(secure ? "https" : "http")://\(h):\(port)"
    }

    private static func text(_ buf: [CChar]) -> String {
        String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A problem that stops the server before it serves: one line, exit 2.
public struct StartupFailure: Error {
    public let message: String
    public let detail: String?
    public init(_ message: String, detail: String? = nil) {
        self.message = message
        self.detail = detail
    }
}

extension String {
    func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let r = range(of: target) else { return self }
        return String(self[..<r.lowerBound]) + replacement + String(self[r.upperBound...])
    }

    func range(of target: String) -> Range<String.Index>? {
        guard !target.isEmpty else { return nil }
        var i = startIndex
        while i < endIndex {
            if self[i...].hasPrefix(target) {
                return i..<index(i, offsetBy: target.count)
            }
            i = index(after: i)
        }
        return nil
    }
}
