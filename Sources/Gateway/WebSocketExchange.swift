import Core

/// The transport side of one WebSocket connection, as the ASGI gateway sees
/// it: after the opening handshake is judged valid, the application decides
/// (accept, or deny with a close or an HTTP response); then whole messages
/// go both ways. Nothing here blocks; progress comes back through
/// `WebSocketDelegate`.
public protocol WebSocketExchange: AnyObject {
    func attachWebSocket(_ delegate: WebSocketDelegate)
    /// Completes the handshake (101) with the chosen subprotocol (if any)
    /// and extra response fields; reading starts.
    func acceptWebSocket(subprotocol: UnsafeRawBufferPointer?, fields: UnsafeBufferPointer<ResponseField>) -> SendOutcome
    /// Refuses the handshake with an HTTP response instead (403 for a plain
    /// close; the denial extension's own response otherwise). The body
    /// follows with `denyBody`; the connection closes after the final part.
    func denyWebSocket(_ head: ResponseHead) -> SendOutcome
    func denyBody(_ bytes: UnsafeRawBufferPointer, final: Bool) -> SendOutcome
    /// One whole message, as one frame.
    func sendMessage(_ bytes: UnsafeRawBufferPointer, text: Bool) -> SendOutcome
    /// Starts the closing handshake (RFC 6455 §7.1.2); the transport closes
    /// once the peer answers or a timeout passes.
    func sendClose(code: Int, reason: UnsafeRawBufferPointer) -> SendOutcome
    /// Flow control from the application's side: stop reading frames while
    /// its queue is full, resume when it has room.
    func pauseReading()
    func resumeReading()
}

public protocol WebSocketDelegate: AnyObject {
    /// A complete message (text is valid UTF-8). The bytes are valid for the
    /// duration of the call.
    func messageReceived(_ bytes: UnsafeRawBufferPointer, text: Bool)
    /// Pending output drained below the low-water mark.
    func outputDrained()
    /// The connection is over: `code` is the peer's close code (1005 if its
    /// close had none), the protocol error's code, or 1006 for a connection
    /// lost without a close. The transport never calls again.
    func webSocketEnded(code: Int, reason: UnsafeRawBufferPointer)
}
