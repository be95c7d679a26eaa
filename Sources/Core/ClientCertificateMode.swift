/// Whether the server asks for client certificates (mTLS).
public enum ClientCertificateMode: String, Sendable {
    /// Not asked for.
    case off
    /// Asked for; a client without one (or with one that does not verify)
    /// still connects, and the application sees the verification result.
    case optional
    /// Asked for and verified; without a valid one the handshake fails.
    case required
}
