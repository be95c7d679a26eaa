// QUIC transport error codes (RFC 9000 §20.1).
//
// Codes travel in CONNECTION_CLOSE (type 0x1c) as variable-length integers.
// The registry is open and a peer may send anything, so the type is a struct
// over the raw value with the registry's codes as named constants (STYLE §4:
// unknown codes survive), plus the CRYPTO_ERROR range 0x0100-0x01ff, which
// carries a TLS alert in its low byte (§20.1; RFC 9001 §4.8).

/// A QUIC transport error code (RFC 9000 §20.1). Unknown values are kept.
public struct TransportErrorCode: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt64

    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public static let noError = TransportErrorCode(rawValue: 0x00)
    public static let internalError = TransportErrorCode(rawValue: 0x01)
    public static let connectionRefused = TransportErrorCode(rawValue: 0x02)
    public static let flowControlError = TransportErrorCode(rawValue: 0x03)
    public static let streamLimitError = TransportErrorCode(rawValue: 0x04)
    public static let streamStateError = TransportErrorCode(rawValue: 0x05)
    public static let finalSizeError = TransportErrorCode(rawValue: 0x06)
    public static let frameEncodingError = TransportErrorCode(rawValue: 0x07)
    public static let transportParameterError = TransportErrorCode(rawValue: 0x08)
    public static let connectionIDLimitError = TransportErrorCode(rawValue: 0x09)
    public static let protocolViolation = TransportErrorCode(rawValue: 0x0a)
    public static let invalidToken = TransportErrorCode(rawValue: 0x0b)
    public static let applicationError = TransportErrorCode(rawValue: 0x0c)
    public static let cryptoBufferExceeded = TransportErrorCode(rawValue: 0x0d)
    public static let keyUpdateError = TransportErrorCode(rawValue: 0x0e)
    public static let aeadLimitReached = TransportErrorCode(rawValue: 0x0f)
    public static let noViablePath = TransportErrorCode(rawValue: 0x10)
    /// RFC 9368 §4.
    public static let versionNegotiationError = TransportErrorCode(rawValue: 0x11)

    /// CRYPTO_ERROR carrying TLS alert `alert` (RFC 9001 §4.8: "0x0100 plus
    /// the alert description").
    public static func cryptoError(alert: UInt8) -> TransportErrorCode {
        TransportErrorCode(rawValue: 0x0100 + UInt64(alert))
    }

    /// The TLS alert of a CRYPTO_ERROR code, or nil outside 0x0100-0x01ff.
    public var tlsAlert: UInt8? {
        rawValue >= 0x0100 && rawValue <= 0x01ff ? UInt8(truncatingIfNeeded: rawValue) : nil
    }
}
