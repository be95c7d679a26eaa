import Core

/// A "remote" error: the peer's bytes broke RFC 6455, and the connection must
/// be failed (§7.1.7) by sending a close frame with `closeCode` and then
/// closing the TCP connection without waiting for more data. During the
/// opening handshake the answer is an HTTP status instead (see
/// `HandshakeRejection`).
///
/// Errors are a code plus a static reason, never a boxed `any Error`: the
/// decoder throws them by value (typed throws), and every one the module can
/// produce is a named constant in `WebSocketError+Catalogue.swift`, so the
/// close code for each rule is chosen in exactly one place and tests compare
/// against the same constant the decoder used (STYLE §4). The reason is short
/// enough (≤ 123 bytes, §5.5: a control frame payload is ≤ 125 bytes, minus
/// the 2-byte code) to be sent as the close frame's reason.
public struct WebSocketError: Error, Sendable {
    /// The code to send in the close frame: 1002, 1007 or 1009.
    public let closeCode: CloseCode
    /// A short, fixed, ASCII description; usable as the close reason.
    public let reason: StaticString

    public init(closeCode: CloseCode, reason: StaticString) {
        self.closeCode = closeCode
        self.reason = reason
    }
}

extension WebSocketError: Equatable {
    /// Same code and same reason text.
    public static func == (lhs: WebSocketError, rhs: WebSocketError) -> Bool {
        lhs.closeCode == rhs.closeCode && lhs.reason.sameText(as: rhs.reason)
    }
}

extension WebSocketError: CustomStringConvertible {
    public var description: String { "\(closeCode.rawValue) \(reason)" }
}
