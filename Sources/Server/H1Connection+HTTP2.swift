import CSys
import Core
import HTTP2

/// Where a connection turns to HTTP/2: the client preface at the start of a
/// cleartext connection (prior knowledge, RFC 9113 §3.3), or ALPN `h2`
/// after a TLS handshake.
extension H1Connection {
    /// Looks for the client preface in the first bytes of the connection.
    /// Returns true if the connection is now HTTP/2, or if more bytes are
    /// needed to tell (nothing else may be parsed meanwhile).
    ///
    /// A wrong preface from an HTTP/2 client — any first bytes under
    /// --http2-only, where nothing else is spoken; on a shared port the
    /// request line `PRI * HTTP/2.0` followed by something else — goes to
    /// HTTP/2 as well, whose connection answers it as RFC 9113 §3.4 says:
    /// a connection error of type PROTOCOL_ERROR (our SETTINGS, then
    /// GOAWAY(0, PROTOCOL_ERROR), then the close), not an HTTP/1.1 505.
    func detectHTTP2Preface() -> Bool {
        switch ConnectionPreface.match(input.readable) {
        case .complete, .invalidPreface:
            startHTTP2()
            return true
        case .needMoreData:
            return true
        case .mismatch:
            guard worker.config.http2Only else { return false }
            startHTTP2()
            return true
        }
    }

    func startHTTP2() {
        phase = .http2
        let session = H2Session(connection: self)
        h2HandOff = .session(session)
        // A connection that comes while draining (--drain-delay) is
        // served, and told to go elsewhere after its first response.
        if worker.draining { session.goAwayAfterFirstResponse() }
        session.start()
    }

    /// One write of `bytes` (the HTTP/2 output); how many the socket took,
    /// and whether the connection failed.
    func writeOut(_ bytes: UnsafeRawBufferPointer) -> (Int, Bool) {
        io.writeSome(bytes, UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// After our last HTTP/2 frames (a GOAWAY): close gracefully, reading
    /// and dropping what the client still sends for a moment.
    func lingerAfterHTTP2() {
        h2HandOff = .http1
        phase = .head
        lingerAfterResponse()
    }
}
