import Core

/// What reading the request body produced.
public enum BodyRead {
    /// `n` bytes were written into the caller's buffer.
    case data(Int)
    /// The body is complete.
    case end
    /// The client stalled past the request timeout (status 408), broke the
    /// framing (400), or went away (status 0: nobody to answer); the
    /// connection will be closed.
    case failed(StaticString, status: Int)
    /// The body grew past --max-body.
    case tooLarge
}

/// The transport side of one request: the body source and the response
/// sink. Calls block the worker (the WSGI model: the application runs
/// inline); each returns false once the connection is unusable, after which
/// the gateway stops producing output but still closes the application's
/// iterable.
public protocol Exchange: AnyObject {
    /// Reads body bytes into `buffer` (sending `100 Continue` first if the
    /// client is waiting for it).
    func readBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyRead
    /// Queues the head; it goes out with the first body bytes or `finish`.
    func sendHead(_ head: ResponseHead) -> Bool
    /// Sends body bytes; with `flush` they reach the socket before the call
    /// returns. HEAD and bodyless statuses drop them.
    func sendBody(_ bytes: UnsafeRawBufferPointer, flush: Bool) -> Bool
    /// Sends `count` bytes of a regular file from `offset` (sendfile where
    /// the transport can); returns the bytes sent, or nil if the transport
    /// cannot send files (the gateway then reads and sends them itself).
    func sendFile(fd: Int32, offset: Int64, count: Int64) -> Int64?
    /// Ends the response (terminating chunk, flush).
    func finish() -> Bool
    /// Abandons the response: the connection is closed without completing
    /// the framing, so the client can tell it is truncated.
    func abort()
    /// Whether the head has gone out (after which errors abort).
    var headSent: Bool { get }
}
