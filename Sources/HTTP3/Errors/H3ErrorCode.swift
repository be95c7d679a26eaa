// HTTP/3 and QPACK error codes (RFC 9114 §8.1, RFC 9204 §6).
//
// They travel in QUIC RESET_STREAM, STOP_SENDING and CONNECTION_CLOSE
// (application) frames as variable-length integers. The set is open: §9
// "use of an error code in an unexpected context or receipt of an unknown
// error code MUST be treated as equivalent to H3_NO_ERROR", so the type is a
// struct over `UInt64` and any received value stays representable.

/// An HTTP/3 application error code. Unknown values are kept as they are.
public struct H3ErrorCode: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt64

    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    // RFC 9114 §8.1.
    public static let noError = H3ErrorCode(rawValue: 0x100)
    public static let generalProtocolError = H3ErrorCode(rawValue: 0x101)
    public static let internalError = H3ErrorCode(rawValue: 0x102)
    public static let streamCreationError = H3ErrorCode(rawValue: 0x103)
    public static let closedCriticalStream = H3ErrorCode(rawValue: 0x104)
    public static let frameUnexpected = H3ErrorCode(rawValue: 0x105)
    public static let frameError = H3ErrorCode(rawValue: 0x106)
    public static let excessiveLoad = H3ErrorCode(rawValue: 0x107)
    public static let idError = H3ErrorCode(rawValue: 0x108)
    public static let settingsError = H3ErrorCode(rawValue: 0x109)
    public static let missingSettings = H3ErrorCode(rawValue: 0x10a)
    public static let requestRejected = H3ErrorCode(rawValue: 0x10b)
    public static let requestCancelled = H3ErrorCode(rawValue: 0x10c)
    public static let requestIncomplete = H3ErrorCode(rawValue: 0x10d)
    public static let messageError = H3ErrorCode(rawValue: 0x10e)
    public static let connectError = H3ErrorCode(rawValue: 0x10f)
    public static let versionFallback = H3ErrorCode(rawValue: 0x110)
    // RFC 9204 §6.
    public static let qpackDecompressionFailed = H3ErrorCode(rawValue: 0x200)
    public static let qpackEncoderStreamError = H3ErrorCode(rawValue: 0x201)
    public static let qpackDecoderStreamError = H3ErrorCode(rawValue: 0x202)

    /// §8.1: "Error codes of the format 0x1f * N + 0x21 ... are reserved to
    /// exercise the requirement that unknown error codes be treated as
    /// equivalent to H3_NO_ERROR."
    public var isReserved: Bool { rawValue >= 0x21 && (rawValue - 0x21) % 0x1f == 0 }
}
