/// The connection IDs this server issues (RFC 9000 §5.1), laid out so the
/// kernel can hand each datagram to the worker that owns its connection
/// (ReuseportSteering reads the same bytes; ARCHITECTURE.md, "QUIC across
/// workers"):
///
///     byte 0      0 0 0 r r r r r   config rotation 0 (QUIC-LB draft §3,
///                                   "first octet"), then 5 random bits
///     bytes 1-2   socket index, big-endian: the SO_REUSEPORT group index
///                 of the worker's UDP socket
///     bytes 3-7   random
///
/// Every ID of a connection (the first the server chooses, and each
/// NEW_CONNECTION_ID after) names the same socket, so a client that
/// switches IDs, or migrates, still reaches the same worker. The 37 random
/// bits make IDs unlinkable enough for one server (RFC 9000 §9.5 asks that
/// they not correlate across paths: all IDs of one worker share bytes 1-2,
/// as do those of any QUIC-LB server).
///
/// The randomness is the caller's (the connection-ID source draws it), so
/// this stays a pure layout.
public enum QUICConnectionIDLayout {
    /// Bytes in every ID the server issues.
    public static let length = 8
    /// Largest socket index bytes 1-2 can name.
    public static let maxSocketIndex = 0xFFFF
    /// The top three bits of byte 0 (QUIC-LB's config rotation): always 0
    /// in ours, so an ID with any of them set is not ours.
    public static let configRotationMask: UInt8 = 0xE0

    /// Writes an ID naming `socketIndex` into the first `length` bytes of
    /// `out`, its other bits taken from `random`.
    @inlinable
    public static func write(socketIndex: Int, random: UInt64, into out: UnsafeMutableRawBufferPointer) {
        precondition(socketIndex >= 0 && socketIndex <= maxSocketIndex && out.count >= length)
        out[0] = UInt8(truncatingIfNeeded: random >> 56) & ~configRotationMask
        out[1] = UInt8(truncatingIfNeeded: socketIndex >> 8)
        out[2] = UInt8(truncatingIfNeeded: socketIndex)
        for i in 3..<length { out[i] = UInt8(truncatingIfNeeded: random >> (8 * (i - 3))) }
    }

    /// The socket index an ID names, or nil if it cannot be one of ours
    /// (another length, or config rotation bits set).
    @inlinable
    public static func socketIndex(of id: UnsafeRawBufferPointer) -> Int? {
        guard id.count == length, id[0] & configRotationMask == 0 else { return nil }
        return Int(id[1]) << 8 | Int(id[2])
    }
}
