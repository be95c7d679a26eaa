import Core

public enum H1Version: UInt8, Sendable {
    case http10
    case http11
}

/// The method, recognised once (case-sensitively, RFC 9110 §9.1) so later
/// code compares integers; anything else is `.other` and its bytes are in
/// `H1RequestHead.methodSpan`.
public enum H1Method: UInt8, Sendable {
    case get, head, post, put, delete, connect, options, trace, patch, other

    /// The method named by `start..<end`, which already holds a valid token.
    @inlinable
    static func recognise(_ b: Bytes, _ start: Int, _ end: Int) -> H1Method {
        switch end - start {
        case 3:
            if b.equals(start, end, "GET") { return .get }
            if b.equals(start, end, "PUT") { return .put }
        case 4:
            if b.equals(start, end, "POST") { return .post }
            if b.equals(start, end, "HEAD") { return .head }
        case 5:
            if b.equals(start, end, "PATCH") { return .patch }
            if b.equals(start, end, "TRACE") { return .trace }
        case 6:
            if b.equals(start, end, "DELETE") { return .delete }
        case 7:
            if b.equals(start, end, "OPTIONS") { return .options }
            if b.equals(start, end, "CONNECT") { return .connect }
        default:
            break
        }
        return .other
    }
}

/// How the request body is delimited (RFC 9112 §6.3).
public enum H1BodyFraming: Equatable, Sendable {
    /// No Content-Length and no Transfer-Encoding: the request has no body.
    case none
    /// Exactly this many body bytes follow the head.
    case contentLength(Int64)
    /// A chunked body follows the head; decode it with `H1ChunkedDecoder`.
    case chunked
}

/// A parsed request head. Every span is relative to the buffer that was
/// passed to `H1HeadParser.parse`, and is valid as long as that buffer's
/// bytes stay where they are.
public struct H1RequestHead: Sendable, Equatable {
    public var method: H1Method
    public var methodSpan: ByteSpan
    /// The raw request-target, exactly as received.
    public var target: ByteSpan
    /// origin-form: the target up to '?' (or '#').
    /// absolute-form: the path after the authority; when the target has no
    /// path this is a one-byte span over the '/' of the request's
    /// HTTP-version, so it still reads "/".
    /// asterisk-form: the "*". authority-form (CONNECT): empty.
    public var path: ByteSpan
    /// After '?', up to '#' or the end of the target; empty if no '?'.
    public var query: ByteSpan
    public var version: H1Version
    public var framing: H1BodyFraming
    /// HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with
    /// "Connection: keep-alive" (and no "close") — RFC 9112 §9.3.
    public var keepAlive: Bool
    /// "Expect: 100-continue" on an HTTP/1.1 request (RFC 9110 §10.1.1).
    public var expectContinue: Bool
    /// The Host field value — or, for an absolute-form target, the target's
    /// authority, which RFC 9112 §3.2.2 says wins over the field. nil only on
    /// an HTTP/1.0 request without Host.
    public var host: ByteSpan?
    /// An Upgrade field and the "upgrade" option in Connection (recorded,
    /// not acted on).
    public var upgrade: Bool
    /// Bytes of the head, from the first byte of the buffer (leading empty
    /// lines included) through the CRLF of the empty line that ends it. The
    /// body or the next request starts here.
    public var headLength: Int
}

public enum H1HeadResult: Sendable, Equatable {
    /// The head is not complete yet; call again with more bytes.
    case incomplete
    case complete(H1RequestHead)
    /// The request is rejected: answer with `error.status` and close.
    case failed(H1Error)
}
