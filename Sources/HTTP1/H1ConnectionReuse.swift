/// What becomes of an HTTP/1 connection once a response is complete.
///
///     response done ─ closing (!keepAlive or hard stop) ─┬─ request body read ──▶ close
///                   │                                    └─ body still coming ──▶ lingerThenClose
///                   └─ keep-alive ─┬─ request body read ─────────────────────────▶ readNextRequest
///                                  ├─ body still coming ─────────────────────────▶ discardBodyThenReadNext
///                                  └─ body still coming, 100-continue not sent ──▶ close
public enum H1ConnectionReuse: Equatable, Sendable {
    /// Close now: nothing more is read.
    case close
    /// Shut our side down and drain what the client still sends before
    /// closing (RFC 9112 §9.6): closing with unread input would reset the
    /// connection and could destroy the response before the client reads it.
    case lingerThenClose
    /// The next request's head may follow at once (RFC 9112 §9.3.2:
    /// pipelined requests are answered in order).
    case readNextRequest
    /// The application did not read the whole request body: read and drop
    /// the rest, then the next request follows.
    case discardBodyThenReadNext

    /// - Parameters:
    ///   - keepAlive: what the response head told the client
    ///     (`H1ResponseFraming.keepAlive`, cleared since if reading the
    ///     request body failed). A response that promised keep-alive keeps
    ///     the connection even if a drain began meanwhile: the client may
    ///     already be sending on it, and the next response says "close".
    ///   - hardStopping: the server stops now, promised or not.
    ///   - requestBodyComplete: the whole request body has been read.
    ///   - continuePending: the request expects 100-continue and none was
    ///     sent: the client may still wait before sending its body
    ///     (RFC 9110 §10.1.1), so where the next request starts is unknown.
    public init(keepAlive: Bool, hardStopping: Bool, requestBodyComplete: Bool, continuePending: Bool) {
        if !keepAlive || hardStopping {
            self = requestBodyComplete ? .close : .lingerThenClose
        } else if requestBodyComplete {
            self = .readNextRequest
        } else {
            self = continuePending ? .close : .discardBodyThenReadNext
        }
    }
}
