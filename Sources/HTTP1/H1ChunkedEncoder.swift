/// Framing for chunked response bodies (RFC 9112 §7.1): the size line before
/// each chunk, the CRLF after it, and the last chunk with an empty trailer
/// section. Size first, write once (STYLE §2): `sizeLineLength` says how
/// many bytes to reserve, the writers fill the caller's memory and return
/// the count written. Sizes are lowercase hex without leading zeros.
///
///     let n = H1ChunkedEncoder.writeSizeLine(payload.count, into: p)
///     copy payload to p + n
///     H1ChunkedEncoder.writeCRLF(into: p + n + payload.count)
///     ...
///     H1ChunkedEncoder.writeLastChunk(into: q)
public enum H1ChunkedEncoder {
    /// The longest size line: 16 hex digits and CRLF.
    public static let maxSizeLineLength = 18
    /// "0\r\n\r\n": the last chunk and an empty trailer section.
    public static let lastChunkLength = 5
    public static let crlfLength = 2

    /// Bytes `writeSizeLine` writes for a chunk of `n` payload bytes.
    public static func sizeLineLength(_ n: Int) -> Int {
        precondition(n > 0, "a chunk carries at least one byte; use writeLastChunk to end the body")
        return hexDigitCount(n) + 2
    }

    /// Writes the size line ("1a2\r\n") for a chunk of `n` > 0 payload bytes.
    @discardableResult
    public static func writeSizeLine(_ n: Int, into p: UnsafeMutableRawPointer) -> Int {
        let digits = hexDigitCount(n)
        precondition(n > 0, "a chunk carries at least one byte; use writeLastChunk to end the body")
        var value = UInt(n)
        var i = digits
        while i > 0 {
            i -= 1
            let d = UInt8(truncatingIfNeeded: value & 0xF)
            p.storeBytes(of: d < 10 ? 0x30 + d : 0x57 + d, toByteOffset: i, as: UInt8.self)
            value >>= 4
        }
        p.storeBytes(of: Byte.cr, toByteOffset: digits, as: UInt8.self)
        p.storeBytes(of: Byte.lf, toByteOffset: digits + 1, as: UInt8.self)
        return digits + 2
    }

    /// Writes the CRLF that closes a chunk's data.
    @discardableResult
    public static func writeCRLF(into p: UnsafeMutableRawPointer) -> Int {
        p.storeBytes(of: Byte.cr, toByteOffset: 0, as: UInt8.self)
        p.storeBytes(of: Byte.lf, toByteOffset: 1, as: UInt8.self)
        return 2
    }

    /// Writes "0\r\n\r\n": the last chunk and an empty trailer section.
    @discardableResult
    public static func writeLastChunk(into p: UnsafeMutableRawPointer) -> Int {
        let bytes: (UInt8, UInt8, UInt8, UInt8, UInt8) = (0x30, Byte.cr, Byte.lf, Byte.cr, Byte.lf)
        p.storeBytes(of: bytes.0, toByteOffset: 0, as: UInt8.self)
        p.storeBytes(of: bytes.1, toByteOffset: 1, as: UInt8.self)
        p.storeBytes(of: bytes.2, toByteOffset: 2, as: UInt8.self)
        p.storeBytes(of: bytes.3, toByteOffset: 3, as: UInt8.self)
        p.storeBytes(of: bytes.4, toByteOffset: 4, as: UInt8.self)
        return 5
    }

    private static func hexDigitCount(_ n: Int) -> Int {
        // (bits in use + 3) / 4, at least one digit.
        Swift.max(1, (Int.bitWidth - UInt(bitPattern: n).leadingZeroBitCount + 3) / 4)
    }
}
