/// Appending log text to a reusable byte buffer: the access log writes each
/// line into one `[UInt8]` it keeps (its capacity stays), so a request's
/// line costs no `String` and no allocation once the buffer has grown.
public extension Array where Element == UInt8 {
    @inlinable mutating func append(_ s: StaticString) {
        append(contentsOf: UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// A decimal integer.
    mutating func appendDecimal(_ v: Int64) {
        var n = v.magnitude
        if v < 0 { append(UInt8(ascii: "-")) }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: 20 digits fit
        Swift.withUnsafeMutableBytes(of: &digits) { d in
            var i = d.count
            repeat {
                i -= 1
                d[i] = UInt8(truncatingIfNeeded: n % 10) + 0x30
                n /= 10
            } while n > 0
            append(contentsOf: UnsafeRawBufferPointer(rebasing: d[i...]))
        }
    }

    /// `v` (not negative) zero-padded to `width` digits (a fraction's digits).
    mutating func appendDecimal(_ v: Int64, width: Int) {
        var digits = 1
        var rest = v / 10
        while rest > 0 { digits += 1; rest /= 10 }
        for _ in digits..<Swift.max(width, digits) { append(0x30) }
        appendDecimal(v)
    }

    /// Text for a line of the text log: `"` and `\` are backslashed,
    /// control bytes become `\xHH` (a field value can hold neither CR nor
    /// LF, but a forged line must never be possible), other bytes are
    /// copied.
    mutating func appendEscapedText(_ b: UnsafeRawBufferPointer) {
        for c in b {
            switch c {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                append(UInt8(ascii: "\\"))
                append(c)
            case 0..<0x20, 0x7F:
                append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "x"), LogHex.digit(c >> 4), LogHex.digit(c & 15)])
            default:
                append(c)
            }
        }
    }

    /// A JSON string with its quotes (RFC 8259 §7): `"` and `\` escaped,
    /// control characters as `\u00XX`; bytes that are not UTF-8 become
    /// U+FFFD, so the line stays valid JSON whatever the request held.
    mutating func appendJSONString(_ b: UnsafeRawBufferPointer) {
        append(UInt8(ascii: "\""))
        if b.contains(where: { $0 >= 0x80 }) {
            // Rare: decode to repair invalid UTF-8, then escape.
            var text = String(decoding: b, as: UTF8.self)
            text.withUTF8 { appendJSONEscaped(UnsafeRawBufferPointer($0)) }
        } else {
            appendJSONEscaped(b)
        }
        append(UInt8(ascii: "\""))
    }

    private mutating func appendJSONEscaped(_ b: UnsafeRawBufferPointer) {
        for c in b {
            switch c {
            case UInt8(ascii: "\""): append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): append(contentsOf: [0x5C, 0x5C])
            case 0x0A: append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                append("\\u00")
                append(LogHex.digit(c >> 4))
                append(LogHex.digit(c & 15))
            default: append(c)
            }
        }
    }

    mutating func appendJSONString(_ s: String) {
        var s = s
        s.withUTF8 { appendJSONString(UnsafeRawBufferPointer($0)) }
    }
}

public enum LogHex {
    @inlinable public static func digit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x61 + v - 10 }
}
