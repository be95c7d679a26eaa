// QUIC variable-length integers (RFC 9000 §16), used by HTTP/3 frames, stream
// types and settings (RFC 9114 §1.2) as well as by QUIC itself.
//
// The two most significant bits of the first byte give the length (1, 2, 4
// or 8 bytes); the remaining 6, 14, 30 or 62 bits are the value, network byte
// order. §16: "values do not need to be encoded on the minimum number of
// bytes", so a decoder accepts any length; encoders here always use the
// shortest. Decoding is commit-only-on-success (STYLE §2): nil means "need
// more bytes", and the caller advances by the returned length.

public enum QUICVarInt {
    /// The largest encodable value, 2^62 - 1.
    public static let maxValue: UInt64 = (1 << 62) - 1

    /// Decodes the integer at `bytes[start]`, or nil if it runs past the end.
    @inlinable
    public static func decode(_ bytes: UnsafeRawBufferPointer, at start: Int) -> (value: UInt64, length: Int)? {
        guard start < bytes.count else { return nil }
        let first = bytes[start]
        let length = 1 << Int(first >> 6)
        guard length <= bytes.count - start else { return nil }
        var value = UInt64(first & 0x3f)
        var i = 1
        while i < length {
            value = value << 8 | UInt64(bytes[start + i])
            i += 1
        }
        return (value, length)
    }

    /// The length in bytes the first byte announces.
    @inlinable
    public static func length(firstByte: UInt8) -> Int { 1 << Int(firstByte >> 6) }

    /// The shortest encoding's length; `value` ≤ `maxValue`.
    @inlinable
    public static func encodedLength(_ value: UInt64) -> Int {
        if value < 1 << 6 { return 1 }
        if value < 1 << 14 { return 2 }
        if value < 1 << 30 { return 4 }
        return 8
    }

    /// Appends the shortest encoding of `value` (≤ `maxValue`).
    @inlinable
    public static func append(_ value: UInt64, to out: inout [UInt8]) {
        precondition(value <= maxValue, "QUIC variable-length integer above 2^62-1")
        let n = encodedLength(value)
        let tag: UInt64 = n == 1 ? 0 : n == 2 ? 1 : n == 4 ? 2 : 3
        var shift = (n - 1) * 8
        out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)) | UInt8(tag << 6))
        while shift > 0 {
            shift -= 8
            out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }
}
