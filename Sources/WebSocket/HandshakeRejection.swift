import Core

/// Why an opening handshake is refused, as the HTTP status to answer with
/// (RFC 6455 §4.2.2: "the server MUST stop processing the client's handshake
/// and return an HTTP response with an appropriate error code (such as 400
/// Bad Request)").
///
/// Like `WebSocketError` it is a number plus a static reason, one named
/// constant per rule, so the status for each rule is chosen here only.
public struct HandshakeRejection: Error, Sendable {
    /// 400 or 426 (HTTP/1.1); 400 or 501 (HTTP/2, `ExtendedConnectRequest`).
    public let status: UInt16
    /// A short, fixed, ASCII description, usable as a response body.
    public let reason: StaticString
    /// RFC 6455 §4.4: a refusal for an unsupported version MUST carry
    /// `Sec-WebSocket-Version: 13` (the versions we support). Over HTTP/1.1
    /// that is the 426; over HTTP/2 every version refusal (a 400) carries it.
    public let requiresVersionField: Bool

    public init(status: UInt16, reason: StaticString, requiresVersionField: Bool? = nil) {
        self.status = status
        self.reason = reason
        self.requiresVersionField = requiresVersionField ?? (status == 426)
    }

    // MARK: Catalogue

    /// RFC 6455 §4.1 item 2 / §4.2.1 item 1: "The method of the request MUST
    /// be GET". We answer 400, the status §4.2.2 names, rather than 405: 405
    /// would oblige us (RFC 9110 §15.5.6) to list in `Allow` the methods the
    /// application's resource supports, which only the application knows.
    public static let methodNotGET = HandshakeRejection(status: 400, reason: "WebSocket handshake method must be GET")
    /// §4.2.1 item 4: "A |Connection| header field that includes the token
    /// "Upgrade", treated as an ASCII case-insensitive value."
    public static let missingConnectionUpgrade = HandshakeRejection(status: 400, reason: "Connection does not include upgrade")
    /// §4.2.1 item 6: "A |Sec-WebSocket-Version| header field, with a value of 13."
    public static let missingVersion = HandshakeRejection(status: 400, reason: "missing Sec-WebSocket-Version")
    /// §11.3.5: "The |Sec-WebSocket-Version| header field MUST NOT appear more
    /// than once in an HTTP request."
    public static let repeatedVersion = HandshakeRejection(status: 400, reason: "repeated Sec-WebSocket-Version")
    /// §4.2.2 item 4 / §4.4: an unsupported version is answered with 426 and
    /// `Sec-WebSocket-Version: 13`.
    public static let unsupportedVersion = HandshakeRejection(status: 426, reason: "unsupported Sec-WebSocket-Version")
    /// §4.2.1 item 5: "A |Sec-WebSocket-Key| header field with a base64-encoded
    /// value that, when decoded, is 16 bytes in length."
    public static let missingKey = HandshakeRejection(status: 400, reason: "missing Sec-WebSocket-Key")
    public static let invalidKey = HandshakeRejection(status: 400, reason: "Sec-WebSocket-Key is not base64 of 16 bytes")
    /// §11.3.1: "The |Sec-WebSocket-Key| header field MUST NOT appear more than
    /// once in an HTTP request."
    public static let repeatedKey = HandshakeRejection(status: 400, reason: "repeated Sec-WebSocket-Key")
    /// §4.1 item 10 / §11.3.4: Sec-WebSocket-Protocol is 1#token.
    public static let malformedProtocolList = HandshakeRejection(status: 400, reason: "malformed Sec-WebSocket-Protocol")
    /// §9.1: the Sec-WebSocket-Extensions grammar.
    public static let malformedExtensionList = HandshakeRejection(status: 400, reason: "malformed Sec-WebSocket-Extensions")
}

extension HandshakeRejection: Equatable {
    public static func == (lhs: HandshakeRejection, rhs: HandshakeRejection) -> Bool {
        lhs.status == rhs.status && lhs.requiresVersionField == rhs.requiresVersionField && lhs.reason.sameText(as: rhs.reason)
    }
}

extension HandshakeRejection: CustomStringConvertible {
    public var description: String { "\(status) \(reason)" }
}
