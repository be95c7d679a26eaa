/// Validation of `uri-host [ ":" port ]`, the value of Host (RFC 9110 §7.2)
/// and the authority of absolute-form and authority-form targets
/// (RFC 9112 §3.2.2, §3.2.3).
///
///     uri-host    = IP-literal / IPv4address / reg-name       (RFC 3986 §3.2.2)
///     IP-literal  = "[" IPv6address "]"     ; IPvFuture is refused
///     reg-name    = *( unreserved / pct-encoded / sub-delims )
///     port        = *DIGIT                  ; we also refuse values > 65535
///
/// IPv4address needs no branch of its own: its characters are all reg-name
/// characters. userinfo ("user@host") is refused because "@" is not a
/// reg-name character; RFC 9110 §4.2.4 asks recipients to treat it as an
/// error. An IPv6 literal is checked for its alphabet and shape (hex digits,
/// ':' and '.', at least two colons), not for every RFC 4291 rule.
enum Authority {
    static func isValid(_ b: Bytes, _ start: Int, _ end: Int, requireHost: Bool, requirePort: Bool) -> Bool {
        var i = start
        if i < end && b[i] == Byte.lbracket {
            i += 1
            var colons = 0
            while i < end && b[i] != Byte.rbracket {
                let c = b[i]
                if c == Byte.colon {
                    colons += 1
                } else if c != Byte.dot && ByteClass.hexValue(c) == nil {
                    return false
                }
                i += 1
            }
            if i == end || colons < 2 || i - start > 46 { return false }
            i += 1  // "]"
            if i < end && b[i] != Byte.colon { return false }
        } else {
            // Runs of reg-name bytes by table, a pct-encoded triplet between
            // runs; whatever else stops the host must be the port's ":".
            while true {
                while i < end && ByteClassTable.has(b[i], ByteClassTable.regName) { i += 1 }
                guard i < end && b[i] == Byte.percent else { break }
                // pct-encoded = "%" HEXDIG HEXDIG
                guard i + 2 < end, ByteClass.hexValue(b[i + 1]) != nil,
                      ByteClass.hexValue(b[i + 2]) != nil else { return false }
                i += 3
            }
            if i < end && b[i] != Byte.colon { return false }
            // RFC 9110 §4.2.1: an "http" URI with an empty host is invalid.
            if requireHost && i == start { return false }
        }
        if i == end { return !requirePort }
        i += 1  // ":"
        let portStart = i
        var port = 0
        while i < end {
            guard ByteClass.isDigit(b[i]), i - portStart < 5 else { return false }
            port = port * 10 + Int(b[i] &- 0x30)
            i += 1
        }
        if port > 65535 { return false }
        return !(requirePort && portStart == end)
    }
}
