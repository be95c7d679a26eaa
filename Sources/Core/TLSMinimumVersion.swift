/// The lowest TLS version the server accepts over TCP (`--tls-min-version`).
/// QUIC always runs TLS 1.3 (RFC 9001 §4.2), whatever this says.
public enum TLSMinimumVersion: String, Sendable {
    /// TLS 1.2 (RFC 5246) and 1.3: the default.
    case tls12 = "1.2"
    /// TLS 1.3 (RFC 8446) only: a 1.2-only client gets a protocol_version
    /// alert.
    case tls13 = "1.3"

    /// The ProtocolVersion value on the wire (RFC 8446 §4.2.1).
    public var wireValue: Int32 {
        switch self {
        case .tls12: 0x0303
        case .tls13: 0x0304
        }
    }
}
