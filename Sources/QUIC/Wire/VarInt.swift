// Variable-length integers (RFC 9000 §16).
//
// The two most significant bits of the first byte give the length — 1, 2,
// 4 or 8 bytes — and the remaining 6, 14, 30 or 62 bits hold the value,
// big-endian. Any length may encode any value it can hold; only frame types
// must be minimal (§12.4), so decoding accepts every length and reports it,
// and encoding picks the shortest unless told otherwise (a wider encoding
// lets a length be back-filled without moving bytes, STYLE §2).

/// QUIC variable-length integer coding (RFC 9000 §16).
public enum VarInt {
    /// 2^62 - 1, the largest encodable value.
    public static let max: UInt64 = (1 << 62) - 1

    /// The shortest encoding length of `value` (which must be ≤ `max`).
    @inlinable
    public static func encodedLength(_ value: UInt64) -> Int {
        if value < 1 << 6 { return 1 }
        if value < 1 << 14 { return 2 }
        if value < 1 << 30 { return 4 }
        precondition(value <= max, "value does not fit a QUIC varint")
        return 8
    }

    /// The total length of the integer whose first byte is `first`.
    @inlinable
    public static func encodedLength(firstByte first: UInt8) -> Int { 1 << Int(first >> 6) }

    /// Decodes the integer at `bytes[at...]`.
    /// - Returns: the value and its length, or nil when `bytes` ends inside
    ///   it (need more data; nothing consumed).
    @inlinable
    public static func decode(_ bytes: UnsafeRawBufferPointer, at: Int) -> (value: UInt64, length: Int)? {
        guard at < bytes.count else { return nil }
        let first = bytes[at]
        let n = encodedLength(firstByte: first)
        guard bytes.count - at >= n else { return nil }
        var v = UInt64(first & 0x3f)
        var i = 1
        while i < n {
            v = v << 8 | UInt64(bytes[at + i])
            i += 1
        }
        return (v, n)
    }

    /// Writes `value` at `out` in `length` bytes (default: the shortest),
    /// returning the length. `length` must be 1, 2, 4 or 8 and hold the value.
    @inlinable
    @discardableResult
    public static func encode(_ value: UInt64, to out: UnsafeMutableRawPointer, length: Int? = nil) -> Int {
        let n = length ?? encodedLength(value)
        precondition(n == 1 || n == 2 || n == 4 || n == 8, "varint length must be 1, 2, 4 or 8")
        precondition(n == 8 ? value <= max : value < 1 << (8 * UInt64(n) - 2), "value does not fit the varint length")
        let prefix: UInt8 = n == 1 ? 0x00 : n == 2 ? 0x40 : n == 4 ? 0x80 : 0xc0
        var i = n - 1
        var v = value
        while i >= 0 {
            out.storeBytes(of: UInt8(truncatingIfNeeded: v), toByteOffset: i, as: UInt8.self)
            v >>= 8
            i -= 1
        }
        out.storeBytes(of: out.load(as: UInt8.self) | prefix, as: UInt8.self)
        return n
    }

    /// Whether `length` is the shortest encoding of `value` (§12.4 requires
    /// it for frame types).
    @inlinable
    public static func isMinimal(_ value: UInt64, length: Int) -> Bool { encodedLength(value) == length }
}
