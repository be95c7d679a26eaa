import Core

/// A decoded PROXY protocol header (HAProxy's "The PROXY protocol",
/// versions 1 and 2): what the proxy says about the connection it relays.
public struct ProxyHeader: Equatable, Sendable {
    /// Bytes the header took at the start of the connection; the
    /// application protocol (or a TLS ClientHello) starts right after.
    public var length: Int
    public var version: Version
    public var command: Command
    public var transport: Transport
    /// The relayed connection's endpoints, or `keepSocket`.
    public var endpoints: Endpoints
    /// v2: where the TLVs lie in the input (all checked to fit, spec §2.2);
    /// walk them with `ProxyTLVs`. Empty for v1 and when there are none.
    public var tlvs: ByteSpan
    /// v2: the `PP2_TYPE_SSL` TLV (spec §2.2.5), when the proxy sent one.
    public var ssl: SSL?

    public enum Version: UInt8, Equatable, Sendable {
        case v1 = 1
        case v2 = 2
    }

    /// v2 §2.2: the low nibble of the 13th byte. v1 headers
    /// are always `proxy`, `PROXY UNKNOWN` included.
    public enum Command: Equatable, Sendable {
        /// The proxy's own connection (a health check): serve it with the
        /// socket's addresses.
        case local
        /// Relayed on behalf of a client.
        case proxy
    }

    /// The relayed connection's transport (v2 §2.2: the low nibble of the 14th byte; v1
    /// `TCP4`/`TCP6` are `stream`).
    public enum Transport: Equatable, Sendable {
        case unspecified
        case stream
        case datagram
    }

    public enum Endpoints: Equatable, Sendable {
        /// Use the socket's own addresses: a `LOCAL` command, the `UNSPEC`
        /// family or v1 `UNKNOWN` (spec §2.1, §2.2).
        case keepSocket
        /// TCP/UDP over IPv4 or IPv6 (`isIPv4` on the addresses tells which).
        case ip(source: IPAddress, sourcePort: UInt16, destination: IPAddress, destinationPort: UInt16)
        /// `AF_UNIX` (v2 only): the paths, as spans of the input with the
        /// NUL padding cut off (an abstract socket name, which starts with
        /// NUL, is an empty span).
        case unix(source: ByteSpan, destination: ByteSpan)
    }

    /// `PP2_TYPE_SSL` (0x20): `client` bits and the `verify` result.
    public struct SSL: Equatable, Sendable {
        /// PP2_CLIENT_SSL (0x01), PP2_CLIENT_CERT_CONN (0x02),
        /// PP2_CLIENT_CERT_SESS (0x04).
        public var client: UInt8
        /// 0 when the client presented a certificate that was verified.
        public var verify: UInt32
        /// The client connected to the proxy over TLS (PP2_CLIENT_SSL).
        public var clientUsedTLS: Bool { client & 0x01 != 0 }
    }
}

extension ProxyHeader {
    /// The relayed client's address and port, when the header names one
    /// (nil: keep the socket's peer).
    public var clientAddress: (address: IPAddress, port: UInt16)? {
        if case .ip(let source, let port, _, _) = endpoints { return (source, port) }
        return nil
    }

    /// The address and port the client connected to at the proxy.
    public var serverAddress: (address: IPAddress, port: UInt16)? {
        if case .ip(_, _, let destination, let port) = endpoints { return (destination, port) }
        return nil
    }
}

/// The outcome of decoding the bytes at the start of a connection.
public enum ProxyHeaderResult: Equatable, Sendable {
    /// No decision yet: read until the buffer holds at least `atLeast`
    /// bytes (in total, from the start of the connection), then decode again.
    case needMoreData(atLeast: Int)
    case complete(ProxyHeader)
    /// Close the connection, without calling the application.
    case failed(ProxyHeaderError)
}
