import Exchanges

/// What an HTTP/1.1 connection needs only while a request is under way:
/// the request's framing and bookkeeping (`H1Request`), its `HTTPExchange`,
/// the ASGI side's (`H1AsyncRequest`), the response bytes that wait for the
/// socket (`PendingOutput`) and the WSGI pool thread taken for it (about
/// 330 bytes). Taken from the worker's pool when a request's first bytes
/// arrive and given back when the connection first goes idle with nothing
/// left to write, later by the worker's once-a-second pass when it finds
/// the connection idle (`H1Connection.becomeIdle`, `idlePassed`),
/// so a keep-alive connection idle for a second or two holds a reference to
/// none, and a busy one keeps its own. A connection that upgrades (WebSocket) or closes
/// keeps its own until it is reused: what a closed connection's application
/// still asks of it reads the state of its own request.
///
/// Nothing is reset when it goes back or between two requests of one
/// connection: a request sets what it reads (as it did when these were the
/// connection's fields, reused by later accepts).
final class H1RequestState {
    var request = H1Request()
    var exchange = HTTPExchange(isHead: false, declaredBodyLength: nil, maxBody: 0, start: .init(nanoseconds: 0))
    var asyncRequest = H1AsyncRequest()
    var output = PendingOutput()
    /// WSGI with --wsgi-threads: the pool thread taken for the request
    /// being dispatched (`serve` uses it or `process` gives it back).
    var poolThread: Int?

    /// Whether it can go back to the pool: nothing left to write and no
    /// exchange or pool thread still attached.
    var releasable: Bool { output.isEmpty && asyncRequest.delegate == nil && poolThread == nil }
}
