import Gateway

/// An ASGI request on an HTTP/1.1 connection, from the application's side:
/// whom to tell about progress (`AsyncExchange`), whether it waits for
/// body (whether reading paused is the connection's `readPaused`). Reset
/// for each request.
struct H1AsyncRequest {
    var delegate: AsyncExchangeDelegate?
    var bodyWanted = false
}
