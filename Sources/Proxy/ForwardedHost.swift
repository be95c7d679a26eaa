/// Validation of a forwarded host: RFC 7239 §5.3 `host=` and
/// `X-Forwarded-Host`, both the value of a Host header (RFC 9110 §7.2):
///
///     Host        = uri-host [ ":" port ]
///     uri-host    = IP-literal / IPv4address / reg-name   (RFC 3986 §3.2.2)
///     IP-literal  = "[" IPv6address "]"                   ; IPvFuture refused
///     reg-name    = *( unreserved / pct-encoded / sub-delims )
///
/// Stricter than the ABNF where it is useless to an application: the host
/// must not be empty, and a port must be 1–5 digits, 1–65535 (an empty
/// port, or port 0, which no client can have connected to, is refused). A value that fails is ignored, never an error.
enum ForwardedHost {
    /// The host is valid; its port, when it has one. Nil: not a valid host.
    static func validate(_ text: UnsafeRawBufferPointer) -> (valid: Bool, port: UInt16?) {
        let n = text.count
        guard n > 0 else { return (false, nil) }
        var i = 0
        if text[0] == 0x5B {
            guard let close = text.firstIndex(of: 0x5D), IPAddress.parseIPv6(text.slice(1, close)) != nil else {
                return (false, nil)
            }
            i = close + 1
        } else {
            while i < n && text[i] != 0x3A {
                let b = text[i]
                if b == 0x25 {
                    // pct-encoded = "%" HEXDIG HEXDIG
                    guard i + 2 < n, IPAddress.hexValue(text[i + 1]) != nil,
                          IPAddress.hexValue(text[i + 2]) != nil else { return (false, nil) }
                    i += 3
                    continue
                }
                guard ByteText.isRegNameByte(b) else { return (false, nil) }
                i += 1
            }
            guard i > 0 else { return (false, nil) }
        }
        if i == n { return (true, nil) }
        guard text[i] == 0x3A, let port = ByteText.port(text.slice(i + 1, n)), port != 0 else { return (false, nil) }
        return (true, port)
    }
}
