@_exported import Exchanges
@_exported import Proxy
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
    /// What a trusted proxy's forwarding fields change (client, scheme,
    /// host, port), resolved once by `resolveForwarded`; nil when nothing
    /// changes (no `--forwarded-allow-ips`, an untrusted peer, no usable
    /// field). The gateways and the access log read this one result.
    public var forwarded: ForwardedResolution?
    /// `--request-id-header`: this request's id (nil: the option is off).
    /// A generated one is added to the fields the application sees.
    public var requestID: RequestID?

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
        forwarded = nil
        requestID = nil
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
    /// The peer in binary form, for `--forwarded-allow-ips` (parsed once,
    /// when the connection is accepted).
    public let address: PeerAddress
    public let remoteAddress: String
    public let remotePort: Int
    public let serverName: String
    public let serverPort: Int
    public let isUnix: Bool
    public let scheme: StaticString
    /// Set when the connection is TLS, once its handshake completed.
    public var tls: TLSInfo?
    /// The `PP2_TYPE_SSL` TLV of the connection's PROXY v2 header, if any.
    public var proxySSL: ProxyHeader.SSL?

    public init(address: PeerAddress, remoteAddress: String, remotePort: Int, serverName: String, serverPort: Int,
                isUnix: Bool, scheme: StaticString) {
        self.address = address
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
        self.serverName = serverName
        self.serverPort = serverPort
        self.isUnix = isUnix
        self.scheme = scheme
    }
}
