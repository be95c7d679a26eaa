// HTTP/2 error codes (RFC 9113 §7).
//
// Error codes travel in RST_STREAM and GOAWAY frames as 32-bit values. The
// set is open: RFC 9113 §7 says unknown codes must not trigger special
// behaviour, so the type is a struct over `UInt32` instead of an enum, and any
// received value stays representable.

/// An HTTP/2 error code (RFC 9113 §7). Unknown values are kept as they are.
public struct HTTP2ErrorCode: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt32

    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    public static let noError = HTTP2ErrorCode(rawValue: 0x0)
    public static let protocolError = HTTP2ErrorCode(rawValue: 0x1)
    public static let internalError = HTTP2ErrorCode(rawValue: 0x2)
    public static let flowControlError = HTTP2ErrorCode(rawValue: 0x3)
    public static let settingsTimeout = HTTP2ErrorCode(rawValue: 0x4)
    public static let streamClosed = HTTP2ErrorCode(rawValue: 0x5)
    public static let frameSizeError = HTTP2ErrorCode(rawValue: 0x6)
    public static let refusedStream = HTTP2ErrorCode(rawValue: 0x7)
    public static let cancel = HTTP2ErrorCode(rawValue: 0x8)
    public static let compressionError = HTTP2ErrorCode(rawValue: 0x9)
    public static let connectError = HTTP2ErrorCode(rawValue: 0xa)
    public static let enhanceYourCalm = HTTP2ErrorCode(rawValue: 0xb)
    public static let inadequateSecurity = HTTP2ErrorCode(rawValue: 0xc)
    public static let http11Required = HTTP2ErrorCode(rawValue: 0xd)
}
