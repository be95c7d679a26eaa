// Packet protection keys of one direction and one key phase (RFC 9001
// §5.1, §6).
//
// From a traffic secret come the AEAD key, the IV and the header-protection
// key, with labels that depend on the QUIC version ("quic key" / "quicv2
// key", RFC 9369 §3.3.2). Each key becomes a libcrypto context once, here,
// so per-packet work allocates nothing. A key update (§6.1) derives the next
// secret with "quic ku" and new AEAD key and IV from it; the header
// protection key does not change ("The header protection key is not
// updated"), so the next generation shares it.

import CTLS

/// An AEAD key with its libcrypto context.
public final class AEADKey: @unchecked Sendable {
    let handle: OpaquePointer
    public let suite: CipherSuite
    /// The 12-byte IV the packet number is XORed into (§5.3).
    public let iv: [UInt8]

    public init?(suite: CipherSuite, key: [UInt8], iv: [UInt8]) {
        guard key.count == suite.keyLength, iv.count == 12,
              let h = key.withUnsafeBufferPointer({ ctls_quic_aead_new(suite.cValue, $0.baseAddress, $0.count) })
        else { return nil }
        handle = h
        self.suite = suite
        self.iv = iv
    }

    deinit { ctls_quic_aead_free(handle) }
}

/// A header protection key with its libcrypto context (§5.4).
public final class HeaderProtectionKey: @unchecked Sendable {
    let handle: OpaquePointer
    public let suite: CipherSuite

    public init?(suite: CipherSuite, key: [UInt8]) {
        guard key.count == suite.keyLength,
              let h = key.withUnsafeBufferPointer({ ctls_quic_hp_new(suite.cValue, $0.baseAddress, $0.count) })
        else { return nil }
        handle = h
        self.suite = suite
    }

    deinit { ctls_quic_hp_free(handle) }

    /// The 5-byte mask for a 16-byte `sample` (§5.4.1), as the low 40 bits
    /// of the result in wire order (byte 0 in bits 32-39).
    func mask(sample: UnsafeRawPointer) -> (UInt8, UInt8, UInt8, UInt8, UInt8) {
        var m: (UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0)
        let rc = withUnsafeMutableBytes(of: &m) {
            ctls_quic_hp_mask(handle, sample.assumingMemoryBound(to: UInt8.self), $0.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        precondition(rc == 0, "header protection mask failed in libcrypto")
        return m
    }
}

/// The labels of packet protection key derivation for a version.
public struct KeyLabels: Sendable {
    public let key: StaticString
    public let iv: StaticString
    public let hp: StaticString
    public let ku: StaticString

    /// RFC 9001 §5.1, §6.1; RFC 9369 §3.3.2.
    public static func of(_ version: QUICVersion) -> KeyLabels {
        version == .v2 ? KeyLabels(key: "quicv2 key", iv: "quicv2 iv", hp: "quicv2 hp", ku: "quicv2 ku")
            : KeyLabels(key: "quic key", iv: "quic iv", hp: "quic hp", ku: "quic ku")
    }
}

/// Everything needed to protect or unprotect packets in one direction.
///
/// The libcrypto contexts hold per-call state (the nonce being processed),
/// so one set of keys is used by one connection on one thread at a time —
/// as a connection's keys are; the `Sendable` conformance only lets a
/// connection move between threads, never be shared by two at once.
public struct PacketKeys: Sendable {
    public let suite: CipherSuite
    public let version: QUICVersion
    /// The traffic secret these keys came from (kept for the next key update).
    public let secret: [UInt8]
    public let aead: AEADKey
    public let headerProtection: HeaderProtectionKey

    /// Derives key, IV and header protection key from `secret` (§5.1).
    public init(suite: CipherSuite, secret: [UInt8], version: QUICVersion) {
        let labels = KeyLabels.of(version)
        let hash = suite.hash
        let key = HKDF.expandLabel(hash, secret: secret, label: labels.key, length: suite.keyLength)
        let iv = HKDF.expandLabel(hash, secret: secret, label: labels.iv, length: 12)
        let hp = HKDF.expandLabel(hash, secret: secret, label: labels.hp, length: suite.keyLength)
        // The lengths match the suite by construction, so only a libcrypto
        // failure (out of memory) could refuse them.
        guard let aead = AEADKey(suite: suite, key: key, iv: iv),
              let protection = HeaderProtectionKey(suite: suite, key: hp) else {
            preconditionFailure("libcrypto refused a packet protection key")
        }
        self.init(suite: suite, version: version, secret: secret, aead: aead, headerProtection: protection)
    }

    init(suite: CipherSuite, version: QUICVersion, secret: [UInt8], aead: AEADKey, headerProtection: HeaderProtectionKey) {
        self.suite = suite
        self.version = version
        self.secret = secret
        self.aead = aead
        self.headerProtection = headerProtection
    }

    /// The keys of the next key phase (§6.1): secret_<n+1> =
    /// HKDF-Expand-Label(secret_<n>, "quic ku", "", Hash.length); same
    /// header protection key.
    public func nextGeneration() -> PacketKeys {
        let labels = KeyLabels.of(version)
        let hash = suite.hash
        let next = HKDF.expandLabel(hash, secret: secret, label: labels.ku, length: hash.length)
        let key = HKDF.expandLabel(hash, secret: next, label: labels.key, length: suite.keyLength)
        let iv = HKDF.expandLabel(hash, secret: next, label: labels.iv, length: 12)
        guard let aead = AEADKey(suite: suite, key: key, iv: iv) else {
            preconditionFailure("libcrypto refused a packet protection key")
        }
        return PacketKeys(suite: suite, version: version, secret: next, aead: aead, headerProtection: headerProtection)
    }
}
