import Core

/// How a response body is delimited on the wire (RFC 9112 §6.3).
public enum H1ResponseBody: Equatable, Sendable {
    /// No body follows the head, whatever the fields say: the response to
    /// HEAD, 1xx, 204 and 304 (RFC 9112 §6.3 rule 1).
    case none
    /// Exactly this many bytes follow (RFC 9112 §6.3 rule 6).
    case contentLength(Int64)
    /// Chunked transfer coding (RFC 9112 §7.1); the body ends with the last
    /// chunk and the trailer section (`H1ChunkedEncoder`).
    case chunked
    /// The body ends when the server closes the connection (RFC 9112 §6.3
    /// rule 8): an unknown length to an HTTP/1.0 client.
    case closeDelimited
}

/// The `connection:` field a response head carries.
public enum H1ConnectionField: UInt8, Sendable {
    /// None: HTTP/1.1 connections persist by default (RFC 9112 §9.3).
    case none
    /// "connection: close": this is the last response (RFC 9112 §9.6).
    case close
    /// "connection: keep-alive": an HTTP/1.0 client keeps the connection
    /// only when told so (RFC 9112 Appendix C.2.2).
    case keepAlive
}

/// The framing and persistence of one HTTP/1 response, decided from the
/// request and the response head before a byte of the head is written.
///
/// The rules, in the order they apply:
///
///     bodyless  = HEAD request, or status 1xx, 204 or 304
///     trailers  = announced, a body follows, and the request is HTTP/1.1
///     length    = declared length, unless trailers force chunked
///     body      = none | content-length | chunked (1.1) | close-delimited (1.0)
///     keepAlive = request allows it, application and server did not ask to
///                 close, and the body is not delimited by the close
///
///     let f = H1ResponseFraming(version: .http11, isHead: false, requestKeepAlive: true,
///                               status: 200, contentLength: nil, trailers: false,
///                               applicationClose: false, stopping: false)
///     f.body            // .chunked
///     f.connectionField // .none
public struct H1ResponseFraming: Equatable, Sendable {
    /// How the body is delimited.
    public let body: H1ResponseBody
    /// Whether the connection stays open after this response: what the head
    /// tells the client.
    public let keepAlive: Bool
    /// Whether trailer fields may follow the body (chunked framing only).
    public let trailers: Bool
    /// The value of the `content-length` field to write, if one is written.
    /// Set for a HEAD response too, which describes the GET response
    /// without sending it (RFC 9110 §8.6, §9.3.2).
    public let contentLengthField: Int64?
    /// The `connection:` field to write.
    public let connectionField: H1ConnectionField
    /// No body bytes may be sent (HEAD, 1xx, 204, 304). Stored, like
    /// `isChunked`, because the server asks per body block: a byte load
    /// where matching `body` would load and compare its payload and tag.
    public let isBodyless: Bool
    /// The body is sent in chunks (`transfer-encoding: chunked` is written).
    public let isChunked: Bool

    /// - Parameters:
    ///   - version: the request's HTTP version; the response is answered in
    ///     the highest version the server supports, 1.1 (RFC 9110 §6.2), but
    ///     what it may use depends on the client's.
    ///   - isHead: the request method is HEAD.
    ///   - requestKeepAlive: the request lets the connection persist — its
    ///     Connection options and version default (RFC 9112 §9.3), and the
    ///     server still knows where the next request starts.
    ///   - status: the response status code.
    ///   - contentLength: the response's declared length, nil if unknown.
    ///   - trailers: the response announced trailer fields.
    ///   - applicationClose: the application asked for `Connection: close`.
    ///   - stopping: the server is stopping or draining this worker.
    public init(version: H1Version, isHead: Bool, requestKeepAlive: Bool, status: Int, contentLength: Int64?,
                trailers: Bool, applicationClose: Bool, stopping: Bool) {
        let http10 = version == .http10
        // RFC 9112 §6.3 rule 1: "Any response to a HEAD request and any
        // response with a 1xx (Informational), 204 (No Content), or 304 (Not
        // Modified) status code is always terminated by the first empty line
        // after the header fields ... and thus cannot contain a message body
        // or trailer section." RFC 9110 §6.4.1 says the same of content.
        let noContentStatus = HTTPSemantics.statusHasNoContent(status)
        let bodyless = HTTPSemantics.isBodyless(status: status, isHead: isHead)
        // Trailer fields travel only in the chunked coding (RFC 9112 §7.1.2),
        // and "A server MUST NOT send a response containing Transfer-Encoding
        // unless the corresponding request indicates HTTP/1.1" (RFC 9112
        // §6.1): a 1.0 client gets the body without them.
        self.trailers = trailers && !bodyless && !http10
        // Announced trailers need chunked framing even if the length is known.
        let length = self.trailers ? nil : contentLength
        // RFC 9110 §8.6: "A server MUST NOT send a Content-Length header
        // field in any response with a status code of 1xx (Informational) or
        // 204 (No Content)." A 304 gets none either (it MAY, §8.6, but the
        // length it would describe is the selected representation's, which
        // we cannot check). A HEAD response keeps it (RFC 9110 §9.3.2).
        contentLengthField = noContentStatus ? nil : length
        if bodyless {
            body = .none
        } else if let length {
            body = .contentLength(length)
        } else if !http10 {
            // RFC 9112 §6.1 and §7.1: chunked delimits a body of unknown length.
            body = .chunked
        } else {
            // RFC 9112 §6.3 rule 8: without a length the body ends when the
            // connection closes — the only way to tell a 1.0 client.
            body = .closeDelimited
        }
        isBodyless = bodyless
        isChunked = body == .chunked
        // RFC 9112 §9.3: the connection persists unless the request or the
        // response says "close" (or 1.0 did not ask for keep-alive); a server
        // that is stopping closes after the response (RFC 9112 §9.6), and a
        // close-delimited body ends only by closing.
        keepAlive = requestKeepAlive && !applicationClose && !stopping && body != .closeDelimited
        if !keepAlive {
            // RFC 9112 §9.6: "A server that sends a 'close' connection option
            // MUST initiate closure of the connection ... after it sends the
            // response"; sending it tells the client not to reuse it.
            connectionField = .close
        } else if http10 {
            // An HTTP/1.0 client assumes the connection closes unless the
            // response says "keep-alive" (RFC 9112 §9.3, Appendix C.2.2).
            connectionField = .keepAlive
        } else {
            connectionField = .none
        }
    }

    /// Whether `sent` body bytes are exactly the declared Content-Length.
    @inlinable public func isComplete(afterSending sent: Int64) -> Bool {
        if case .contentLength(let n) = body { return n == sent }
        return false
    }

    /// Whether a 1xx interim response may be sent to a client of `version`:
    /// "A server MUST NOT send a 1xx response to an HTTP/1.0 client"
    /// (RFC 9110 §15.2).
    public static func allowsInformational(to version: H1Version) -> Bool {
        version != .http10
    }
}
