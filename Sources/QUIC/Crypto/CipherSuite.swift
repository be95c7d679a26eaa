// The TLS 1.3 cipher suites QUIC packet protection uses (RFC 9001 §5.3),
// with their key sizes and the hash their HKDF runs on.

import CTLS

public enum CipherSuite: UInt16, Sendable, CaseIterable {
    case aes128GCM = 0x1301
    case aes256GCM = 0x1302
    case chacha20Poly1305 = 0x1303

    /// The AEAD key length; header protection keys have the same length
    /// (RFC 9001 §5.4.3, §5.4.4).
    public var keyLength: Int { self == .aes128GCM ? 16 : 32 }

    /// TLS_AES_256_GCM_SHA384 derives with SHA-384; the others with SHA-256.
    public var hash: HKDF.Hash { self == .aes256GCM ? .sha384 : .sha256 }

    var cValue: Int32 { Int32(rawValue) }
}
