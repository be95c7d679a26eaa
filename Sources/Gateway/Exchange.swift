@_exported import Exchanges
import Core

/// One request as every transport hands it to a gateway: the request line's
/// parts and the fields, as spans into `base`, plus where it came from.
///
/// This is the single request path: HTTP/1.1 fills it from its head parser,
/// HTTP/2 and HTTP/3 (later) from their decoded header blocks. Spans stay
/// valid for the whole exchange (the transport keeps the bytes in place).
public struct GatewayRequest {
    public var base: UnsafeRawPointer
    public var method: ByteSpan
    /// The request-target as received (for RAW_URI / raw_path).
    public var target: ByteSpan
    /// The path part, still percent-encoded.
    public var path: ByteSpan
    public var query: ByteSpan
    /// "HTTP/1.1", "HTTP/1.0", "HTTP/2", "HTTP/3".
    public var httpVersion: StaticString
    public var isHead: Bool
    public var fieldCount: Int
    /// Field name and value spans; names in their original case.
    public var fields: UnsafePointer<FieldSpans>
    public var peer: PeerInfo

    public init(base: UnsafeRawPointer, method: ByteSpan, target: ByteSpan, path: ByteSpan, query: ByteSpan,
                httpVersion: StaticString, isHead: Bool, fieldCount: Int, fields: UnsafePointer<FieldSpans>,
                peer: PeerInfo) {
        self.base = base
        self.method = method
        self.target = target
        self.path = path
        self.query = query
        self.httpVersion = httpVersion
        self.isHead = isHead
        self.fieldCount = fieldCount
        self.fields = fields
        self.peer = peer
    }

    @inlinable public func bytes(_ span: ByteSpan) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + span.start, count: span.count)
    }
}

public struct FieldSpans {
    public var name: ByteSpan
    public var value: ByteSpan
    public init(name: ByteSpan, value: ByteSpan) { self.name = name; self.value = value }
}

/// The two ends of a connection as the application sees them. Python
/// objects for these are made once per connection by the gateway.
public final class PeerInfo {
    public let remoteAddress: String
    public let remotePort: Int
    public let serverName: String
    public let serverPort: Int
    public let isUnix: Bool
    public let scheme: StaticString
    /// Set when the connection is TLS, once its handshake completed.
    public var tls: TLSInfo?

    public init(remoteAddress: String, remotePort: Int, serverName: String, serverPort: Int, isUnix: Bool,
                scheme: StaticString) {
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
        self.serverName = serverName
        self.serverPort = serverPort
        self.isUnix = isUnix
        self.scheme = scheme
    }
}

/// What reading the request body produced.
public enum BodyRead {
    /// `n` bytes were written into the caller's buffer.
    case data(Int)
    /// The body is complete.
    case end
    /// The client stalled past the request timeout (status 408), broke the
    /// framing (400), or went away (status 0: nobody to answer); the
    /// connection will be closed.
    case failed(StaticString, status: Int)
    /// The body grew past --max-body.
    case tooLarge
}

/// The transport side of one request: the body source and the response
/// sink. Calls block the worker (the WSGI model: the application runs
/// inline); each returns false once the connection is unusable, after which
/// the gateway stops producing output but still closes the application's
/// iterable.
public protocol Exchange: AnyObject {
    /// Reads body bytes into `buffer` (sending `100 Continue` first if the
    /// client is waiting for it).
    func readBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyRead
    /// Queues the head; it goes out with the first body bytes or `finish`.
    func sendHead(_ head: ResponseHead) -> Bool
    /// Sends body bytes; with `flush` they reach the socket before the call
    /// returns. HEAD and bodyless statuses drop them.
    func sendBody(_ bytes: UnsafeRawBufferPointer, flush: Bool) -> Bool
    /// Sends `count` bytes of a regular file from `offset` (sendfile where
    /// the transport can); returns the bytes sent, or nil if the transport
    /// cannot send files (the gateway then reads and sends them itself).
    func sendFile(fd: Int32, offset: Int64, count: Int64) -> Int64?
    /// Ends the response (terminating chunk, flush).
    func finish() -> Bool
    /// Abandons the response: the connection is closed without completing
    /// the framing, so the client can tell it is truncated.
    func abort()
    /// Whether the head has gone out (after which errors abort).
    var headSent: Bool { get }
}
