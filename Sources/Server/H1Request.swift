import Core
import Gateway
import HTTP1

/// The HTTP/1.1 request on a connection, from its first byte to the end of
/// its response: what the connection needs besides the exchange
/// (`HTTPExchange`, the decisions every transport shares) to frame the
/// response and to decide what comes after it. Reset for each request.
struct H1Request {
    /// When its first byte arrived (the access log's start).
    var start = Instant(nanoseconds: 0)
    var version: H1Version = .http11
    var body = H1RequestBody()
    var accessLine: AccessLog.RequestLine?
    /// `--request-id-header`: the id the response echoes.
    var requestID: RequestID?
    /// The response's framing, decided when the head is staged; nil until then.
    var framing: H1ResponseFraming?
    /// The request's wish (its Connection options and version, RFC 9112
    /// §9.3); then what the response head told the client
    /// (`H1ResponseFraming.keepAlive`). A body that cannot be read to the
    /// end overrides it (`H1Connection.requestKeepAlive`).
    var keepAlive = true
    /// Counted in flight for --limit-concurrency (see Admission) until it ends.
    var counted = false
    /// Metered as a request of this protocol until it ends (RequestMetering).
    var metered: MetricsProtocol?
}
