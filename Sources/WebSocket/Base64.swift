/// Base64 (RFC 4648 §4, the standard alphabet with `=` padding), for the
/// opening handshake: `Sec-WebSocket-Key` is decoded to check it is 16 bytes
/// (RFC 6455 §4.1 item 7, §4.2.1 item 5) and `Sec-WebSocket-Accept` is encoded.
///
/// Theory of operation. Encoding is size-first (`encodedLength`) and writes
/// into the caller's buffer. Decoding is strict, as RFC 4648 §3.3 and §3.5
/// allow a decoder to be: the input length must be a multiple of four,
/// padding appears only at the end (at most two `=`), no whitespace or
/// characters outside the alphabet, and the unused low bits before the
/// padding must be zero (a "non-canonical" encoding is refused), so each byte
/// string has exactly one accepted encoding. Nothing is allocated.
public enum Base64 {
    /// The RFC 4648 §4 alphabet.
    private static let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    /// Bytes needed to encode `count` bytes, padding included.
    @inlinable
    public static func encodedLength(_ count: Int) -> Int { (count + 2) / 3 * 4 }

    /// Bytes a well-formed encoding of `count` characters decodes to, before
    /// padding is taken into account (an upper bound).
    @inlinable
    public static func maxDecodedLength(_ count: Int) -> Int { count / 4 * 3 }

    /// Encodes `input` at the start of `output` (which must hold
    /// `encodedLength(input.count)` bytes) and returns the bytes written.
    @discardableResult
    public static func encode(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int {
        let length = encodedLength(input.count)
        precondition(output.count >= length)
        alphabet.withUTF8Buffer { table in
            var i = 0, o = 0
            while i + 3 <= input.count {
                let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                output[o] = table[Int(v >> 18 & 63)]
                output[o + 1] = table[Int(v >> 12 & 63)]
                output[o + 2] = table[Int(v >> 6 & 63)]
                output[o + 3] = table[Int(v & 63)]
                i += 3
                o += 4
            }
            let rest = input.count - i
            if rest > 0 {
                let v = UInt32(input[i]) << 16 | (rest == 2 ? UInt32(input[i + 1]) << 8 : 0)
                output[o] = table[Int(v >> 18 & 63)]
                output[o + 1] = table[Int(v >> 12 & 63)]
                output[o + 2] = rest == 2 ? table[Int(v >> 6 & 63)] : UInt8(ascii: "=")
                output[o + 3] = UInt8(ascii: "=")
            }
        }
        return length
    }

    /// Decodes `input` strictly (see above) into `output`, which must hold
    /// `maxDecodedLength(input.count)` bytes. Returns the decoded length, or
    /// nil if `input` is not a canonical padded encoding.
    public static func decode(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? {
        let count = input.count
        guard count % 4 == 0 else { return nil }
        precondition(output.count >= maxDecodedLength(count))
        if count == 0 { return 0 }
        var padding = 0
        if input[count - 1] == UInt8(ascii: "=") { padding = 1 }
        if padding == 1 && input[count - 2] == UInt8(ascii: "=") { padding = 2 }
        var o = 0
        var i = 0
        while i < count {
            let last = i + 4 == count
            let significant = last ? 4 - padding : 4
            var v: UInt32 = 0
            for j in 0..<4 {
                let sextet: UInt32
                if j < significant {
                    guard let s = value(of: input[i + j]) else { return nil }
                    sextet = s
                } else {
                    sextet = 0
                }
                v = v << 6 | sextet
            }
            output[o] = UInt8(truncatingIfNeeded: v >> 16)
            o += 1
            if significant >= 3 {
                output[o] = UInt8(truncatingIfNeeded: v >> 8)
                o += 1
            } else if v & 0xFFFF != 0 {
                return nil  // RFC 4648 §3.5: non-zero pad bits
            }
            if significant == 4 {
                output[o] = UInt8(truncatingIfNeeded: v)
                o += 1
            } else if v & 0xFF != 0 {
                return nil  // RFC 4648 §3.5: non-zero pad bits
            }
            i += 4
        }
        return o
    }

    @inline(__always)
    private static func value(of c: UInt8) -> UInt32? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt32(c - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt32(c - UInt8(ascii: "a")) + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(c - UInt8(ascii: "0")) + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}
