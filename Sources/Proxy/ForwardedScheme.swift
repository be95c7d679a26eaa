/// The scheme a forwarded request arrived with at the client-facing proxy.
/// The caller maps it to `ws`/`wss` for a WebSocket.
public enum ForwardedScheme: Equatable, Sendable {
    case http
    case https

    /// `proto=` (RFC 7239 §5.4: a URI scheme name) or an
    /// `X-Forwarded-Proto` element, case-insensitive (RFC 3986 §3.1).
    /// `ws`/`wss` (some proxies send them for WebSocket requests) are
    /// `http`/`https`; any other scheme is not one we serve and is ignored.
    static func parse(_ text: UnsafeRawBufferPointer) -> ForwardedScheme? {
        if text.equalsIgnoringCase("https") || text.equalsIgnoringCase("wss") { return .https }
        if text.equalsIgnoringCase("http") || text.equalsIgnoringCase("ws") { return .http }
        return nil
    }
}
