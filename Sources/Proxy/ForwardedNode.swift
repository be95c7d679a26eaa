/// Where a forwarded request came from, one hop of the chain: an RFC 7239
/// §6 node (`for=`) or an `X-Forwarded-For` element.
public enum ForwardedNode: Equatable {
    /// An IP address, with the port when the hop gave a numeric one.
    case address(IPAddress, port: UInt16?)
    /// `unknown` (RFC 7239 §6.2): the proxy did not know or would not say.
    case unknown
    /// An obfuscated identifier such as `_hidden` (RFC 7239 §6.3), as sent.
    case obfuscated(FieldSlice)
}

/// What one hop said about its node: present, absent (an element without
/// `for=`), or not valid (the walk stops there and the client is not changed).
enum HopNode {
    case node(ForwardedNode)
    case absent
    case malformed
}

extension ForwardedNode {
    /// An RFC 7239 §6 node:
    ///
    ///     node     = nodename [ ":" node-port ]
    ///     nodename = IPv4address / "[" IPv6address "]" / "unknown" / obfnode
    ///     obfnode  = "_" 1*( ALPHA / DIGIT / "." / "_" / "-")
    ///     node-port     = port / obfport
    ///     port          = 1*5DIGIT
    ///     obfport       = "_" 1*(ALPHA / DIGIT / "." / "_" / "-")
    ///
    /// ABNF literals are case-insensitive (RFC 5234 §2.3), so `Unknown` is
    /// `unknown`. An IPv6 address without brackets is not a node. A port
    /// above 65535 makes the node invalid; an obfuscated port is valid and
    /// gives no port.
    static func parseRFC7239(_ text: UnsafeRawBufferPointer) -> ForwardedNode? {
        let n = text.count
        guard n > 0 else { return nil }
        var nameEnd = 0
        var address: IPAddress? = nil
        if text[0] == 0x5B {
            // "[" IPv6address "]"
            guard let close = text.firstIndex(of: 0x5D),
                  let v6 = IPAddress.parseIPv6(text.slice(1, close)) else { return nil }
            address = v6
            nameEnd = close + 1
        } else {
            nameEnd = text.firstIndex(of: 0x3A) ?? n
        }
        var port: UInt16? = nil
        if nameEnd < n {
            guard text[nameEnd] == 0x3A else { return nil }
            let portText = text.slice(nameEnd + 1, n)
            if let p = ByteText.port(portText) {
                port = p
            } else if !isObfuscated(portText) {
                return nil
            }
        }
        if let address { return .address(address, port: port) }
        let name = text.slice(0, nameEnd)
        if name.equalsIgnoringCase("unknown") { return .unknown }
        if isObfuscated(name) { return .obfuscated(FieldSlice(name)) }
        guard let v4 = IPAddress.parseIPv4(name) else { return nil }
        return .address(v4, port: port)
    }

    /// An `X-Forwarded-For` element (no standard; what proxies send):
    /// an IPv4 or IPv6 address, optionally with a port as `a.b.c.d:port`
    /// or `[v6]:port` (or a bare `[v6]`), or `unknown` (Squid). Obfuscated
    /// identifiers belong to RFC 7239 only and are not valid here.
    static func parseXForwardedFor(_ text: UnsafeRawBufferPointer) -> ForwardedNode? {
        let n = text.count
        guard n > 0 else { return nil }
        if text[0] == 0x5B {
            guard let close = text.firstIndex(of: 0x5D),
                  let v6 = IPAddress.parseIPv6(text.slice(1, close)) else { return nil }
            if close + 1 == n { return .address(v6, port: nil) }
            guard text[close + 1] == 0x3A, let port = ByteText.port(text.slice(close + 2, n)) else { return nil }
            return .address(v6, port: port)
        }
        if text.equalsIgnoringCase("unknown") { return .unknown }
        if let colon = text.firstIndex(of: 0x3A), text.lastIndex(of: 0x3A) == colon {
            // One colon: IPv4 with a port (an IPv6 address has at least two).
            guard let v4 = IPAddress.parseIPv4(text.slice(0, colon)),
                  let port = ByteText.port(text.slice(colon + 1, n)) else { return nil }
            return .address(v4, port: port)
        }
        guard let address = IPAddress.parse(text) else { return nil }
        return .address(address, port: nil)
    }

    /// `"_" 1*( ALPHA / DIGIT / "." / "_" / "-" )`.
    static func isObfuscated(_ text: UnsafeRawBufferPointer) -> Bool {
        guard text.count >= 2, text[0] == 0x5F else { return false }
        for b in text.dropFirst() where !(ByteText.isAlpha(b) || ByteText.isDigit(b) || b == 0x2E || b == 0x5F || b == 0x2D) {
            return false
        }
        return true
    }
}
