/// A WebSocket close status code (RFC 6455 §7.4), as the number on the wire.
///
/// Theory of operation. Codes are a struct over `UInt16`, not an enum, so a
/// peer's code we have no name for (4000–4999 private use, 3000–3999
/// registered with IANA) survives decoding unchanged and can be echoed back
/// (STYLE §4). Which numbers may appear *on the wire* is a separate question,
/// answered once by `isValidOnWire` (RFC 6455 §7.4.1, §7.4.2, and the IANA
/// registry of §11.7):
///
///     0–999       never used                         → invalid
///     1000–1003   defined                            → valid
///     1004        reserved                           → invalid
///     1005, 1006  "MUST NOT be set as a status code in a Close control
///                 frame by an endpoint" (§7.4.1)     → invalid
///     1007–1011   defined (1010 is a client's code, 1011 a server's) → valid
///     1012–1014   registered later with IANA (service restart, try again
///                 later, bad gateway)                → valid
///     1015        "MUST NOT be set" (§7.4.1, TLS failure) → invalid
///     1016–2999   reserved for this protocol, unassigned → invalid
///     3000–4999   libraries/frameworks and private use → valid
///     5000+       outside every range of §7.4.2       → invalid
///
/// A close frame carrying an invalid code is a protocol error (1002); the
/// decoder enforces that, not this type.
public struct CloseCode: RawRepresentable, Equatable, Hashable, Sendable {
    public var rawValue: UInt16

    @inlinable
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// 1000: the purpose for which the connection was established is fulfilled.
    public static let normalClosure = CloseCode(rawValue: 1000)
    /// 1001: the endpoint is going away (server shutdown, page navigated away).
    public static let goingAway = CloseCode(rawValue: 1001)
    /// 1002: the peer broke the framing or close rules of RFC 6455.
    public static let protocolError = CloseCode(rawValue: 1002)
    /// 1003: a data type the endpoint cannot accept (e.g. binary only).
    public static let unsupportedData = CloseCode(rawValue: 1003)
    /// 1005: no status code was present. Reported to the application for an
    /// empty close frame; never sent (§7.4.1).
    public static let noStatusReceived = CloseCode(rawValue: 1005)
    /// 1006: the connection closed without a close frame. Reported locally;
    /// never sent (§7.4.1).
    public static let abnormalClosure = CloseCode(rawValue: 1006)
    /// 1007: message data inconsistent with its type (text that is not UTF-8).
    public static let invalidFramePayloadData = CloseCode(rawValue: 1007)
    /// 1008: a message violated the endpoint's policy.
    public static let policyViolation = CloseCode(rawValue: 1008)
    /// 1009: a message too big to process (`--ws-max-message`).
    public static let messageTooBig = CloseCode(rawValue: 1009)
    /// 1010: (client) the server did not negotiate a required extension.
    public static let mandatoryExtension = CloseCode(rawValue: 1010)
    /// 1011: the server met an unexpected condition (the application failed).
    public static let internalError = CloseCode(rawValue: 1011)
    /// 1012: the service is restarting (IANA registry).
    public static let serviceRestart = CloseCode(rawValue: 1012)
    /// 1013: try again later (IANA registry).
    public static let tryAgainLater = CloseCode(rawValue: 1013)

    /// Whether the code may appear in a close frame (see the table above).
    @inlinable
    public var isValidOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: return true
        default: return false
        }
    }
}
