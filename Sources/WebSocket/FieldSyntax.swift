/// The few pieces of HTTP field syntax the handshake fields need
/// (RFC 9110 §5.6): tokens, optional whitespace, and comma-separated lists.
///
/// Theory of operation. Values arrive as raw bytes (a field value cut from
/// the read buffer); nothing here allocates or builds a `String`. Positions
/// are plain `Int` offsets into the value; callers turn them into `ByteSpan`s
/// relative to that value.
@usableFromInline
enum FieldSyntax {
    /// RFC 9110 §5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+"
    /// / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
    @inlinable
    static func isTokenChar(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// RFC 9110 §5.6.3: OWS = *( SP / HTAB )
    @inlinable
    static func isOWS(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 }

    static func skipOWS(_ b: UnsafeRawBufferPointer, _ i: inout Int) {
        while i < b.count && isOWS(b[i]) { i += 1 }
    }

    /// Advances `i` over a token; false if no token starts at `i`.
    static func scanToken(_ b: UnsafeRawBufferPointer, _ i: inout Int) -> Bool {
        let start = i
        while i < b.count && isTokenChar(b[i]) { i += 1 }
        return i > start
    }

    /// `b[start..<end]` equals the lowercase ASCII `lower`, ignoring case.
    static func equalsIgnoringCase(_ b: UnsafeRawBufferPointer, _ start: Int, _ end: Int, _ lower: StaticString) -> Bool {
        lower.withUTF8Buffer { l in
            guard l.count == end - start else { return false }
            for k in 0..<l.count {
                var c = b[start + k]
                if c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z") { c |= 0x20 }
                if c != l[k] { return false }
            }
            return true
        }
    }

    /// `b` with leading and trailing OWS removed, as (start, end).
    static func trimmed(_ b: UnsafeRawBufferPointer) -> (start: Int, end: Int) {
        var start = 0, end = b.count
        while start < end && isOWS(b[start]) { start += 1 }
        while end > start && isOWS(b[end - 1]) { end -= 1 }
        return (start, end)
    }

    /// Whether the comma-separated list in `b` has an element equal to
    /// `lower` ignoring case. Elements are trimmed of OWS; empty elements
    /// are skipped (RFC 9110 §5.6.1: "a recipient MUST accept ... empty list
    /// elements"). Used for `Connection: upgrade` and `Upgrade: websocket`;
    /// an element such as `websocket/13` does not match.
    static func listContains(_ b: UnsafeRawBufferPointer, _ lower: StaticString) -> Bool {
        var i = 0
        while i < b.count {
            var end = i
            while end < b.count && b[end] != UInt8(ascii: ",") { end += 1 }
            var s = i, e = end
            while s < e && isOWS(b[s]) { s += 1 }
            while e > s && isOWS(b[e - 1]) { e -= 1 }
            if equalsIgnoringCase(b, s, e, lower) { return true }
            i = end + 1
        }
        return false
    }
}
