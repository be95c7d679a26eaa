// How much one AEAD key may protect and how many forgeries a connection
// tolerates (RFC 9001 §6.6).
//
// The confidentiality limit counts packets encrypted under one key: before
// it is reached the key must be replaced by a key update (§6.1). The
// integrity limit counts received packets that fail authentication across
// all keys of a connection: past it the connection is closed with
// AEAD_LIMIT_REACHED. AES-128-CCM (2^21.5 each) is not a suite we offer.

public struct AEADLimits: Sendable, Equatable {
    /// Packets one key may encrypt; nil when the limit lies beyond the
    /// packet number space (ChaCha20-Poly1305: "greater than the number of
    /// possible packets (2^62) and so can be disregarded").
    public var confidentiality: UInt64?
    /// Received packets that may fail authentication in one connection.
    public var integrity: UInt64

    public init(confidentiality: UInt64?, integrity: UInt64) {
        self.confidentiality = confidentiality
        self.integrity = integrity
    }
}

extension CipherSuite {
    /// RFC 9001 §6.6: AES-GCM 2^23 encrypted packets and 2^52 invalid
    /// packets; ChaCha20-Poly1305 no practical confidentiality limit and
    /// 2^36 invalid packets.
    public var aeadLimits: AEADLimits {
        switch self {
        case .aes128GCM, .aes256GCM: AEADLimits(confidentiality: 1 << 23, integrity: 1 << 52)
        case .chacha20Poly1305: AEADLimits(confidentiality: nil, integrity: 1 << 36)
        }
    }
}
