// Byte-level syntax of request fields (RFC 9113 §8.2.1, §8.3.1; RFC 9114
// §4.2, §4.3.1; RFC 9110 §5.1, §5.5, §4.2; RFC 3986 §3.1, §3.2.2).
//
// HTTP/2 and HTTP/3 carry names and values as raw octets, so what HTTP/1 guarantees by
// its framing must be checked here: a CR, LF or NUL in a value, or a colon
// or space in a name, could otherwise reach an HTTP/1 backend or the
// application and split a message (request smuggling). We check a little
// more than §8.2.1 asks: names must be lower-case tokens (RFC 9110 §5.1
// "field-name = token"), values must be field-content (no CTL but HTAB).
// Classes are 128-bit masks so a test is a shift and an AND;
// `FieldSyntaxTests` checks each mask against its ABNF.

// Everything is @inlinable: these run per field on the request path of
// HTTP2 and HTTP3, across the module boundary.
public enum FieldSyntax {
    // tchar without "A"-"Z": "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" /
    // "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / lower-case ALPHA.
    public static let lowerTokenLow: UInt64 = 0x03ff_6cfa_0000_0000
    public static let lowerTokenHigh: UInt64 = 0x57ff_ffff_c000_0000
    // tchar (RFC 9110 §5.6.2), for methods and :protocol.
    public static let tokenLow: UInt64 = 0x03ff_6cfa_0000_0000
    public static let tokenHigh: UInt64 = 0x57ff_ffff_c7ff_fffe
    // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )  (RFC 3986 §3.1)
    public static let schemeLow: UInt64 = 0x03ff_6800_0000_0000
    public static let schemeHigh: UInt64 = 0x07ff_fffe_07ff_fffe
    // reg-name without pct-encoded: unreserved / sub-delims (RFC 3986 §3.2.2)
    public static let regNameLow: UInt64 = 0x2bff_7fd2_0000_0000
    public static let regNameHigh: UInt64 = 0x47ff_fffe_87ff_fffe

    @inlinable @inline(__always)
    public static func inMask(_ b: UInt8, _ low: UInt64, _ high: UInt64) -> Bool {
        if b < 64 { return (low &>> UInt64(b)) & 1 != 0 }
        if b < 128 { return (high &>> UInt64(b &- 64)) & 1 != 0 }
        return false
    }

    @inlinable
    public static func all(_ b: UnsafeRawBufferPointer, _ low: UInt64, _ high: UInt64) -> Bool {
        for c in b where !inMask(c, low, high) { return false }
        return true
    }

    /// A regular field name: a non-empty lower-case token.
    @inlinable
    public static func isFieldName(_ b: UnsafeRawBufferPointer) -> Bool {
        !b.isEmpty && all(b, lowerTokenLow, lowerTokenHigh)
    }

    /// §8.2.1: no NUL, CR or LF, no leading or trailing SP/HTAB; we refuse
    /// the other controls (but HTAB) and DEL too (RFC 9110 §5.5).
    @inlinable
    public static func isFieldValue(_ b: UnsafeRawBufferPointer) -> Bool {
        guard !b.isEmpty else { return true }
        let first = b[0]
        if first == 0x20 || first == 0x09 || b[b.count - 1] == 0x20 || b[b.count - 1] == 0x09 { return false }
        for c in b where (c < 0x20 && c != 0x09) || c == 0x7f { return false }
        return true
    }

    /// `b` without the SP and HTAB at either end: RFC 9110 §5.5's
    /// field-value neither starts nor ends with whitespace, which HTTP/1.1
    /// reads as OWS around it (RFC 9112 §5.1) and HTTP/2 and HTTP/3 make a
    /// malformed message (RFC 9113 §8.2.1, RFC 9114 §4.1.2). Applications
    /// send such values anyway (Django's WSGI `Set-Cookie: " name=value"`).
    @inlinable
    public static func trimmingWhitespace(_ b: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var start = b.startIndex, end = b.endIndex
        while start < end, b[start] == 0x20 || b[start] == 0x09 { start += 1 }
        while end > start, b[end - 1] == 0x20 || b[end - 1] == 0x09 { end -= 1 }
        return UnsafeRawBufferPointer(rebasing: b[start..<end])
    }

    @inlinable
    public static func isToken(_ b: UnsafeRawBufferPointer) -> Bool { !b.isEmpty && all(b, tokenLow, tokenHigh) }

    @inlinable
    public static func isScheme(_ b: UnsafeRawBufferPointer) -> Bool {
        guard !b.isEmpty, (b[0] | 0x20) &- 0x61 < 26 else { return false }
        return all(b, schemeLow, schemeHigh)
    }

    /// `:path` of a non-CONNECT request: origin-form ("/" and VCHARs), or
    /// "*" when `asterisk` (OPTIONS, §8.3.1).
    @inlinable
    public static func isPath(_ b: UnsafeRawBufferPointer, asterisk: Bool) -> Bool {
        guard !b.isEmpty else { return false }
        let first = b[0]
        if first == 0x2a { return b.count == 1 && asterisk }
        guard first == 0x2f else { return false }
        for c in b where c <= 0x20 || c >= 0x7f { return false }
        return true
    }

    /// `uri-host [ ":" port ]` (RFC 9110 §4.2, §7.2) with a non-empty host,
    /// no userinfo (§8.3.1: ":authority MUST NOT include the deprecated
    /// userinfo subcomponent"), a port of at most 65535, required when
    /// `requirePort` (CONNECT, RFC 9110 §9.3.6).
    @inlinable
    public static func isAuthority(_ b: UnsafeRawBufferPointer, requirePort: Bool) -> Bool {
        let end = b.count
        var i = 0
        if i < end && b[i] == 0x5b {  // "[" IPv6address "]"
            i += 1
            var colons = 0
            while i < end && b[i] != 0x5d {
                let c = b[i]
                if c == 0x3a { colons += 1 } else if c != 0x2e && hexValue(c) == nil { return false }
                i += 1
            }
            if i == end || colons < 2 || i > 46 { return false }
            i += 1
            if i < end && b[i] != 0x3a { return false }
        } else {
            while i < end && b[i] != 0x3a {
                let c = b[i]
                if c == 0x25 {
                    guard i + 2 < end, hexValue(b[i + 1]) != nil, hexValue(b[i + 2]) != nil else { return false }
                    i += 3
                    continue
                }
                if !inMask(c, regNameLow, regNameHigh) { return false }
                i += 1
            }
            if i == 0 { return false }
        }
        if i == end { return !requirePort }
        i += 1  // ":"
        let portStart = i
        var port = 0
        while i < end {
            let d = b[i] &- 0x30
            guard d < 10, i - portStart < 5 else { return false }
            port = port * 10 + Int(d)
            i += 1
        }
        return port <= 65535 && !(requirePort && portStart == end)
    }

    @inlinable
    public static func hexValue(_ b: UInt8) -> UInt8? {
        if b &- 0x30 < 10 { return b &- 0x30 }
        let lower = b | 0x20
        return lower &- 0x61 < 6 ? lower &- 0x61 &+ 10 : nil
    }

    /// content-length = 1*DIGIT (RFC 9110 §8.6), at most 18 digits.
    @inlinable
    public static func contentLength(_ b: UnsafeRawBufferPointer) -> Int64? {
        guard !b.isEmpty, b.count <= 18 else { return nil }
        var v: Int64 = 0
        for c in b {
            let d = c &- 0x30
            guard d < 10 else { return nil }
            v = v * 10 + Int64(d)  // ≤ 18 digits: below 2^63
        }
        return v
    }

    /// `b` equals the ASCII `s` exactly.
    @inlinable @inline(__always)
    public static func equals(_ b: UnsafeRawBufferPointer, _ s: StaticString) -> Bool {
        guard b.count == s.utf8CodeUnitCount else { return false }
        let p = s.utf8Start
        for i in 0 ..< b.count where b[i] != p[i] { return false }
        return true
    }

    /// `a` equals `b` ignoring ASCII case.
    @inlinable
    public static func equalsIgnoringCase(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0 ..< a.count where lower(a[i]) != lower(b[i]) { return false }
        return true
    }

    /// `b` equals the lower-case ASCII `s` ignoring case.
    @inlinable
    public static func equalsIgnoringCase(_ b: UnsafeRawBufferPointer, _ s: StaticString) -> Bool {
        guard b.count == s.utf8CodeUnitCount else { return false }
        let p = s.utf8Start
        for i in 0 ..< b.count where lower(b[i]) != p[i] { return false }
        return true
    }

    @inlinable @inline(__always)
    public static func lower(_ c: UInt8) -> UInt8 { c &- 0x41 < 26 ? c | 0x20 : c }
}
