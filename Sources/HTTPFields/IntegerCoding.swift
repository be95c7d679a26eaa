// HPACK prefix integers (RFC 7541 §5.1), also QPACK's (RFC 9204 §4.1.1).
//
// An integer starts in the low N bits of a byte whose high bits belong to the
// field representation. If it fits in N bits (value < 2^N - 1) that is all;
// otherwise the prefix is all ones and the rest follows in 7-bit groups, least
// significant first, the high bit of each byte meaning "more follows":
//
//     if I < 2^N - 1, encode I on N bits
//     else
//         encode (2^N - 1) on N bits
//         I = I - (2^N - 1)
//         while I >= 128: encode (I % 128 + 128) on 8 bits; I = I / 128
//         encode I on 8 bits
//
// Decoding is commit-only-on-success (STYLE §2): it returns the value and the
// number of bytes read, and the caller advances. §5.1 allows limits: we refuse
// anything above `maxPrefixedInteger`, which also bounds the continuation bytes
// so a run of 0x80 bytes cannot spin (leading zero groups are accepted up to
// the same byte count; longer runs are an overflow).

/// The largest integer the decoder accepts: every HPACK or QPACK integer is
/// an index, a length, a table size or an insert count, and none of ours
/// exceeds 32 bits. Larger values are `FieldCodingError.integerOverflow`
/// (HPACK: COMPRESSION_ERROR; QPACK: the error of the stream it came on).
public let maxPrefixedInteger = Int(UInt32.max)

public enum IntegerCoding {
    /// Decodes an integer with an `prefixBits`-bit prefix (1...8) starting at
    /// `bytes[at]`; the high bits of that first byte are ignored.
    /// - Returns: the value and how many bytes it took.
    @inlinable
    public static func decode(_ bytes: UnsafeRawBufferPointer, at start: Int, prefixBits: Int) throws(FieldCodingError) -> (value: Int, length: Int) {
        guard start < bytes.count else { throw .integerTruncated }
        let mask = (1 << prefixBits) - 1
        var value = Int(bytes[start]) & mask
        if value < mask { return (value, 1) }
        var shift = 0
        var i = start + 1
        while true {
            guard i < bytes.count else { throw .integerTruncated }
            let b = Int(bytes[i])
            i += 1
            // 5 groups of 7 bits reach 2^35 > maxPrefixedInteger, so a sixth
            // byte can only carry an overflow; `shift` ≤ 28 keeps the sum
            // below 2^36 — no wrap in Int.
            guard shift <= 28 else { throw .integerOverflow }
            value += (b & 0x7f) << shift
            guard value <= maxPrefixedInteger else { throw .integerOverflow }
            if b & 0x80 == 0 { return (value, i - start) }
            shift += 7
        }
    }

    /// The number of bytes `encode` writes for `value` with this prefix.
    @inlinable
    public static func encodedLength(_ value: Int, prefixBits: Int) -> Int {
        let mask = (1 << prefixBits) - 1
        if value < mask { return 1 }
        var rest = value - mask
        var n = 2
        while rest >= 128 { rest >>= 7; n += 1 }
        return n
    }

    /// Writes `value` with a `prefixBits`-bit prefix at `out`, OR-ing
    /// `firstByte` (the representation's pattern bits) into the first byte.
    /// The caller has reserved `encodedLength(value, prefixBits:)` bytes.
    /// - Returns: bytes written.
    @inlinable
    @discardableResult
    public static func encode(_ value: Int, prefixBits: Int, firstByte: UInt8, into out: UnsafeMutableRawPointer) -> Int {
        precondition(value >= 0)
        let mask = (1 << prefixBits) - 1
        if value < mask {
            out.storeBytes(of: firstByte | UInt8(value), as: UInt8.self)
            return 1
        }
        out.storeBytes(of: firstByte | UInt8(mask), as: UInt8.self)
        var rest = value - mask
        var n = 1
        while rest >= 128 {
            out.storeBytes(of: UInt8(truncatingIfNeeded: rest & 0x7f | 0x80), toByteOffset: n, as: UInt8.self)
            rest >>= 7
            n += 1
        }
        out.storeBytes(of: UInt8(rest), toByteOffset: n, as: UInt8.self)
        return n + 1
    }

    /// Appends `value` to `out` (convenience for growable encoder output).
    @inlinable
    public static func append(_ value: Int, prefixBits: Int, firstByte: UInt8, to out: inout [UInt8]) {
        let mask = (1 << prefixBits) - 1
        if value < mask {
            out.append(firstByte | UInt8(value))
            return
        }
        out.append(firstByte | UInt8(mask))
        var rest = value - mask
        while rest >= 128 {
            out.append(UInt8(truncatingIfNeeded: rest & 0x7f | 0x80))
            rest >>= 7
        }
        out.append(UInt8(rest))
    }
}
