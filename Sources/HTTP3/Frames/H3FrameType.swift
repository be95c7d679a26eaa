// HTTP/3 frame types (RFC 9114 §7.2, §11.2.1).
//
// An open set (§9: "Implementations MUST ignore unknown or unsupported values
// in all extensible protocol elements"), so a struct over the variable-length
// integer rather than an enum.

/// An HTTP/3 frame type. Unknown values are kept as they are.
public struct H3FrameType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt64

    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public static let data = H3FrameType(rawValue: 0x00)
    public static let headers = H3FrameType(rawValue: 0x01)
    public static let cancelPush = H3FrameType(rawValue: 0x03)
    public static let settings = H3FrameType(rawValue: 0x04)
    public static let pushPromise = H3FrameType(rawValue: 0x05)
    public static let goaway = H3FrameType(rawValue: 0x07)
    public static let maxPushID = H3FrameType(rawValue: 0x0d)

    /// §7.2.8: "Frame types that were used in HTTP/2 where there is no
    /// corresponding HTTP/3 frame have also been reserved. These frame types
    /// MUST NOT be sent, and their receipt MUST be treated as a connection
    /// error of type H3_FRAME_UNEXPECTED" — PRIORITY, PING, WINDOW_UPDATE,
    /// CONTINUATION (§11.2.1).
    public var isHTTP2Only: Bool {
        rawValue == 0x02 || rawValue == 0x06 || rawValue == 0x08 || rawValue == 0x09
    }
}

/// The reserved ("grease") code points `0x1f * N + 0x21` shared by frame
/// types (§7.2.8), settings (§7.2.4.1), stream types (§6.2.3) and error
/// codes (§8.1): receivers must ignore them, and senders should use them so
/// that peers keep ignoring what they do not know.
public enum H3Grease {
    /// The `n`th reserved value (`n` < 2^57 keeps it below 2^62).
    public static func value(_ n: UInt64) -> UInt64 { 0x1f &* n &+ 0x21 }

    public static func isReserved(_ v: UInt64) -> Bool { v >= 0x21 && (v - 0x21) % 0x1f == 0 }
}
