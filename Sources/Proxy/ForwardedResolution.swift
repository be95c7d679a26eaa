/// What the forwarding fields of a request from a trusted proxy change.
/// Every property is nil when that part stays as the socket says.
public struct ForwardedResolution: Equatable {
    /// The client: the rightmost hop that is not trusted (or the leftmost,
    /// when every hop is). Nil: keep the socket peer (no usable chain, or
    /// the chosen hop had no valid `for`).
    public var client: ForwardedNode?
    /// The scheme the client used (`http`/`https`; the caller maps to
    /// `ws`/`wss` for a WebSocket).
    public var scheme: ForwardedScheme?
    /// The Host the client sent: `uri-host [ ":" port ]`, validated.
    public var host: FieldSlice?
    /// The server port the client used: `X-Forwarded-Port`, else the port
    /// in `host`. When nil and `host` is set, the scheme's default applies
    /// (80/443) — the caller decides.
    public var port: UInt16?
    /// Which fields the answer came from.
    public var source: Source

    public enum Source: Equatable, Sendable {
        /// The peer is not trusted, or it sent no usable field.
        case none
        /// RFC 7239 `Forwarded`.
        case forwarded
        /// `X-Forwarded-For` / `-Proto` / `-Host` / `-Port`.
        case xForwarded
    }

    public init(client: ForwardedNode? = nil, scheme: ForwardedScheme? = nil, host: FieldSlice? = nil,
                port: UInt16? = nil, source: Source = .none) {
        self.client = client
        self.scheme = scheme
        self.host = host
        self.port = port
        self.source = source
    }

    /// Nothing changes: untrusted peer, or no forwarding field.
    public static var unchanged: ForwardedResolution { ForwardedResolution() }

    /// True when the request keeps what the socket says.
    public var isUnchanged: Bool { client == nil && scheme == nil && host == nil && port == nil }
}
