import Gateway

/// An ASGI request on an HTTP/1.1 connection, from the application's side:
/// whom to tell about progress (`AsyncExchange`), whether it waits for
/// body, and whether reading paused for bytes it has not asked for. Reset
/// for each request.
struct H1AsyncRequest {
    var delegate: AsyncExchangeDelegate?
    var bodyWanted = false
    /// Unasked-for bytes arrived during the request; reading waits.
    var readPaused = false
}
