/// Whether a TCP connection is, or may still become, HTTP/2 (see
/// H1Connection+HTTP2).
enum H2HandOff {
    /// No request has been parsed yet: the client preface (prior knowledge,
    /// RFC 9113 §3.3) may still come.
    case prefaceMayCome
    /// HTTP/1.1 from here on (or the connection's HTTP/2 has ended).
    case http1
    /// HTTP/2, after the preface or ALPN `h2`.
    case session(H2Session)

    var session: H2Session? {
        if case .session(let s) = self { return s }
        return nil
    }
}
