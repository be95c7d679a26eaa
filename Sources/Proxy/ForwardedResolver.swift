/// Decides who the client of a request is, behind trusted proxies
/// (`--forwarded-allow-ips`), from `Forwarded` (RFC 7239) or
/// `X-Forwarded-For`/`-Proto`/`-Host`/`-Port`. Sans-I/O: bytes in, a small
/// value out; no allocation, no `String`.
///
///     let resolver = ForwardedResolver(trusted: try TrustedPeers(parsing: list))   // at start-up
///     ...
///     var lines = ForwardedFieldLines()                  // per request
///     for each header: lines.append(name: name, value: value)
///     let r = resolver.resolve(peer: .ip(peerAddress), fields: lines)
///     r.client ?? socket peer, r.scheme ?? socket scheme, r.host ?? Host, r.port ?? ...
///
/// Theory of operation:
///
/// 1. Only the immediate peer's word counts: an untrusted peer's fields
///    change nothing (`unchanged`) and are not even parsed.
/// 2. `Forwarded` wins: when any `Forwarded` line is present, the
///    `X-Forwarded-*` fields are ignored whole (a proxy that writes
///    `Forwarded` may pass a client's forged `X-Forwarded-For` through).
/// 3. The chain (the `Forwarded` elements, or the `X-Forwarded-For`
///    elements, across all lines in order) is walked from the right: each
///    hop whose node is trusted was added by, or is, a proxy we trust, so it
///    is skipped; the first one that is not trusted is the client. If every
///    hop is trusted, the leftmost is the client. `unknown` and obfuscated
///    nodes are trusted only by `*`. A hop without a valid node (a
///    `Forwarded` element without `for`, or with a malformed one, or a
///    malformed `X-Forwarded-For` element) is never trusted: the walk stops
///    there and the client is left as the socket says — a hop we cannot
///    read may hide anything to its left.
///    Walking from the right and stopping at the first untrusted hop is the
///    same as taking the last untrusted hop left to right, which is how it
///    is done here: one pass, no storage.
/// 4. More than `maxHops` hops: the field is ignored as a whole.
/// 5. `Forwarded`: `proto` and `host` come from the chosen element (what
///    the client-facing proxy received). `X-Forwarded-Proto`/`-Host`/`-Port`:
///    a single element is used as is; a list with exactly one element per
///    `X-Forwarded-For` hop is read at the chosen hop's position; any other
///    list is ambiguous and ignored.
/// 6. Bad values are ignored field by field (a bad port drops the port, a
///    bad host drops the host...); nothing here fails a request.
public struct ForwardedResolver: Sendable {
    /// The longest chain honoured; a longer one is ignored (a client can
    /// make a chain as long as its header allows; no real path has 32 proxies).
    public static let maxHops = 32

    public let trusted: TrustedPeers

    public init(trusted: TrustedPeers) {
        self.trusted = trusted
    }

    public func resolve(peer: PeerAddress, fields: ForwardedFieldLines) -> ForwardedResolution {
        guard !fields.isEmpty, trusted.contains(peer) else { return .unchanged }
        if !fields.forwarded.isEmpty { return resolveForwarded(fields.forwarded) }
        return resolveXForwarded(fields)
    }

    private func isTrusted(_ node: HopNode) -> Bool {
        switch node {
        case .node(.address(let address, _)): return trusted.contains(address)
        case .node(.unknown), .node(.obfuscated): return trusted.trustsEveryone
        case .absent, .malformed: return false
        }
    }

    private func resolveForwarded(_ lines: LineList<32>) -> ForwardedResolution {
        guard !lines.overflowed else { return .unchanged }
        var count = 0
        var chosen: ForwardedElements.Element? = nil
        for l in 0..<lines.count {
            var elements = ForwardedElements(lines[l])
            while let element = elements.next() {
                count += 1
                if count > Self.maxHops { return .unchanged }
                if count == 1 || !isTrusted(element.node) { chosen = element }
            }
        }
        guard let chosen else { return .unchanged }
        var result = ForwardedResolution(source: .forwarded)
        if case .node(let node) = chosen.node { result.client = node }
        result.scheme = chosen.scheme
        result.host = chosen.host.map { FieldSlice($0) }
        result.port = chosen.hostPort
        return result.isUnchanged ? .unchanged : result
    }

    private func resolveXForwarded(_ fields: ForwardedFieldLines) -> ForwardedResolution {
        var result = ForwardedResolution(source: .xForwarded)
        // The chain: its length and the chosen hop's index, when usable.
        var hops: Int? = nil
        var chosenIndex = 0
        let chain = fields.xForwardedFor
        if !chain.isEmpty && !chain.overflowed {
            var count = 0
            var chosen: HopNode? = nil
            walk: for l in 0..<chain.count {
                var elements = ListElements(chain[l])
                while let text = elements.next() {
                    let node = ForwardedNode.parseXForwardedFor(text).map { HopNode.node($0) } ?? .malformed
                    count += 1
                    if count > Self.maxHops {
                        chosen = nil
                        break walk
                    }
                    if count == 1 || !isTrusted(node) {
                        chosen = node
                        chosenIndex = count - 1
                    }
                }
            }
            if let chosen {
                hops = count
                if case .node(let node) = chosen { result.client = node }
            }
        }
        if let text = Self.element(of: fields.xForwardedProto, hops: hops, at: chosenIndex) {
            result.scheme = ForwardedScheme.parse(text)
        }
        var hostPort: UInt16? = nil
        if let text = Self.element(of: fields.xForwardedHost, hops: hops, at: chosenIndex) {
            let check = ForwardedHost.validate(text)
            if check.valid {
                result.host = FieldSlice(text)
                hostPort = check.port
            }
        }
        if let text = Self.element(of: fields.xForwardedPort, hops: hops, at: chosenIndex),
           let port = ByteText.port(text), port != 0 {
            result.port = port
        } else {
            result.port = hostPort
        }
        return result.isUnchanged ? .unchanged : result
    }

    /// The element of an `X-Forwarded-Proto`/`-Host`/`-Port` list that
    /// speaks for the chosen hop: the only one, or the one at the hop's
    /// index when the list has one element per hop (rule 5).
    private static func element(of lines: LineList<8>, hops: Int?, at index: Int) -> UnsafeRawBufferPointer? {
        guard !lines.isEmpty, !lines.overflowed else { return nil }
        var count = 0
        var only: UnsafeRawBufferPointer? = nil
        var atIndex: UnsafeRawBufferPointer? = nil
        for l in 0..<lines.count {
            var elements = ListElements(lines[l])
            while let text = elements.next() {
                if count == 0 { only = text }
                if count == index { atIndex = text }
                count += 1
                if count > maxHops { return nil }
            }
        }
        if count == 1 { return only }
        if let hops, count == hops { return atIndex }
        return nil
    }
}
