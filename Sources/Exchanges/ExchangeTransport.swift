import Core

/// What a transport found of the request body without waiting.
public enum BodyTake {
    /// `n` bytes were copied into the caller's buffer.
    case data(Int)
    /// The body is complete (nothing was copied).
    case end
    /// Nothing is buffered yet.
    case wait
    /// The body cannot be read on: its framing is broken (400), it grew
    /// past --max-body (413), or the client is gone (0).
    case failed(status: Int, reason: StaticString)
}

/// What waiting for request body bytes came to.
public enum BodyWait {
    /// Bytes (or the end, or a failure) arrived.
    case progressed
    /// The time given passed, or the wait woke without news.
    case idle
    /// The connection or the stream is gone.
    case gone
}

/// What carries one exchange: an HTTP/1.1 connection, an HTTP/2 stream, an
/// HTTP/3 request stream. A transport frames bytes and reports what it
/// reads; every decision about the exchange is made once, by the
/// `Exchange` and `AsyncExchange` implementations this protocol's
/// extensions give each transport (ExchangeTransport+Exchange,
/// ExchangeTransport+AsyncExchange), from the state in `exchange`
/// (`HTTPExchange`):
///
/// - the body failure a reader gets, and the 408 when the body stalls past
///   --request-timeout;
/// - `100 Continue`, sent when the application first asks for the body;
/// - the response plan (status, `date`, `content-length`, bodyless);
/// - which response body bytes may go out (none for HEAD, 1xx, 204, 304;
///   none past the declared length), and cutting off a body that ends short;
/// - whether the body ends with the last block or with trailers, and when
///   the response is complete;
/// - the body bytes counted for the access log.
///
/// What a transport provides is below: the request body it holds, a way to
/// wait for more (blocking, for WSGI) or to be told (`watchBody`, for ASGI),
/// and framing for each part of the response. It also implements what is
/// purely its own from the two gateway protocols: `abort`, `attach`,
/// `bufferedBodyBytes` and `bodyComplete`.
///
/// A transport calls nothing here; it reports to the request's
/// `AsyncExchangeDelegate` (body ready, output drained, exchange ended).
public protocol ExchangeTransport: Exchange, AsyncExchange {
    /// The request's bookkeeping and decisions.
    var exchange: HTTPExchange { get set }
    /// The worker's clock reading (read afresh while a blocking call waits).
    var now: Instant { get }
    /// --request-timeout: how long a body may stall.
    var requestTimeoutMilliseconds: Int { get }
    /// The response can still be sent: the connection is open and the
    /// stream not reset.
    var canSend: Bool { get }

    // MARK: Request body

    /// Some of the body has arrived (then `100 Continue` is not needed,
    /// RFC 9110 §10.1.1).
    var bodyArrived: Bool { get }
    /// Copies buffered body bytes into `buffer`, without reading the socket.
    func takeBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyTake
    /// Blocking: does the connection's I/O for up to `milliseconds` until
    /// body bytes, the body's end or a failure arrive.
    func awaitBody(milliseconds: Int) -> BodyWait
    /// Non-blocking: reads on until body bytes, the end or a failure are
    /// there, then calls the delegate's `bodyReady` once (408 after
    /// --request-timeout, through `exchange.failBody`).
    func watchBody()

    // MARK: Response

    /// Frames an interim response; false if the framing has none to give
    /// (HTTP/1.0 clients, 101 over HTTP/2).
    func frameInformational(status: Int, fields: UnsafeBufferPointer<ResponseField>) -> Bool
    /// Frames the head as `plan` says (`plan.status`, `date`,
    /// `content-length`); returns whether the announced trailers will be
    /// carried (HTTP/1 carries them only in a chunked body to an HTTP/1.1
    /// client).
    func frameHead(_ head: ResponseHead, plan: HTTPExchange.ResponsePlan, trailers: Bool) -> Bool
    /// Frames body bytes (already admitted; may be empty when only `end` is
    /// asked); `end`: the body is complete with them and no trailers follow.
    /// `blocking`: wait until the bytes are taken (WSGI); otherwise queue
    /// what cannot go now. False if the connection failed.
    func frameBody(_ bytes: UnsafeRawBufferPointer, end: Bool, blocking: Bool) -> Bool
    /// Frames the end of the body with these trailer fields.
    func frameTrailers(_ fields: UnsafeBufferPointer<ResponseField>)
    /// Whether `transmitFile` can send files (HTTP/1.1 with sendfile); when
    /// false, a WSGI file wrapper is read by the gateway and sent as body.
    var sendsFiles: Bool { get }
    /// Blocking: sends `count` bytes of a regular file from `offset` (the
    /// caller keeps `fd`); returns how many went out.
    func transmitFile(fd: Int32, offset: Int64, count: Int64) -> Int64
    /// Non-blocking: queues `count` bytes of a regular file from `offset` as
    /// the rest of the body; the transport owns `fd` from now on. `end`: no
    /// trailers follow.
    func queueFile(fd: Int32, offset: Int64, count: Int64, end: Bool)
    /// Writes what is framed: all of it (`blocking`), or what the socket
    /// takes now with the rest left to the event loop. False if the
    /// connection failed (non-blocking: the transport has given it up).
    func flush(blocking: Bool) -> Bool
    /// Non-blocking, after queueing: writes or schedules what is framed,
    /// finishes the exchange once `exchange.responseComplete` and all is
    /// out, and says whether the sender should wait (`.backpressure`, then
    /// `outputDrained` follows) or may go on.
    func pushOutput() -> SendOutcome
}

extension ExchangeTransport {
    @inlinable public var headSent: Bool { exchange.headSent }

    /// Sends `100 Continue` if the client waits for it (see
    /// `HTTPExchange.continueNeeded`). False if the connection failed.
    @inlinable
    func continueIfNeeded(blocking: Bool) -> Bool {
        guard exchange.continueNeeded(bodyArrived: bodyArrived),
              frameInformational(status: 100, fields: UnsafeBufferPointer(start: nil, count: 0)) else { return true }
        return flush(blocking: blocking)
    }

    /// The part of `bytes` that may go out: none for a bodyless response,
    /// and none past the declared length (`HTTPExchange.admitBody`). For a
    /// transport's own responses too (a refused WebSocket's body).
    @inlinable
    public func admitted(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        if exchange.bodyless { return UnsafeRawBufferPointer(start: nil, count: 0) }
        guard !bytes.isEmpty else { return bytes }
        let n = Int(exchange.admitBody(Int64(bytes.count)))
        return n == bytes.count ? bytes : UnsafeRawBufferPointer(rebasing: bytes[0..<n])
    }
}
