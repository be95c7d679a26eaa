import Core

/// What a non-blocking look at the request body found.
public enum BodyPoll {
    /// `n` bytes were copied into the caller's buffer.
    case data(Int)
    /// The body is complete (nothing was copied).
    case end
    /// Nothing is buffered yet: call `wantBody()` and wait for `bodyReady`.
    case wait
    /// The body cannot be read: 400 (bad framing), 408 (stall), 413 (too
    /// large), or 0 when the client is gone.
    case failed(status: Int)
}

/// What became of bytes handed to the transport.
public enum SendOutcome {
    /// Accepted; the transport's pending output is under its high-water mark.
    case done
    /// Accepted, but pending output is over the high-water mark: wait for
    /// `outputDrained` before sending more.
    case backpressure
    /// The connection is gone; nothing was sent.
    case closed
}

/// The transport side of one request for an asynchronous gateway (ASGI):
/// nothing here blocks. Readiness comes back through the request's
/// `AsyncExchangeDelegate`.
public protocol AsyncExchange: AnyObject {
    /// Connects the request that will receive this exchange's events;
    /// called first, before the application can run.
    func attach(_ delegate: AsyncExchangeDelegate)
    /// Body bytes available now, without reading the socket.
    var bufferedBodyBytes: Int { get }
    /// The whole body has been handed out.
    var bodyComplete: Bool { get }
    func pollBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyPoll
    /// Resume reading the socket (sending `100 Continue` first if the client
    /// waits for it) until body bytes, the end, or a failure are available;
    /// then `bodyReady` is called once.
    func wantBody()
    func sendInformational(status: Int, fields: UnsafeBufferPointer<ResponseField>) -> SendOutcome
    /// Queues the head (it leaves with the first body bytes). `trailers`:
    /// the body will be followed by trailer fields.
    func sendHead(_ head: ResponseHead, trailers: Bool) -> SendOutcome
    /// Queues body bytes; with `final` the response body is complete (the
    /// terminating chunk follows unless trailers were announced).
    func sendBody(_ bytes: UnsafeRawBufferPointer, final: Bool) -> SendOutcome
    /// Sends `count` bytes of a regular file from `offset` as the rest of the
    /// body; the transport owns `fd` from now on and closes it.
    func sendFile(fd: Int32, offset: Int64, count: Int64) -> SendOutcome
    func sendTrailers(_ fields: UnsafeBufferPointer<ResponseField>) -> SendOutcome
    /// Abandons the response: the connection is closed as it is.
    func abort()
    var headSent: Bool { get }
}

/// Events from the transport to the request it carries. After
/// `exchangeEnded` the transport never calls again, and the request must
/// not touch the exchange (the connection may already carry another
/// request).
public protocol AsyncExchangeDelegate: AnyObject {
    func bodyReady()
    func outputDrained()
    /// The response is on the wire (or the client went away: `disconnected`)
    /// and the exchange is released.
    func exchangeEnded(disconnected: Bool)
}
