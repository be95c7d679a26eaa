// The 9-byte HTTP/2 frame header (RFC 9113 §4.1).
//
//     +-----------------------------------------------+
//     |                 Length (24)                   |
//     +---------------+---------------+---------------+
//     |   Type (8)    |   Flags (8)   |
//     +-+-------------+---------------+-------------------------------+
//     |R|                 Stream Identifier (31)                      |
//     +=+=============================================================+
//     |                   Frame Payload (0...)                      ...
//     +---------------------------------------------------------------+
//
// §4.1: the reserved bit R "MUST remain unset (0x00) when sending and MUST be
// ignored when receiving"; unknown flags likewise "MUST be ignored on
// receipt" — `FrameFlags` keeps them (they are harmless) and encoders never
// set them. Frame types are an open set (§5.5: unknown types are ignored), so
// `FrameType` is a struct over the octet, like the error codes.

/// A frame type octet (RFC 9113 §6, §11.2). Unknown values are representable.
public struct FrameType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let data = FrameType(rawValue: 0x0)
    public static let headers = FrameType(rawValue: 0x1)
    public static let priority = FrameType(rawValue: 0x2)
    public static let rstStream = FrameType(rawValue: 0x3)
    public static let settings = FrameType(rawValue: 0x4)
    public static let pushPromise = FrameType(rawValue: 0x5)
    public static let ping = FrameType(rawValue: 0x6)
    public static let goAway = FrameType(rawValue: 0x7)
    public static let windowUpdate = FrameType(rawValue: 0x8)
    public static let continuation = FrameType(rawValue: 0x9)
}

/// Frame flags (RFC 9113 §6). The meaning of a bit depends on the type.
public struct FrameFlags: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// DATA, HEADERS.
    public static let endStream = FrameFlags(rawValue: 0x1)
    /// SETTINGS, PING.
    public static let ack = FrameFlags(rawValue: 0x1)
    /// HEADERS, PUSH_PROMISE, CONTINUATION.
    public static let endHeaders = FrameFlags(rawValue: 0x4)
    /// DATA, HEADERS, PUSH_PROMISE.
    public static let padded = FrameFlags(rawValue: 0x8)
    /// HEADERS.
    public static let priority = FrameFlags(rawValue: 0x20)
}

/// A decoded frame header.
public struct FrameHeader: Equatable, Sendable {
    /// Size of the encoded header.
    public static let size = 9

    /// Payload length, 0...2^24-1.
    public var length: Int
    public var type: FrameType
    public var flags: FrameFlags
    /// 31 bits; the reserved bit is dropped on decode.
    public var streamID: UInt32

    public init(length: Int, type: FrameType, flags: FrameFlags, streamID: UInt32) {
        self.length = length
        self.type = type
        self.flags = flags
        self.streamID = streamID
    }

    /// Decodes the header at `bytes[at]`; nil if fewer than 9 bytes remain.
    @inlinable
    public static func decode(_ bytes: UnsafeRawBufferPointer, at i: Int) -> FrameHeader? {
        guard bytes.count - i >= size else { return nil }
        let length = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
        return FrameHeader(length: length, type: FrameType(rawValue: bytes[i + 3]),
                           flags: FrameFlags(rawValue: bytes[i + 4]),
                           streamID: readUInt32(bytes, at: i + 5) & 0x7fff_ffff)
    }

    /// Writes the 9 header bytes at `out`.
    @inlinable
    public func encode(into out: UnsafeMutableRawPointer) {
        precondition(length >= 0 && length < 1 << 24 && streamID <= 0x7fff_ffff)
        out.storeBytes(of: UInt8(truncatingIfNeeded: length >> 16), toByteOffset: 0, as: UInt8.self)
        out.storeBytes(of: UInt8(truncatingIfNeeded: length >> 8), toByteOffset: 1, as: UInt8.self)
        out.storeBytes(of: UInt8(truncatingIfNeeded: length), toByteOffset: 2, as: UInt8.self)
        out.storeBytes(of: type.rawValue, toByteOffset: 3, as: UInt8.self)
        out.storeBytes(of: flags.rawValue, toByteOffset: 4, as: UInt8.self)
        writeUInt32(streamID, to: out + 5)
    }
}

@inlinable
func readUInt32(_ b: UnsafeRawBufferPointer, at i: Int) -> UInt32 {
    UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
}

@inlinable
func writeUInt32(_ v: UInt32, to out: UnsafeMutableRawPointer) {
    out.storeBytes(of: v.bigEndian, as: UInt32.self)
}
