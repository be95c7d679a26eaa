// What a connection tells the application (the HTTP/3 layer), through
// `QUICEndpoint.nextEvent()`.

public enum QUICEvent: Equatable, Sendable {
    /// The handshake completed (RFC 9001 §4.1.1): ALPN is readable from the connection.
    case handshakeCompleted
    /// The peer opened this stream (its first frame arrived).
    case streamOpened(UInt64)
    /// New in-order bytes or the FIN can be read.
    case streamReadable(UInt64)
    /// Send buffer space freed after `write` took less than it was given.
    case streamWritable(UInt64)
    /// The peer's RESET_STREAM: the receive side is aborted (§3.2).
    case streamReset(UInt64, errorCode: UInt64)
    /// The peer's STOP_SENDING; our send side was already reset with the
    /// same code (§3.5).
    case stopSending(UInt64, errorCode: UInt64)
    /// A datagram (RFC 9221) arrived while none was waiting: read them
    /// with `receiveDatagram()` until it returns nil.
    case datagramReadable
    /// The peer moved (RFC 9000 §9: a NAT rebinding or a migration), or
    /// came back after its new path failed validation: `path` is where our
    /// packets go now.
    case peerAddressChanged
    /// Terminal: the connection is closed for the application. It may
    /// linger inside the endpoint in the closing or draining state (§10.2)
    /// but accepts no more calls.
    case closed(QUICCloseReason)
}

public enum QUICCloseReason: Equatable, Sendable {
    case idleTimeout
    /// We closed, including on protocol errors we detected.
    case local(errorCode: UInt64, application: Bool)
    case peer(errorCode: UInt64, application: Bool, reason: [UInt8])
    case statelessReset
    /// The path in use failed validation with no validated path to return
    /// to (RFC 9000 §8.2.4): state discarded silently.
    case pathValidationFailed
}
