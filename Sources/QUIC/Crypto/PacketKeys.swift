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
//
// A connection's keys can give their contexts back while it is idle
// (about 1.2 KB for an AEAD, 0.6 KB for header protection) and make them
// again from the key bytes they keep (PacketKeys+Contexts.swift).

import CTLS

/// The raw bytes of a key (16 or 32), kept inline so that a released
/// context can be made again without an allocation of its own.
struct KeyBytes {
    private var storage: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    let count: Int

    init(_ key: [UInt8]) {
        precondition(key.count <= 32, "a QUIC key is at most 32 bytes")
        count = key.count
        withUnsafeMutableBytes(of: &storage) { $0.copyBytes(from: key) }
    }

    func withUnsafeBytes<R>(_ body: (UnsafePointer<UInt8>) -> R) -> R {
        Swift.withUnsafeBytes(of: storage) { body($0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
    }
}

/// An AEAD key with its libcrypto context.
public final class AEADKey: @unchecked Sendable {
    private var context: OpaquePointer?
    /// Kept only by a key whose context may be released (`releasable`).
    private let key: KeyBytes?
    public let suite: CipherSuite
    /// The 12-byte IV the packet number is XORed into (§5.3), inline (an
    /// array was a heap block of its own for every key, issue 15).
    private let ivBytes: (UInt64, UInt32)
    /// The IV as bytes (tests, the Retry tag).
    public var iv: [UInt8] { withUnsafeBytes(of: ivBytes) { Array($0) } }

    /// `releasable`: the key bytes are kept so that `releaseContext` can
    /// give the context back (a connection's keys, PacketKeys); and the
    /// context comes from the handshake heap (PacketKeys+Contexts.swift).
    public init?(suite: CipherSuite, key: [UInt8], iv: [UInt8], releasable: Bool = false) {
        guard key.count == suite.keyLength, iv.count == 12 else { return nil }
        self.key = releasable ? KeyBytes(key) : nil
        self.suite = suite
        var ivBytes: (UInt64, UInt32) = (0, 0)
        withUnsafeMutableBytes(of: &ivBytes) { $0.copyBytes(from: iv) }
        self.ivBytes = ivBytes
        if releasable {
            guard let c = Self.makeContext(suite, self.key!) else { return nil }
            context = c
        } else {
            guard let c = key.withUnsafeBufferPointer({ ctls_quic_aead_new(suite.cValue, $0.baseAddress, $0.count) })
            else { return nil }
            context = c
        }
    }

    deinit { if let context { ctls_quic_aead_free(context) } }

    /// The nonce of packet `pn` (§5.3): the IV with the packet number,
    /// left-padded to 12 bytes, XORed in.
    @inline(__always) func nonce(_ pn: UInt64) -> (UInt64, UInt32) {
        var nonce = ivBytes
        withUnsafeMutableBytes(of: &nonce) { n in
            for i in 0..<8 { n[4 + i] ^= UInt8(truncatingIfNeeded: pn >> (8 * UInt64(7 - i))) }
        }
        return nonce
    }

    /// The context, made again first if it was released.
    @inline(__always) var handle: OpaquePointer {
        if let context { return context }
        return remake()
    }

    /// Whether the context is there (tests and the idle accounting).
    var hasContext: Bool { context != nil }

    /// Frees the context; the next use makes it again. Only a releasable
    /// key (else nothing happens: its bytes are not kept).
    func releaseContext() {
        guard key != nil, let c = context else { return }
        context = nil
        ctls_quic_aead_free(c)
    }

    @inline(never) private func remake() -> OpaquePointer {
        guard let key, let c = Self.makeContext(suite, key) else {
            preconditionFailure("libcrypto refused a packet protection key")
        }
        context = c
        return c
    }

    private static func makeContext(_ suite: CipherSuite, _ key: KeyBytes) -> OpaquePointer? {
        ctls_handshake_heap_enter()
        defer { ctls_handshake_heap_leave() }
        return key.withUnsafeBytes { ctls_quic_aead_new(suite.cValue, $0, key.count) }
    }
}

/// A header protection key with its libcrypto context (§5.4).
public final class HeaderProtectionKey: @unchecked Sendable {
    private var context: OpaquePointer?
    private let key: KeyBytes
    public let suite: CipherSuite

    /// Its context comes from the handshake heap and can be released, as a
    /// releasable AEADKey's (only connections' keys have one).
    public init?(suite: CipherSuite, key: [UInt8]) {
        guard key.count == suite.keyLength else { return nil }
        self.key = KeyBytes(key)
        self.suite = suite
        guard let c = Self.makeContext(suite, self.key) else { return nil }
        context = c
    }

    deinit { if let context { ctls_quic_hp_free(context) } }

    @inline(__always) var handle: OpaquePointer {
        if let context { return context }
        return remake()
    }

    var hasContext: Bool { context != nil }

    func releaseContext() {
        guard let c = context else { return }
        context = nil
        ctls_quic_hp_free(c)
    }

    @inline(never) private func remake() -> OpaquePointer {
        guard let c = Self.makeContext(suite, key) else {
            preconditionFailure("libcrypto refused a header protection key")
        }
        context = c
        return c
    }

    private static func makeContext(_ suite: CipherSuite, _ key: KeyBytes) -> OpaquePointer? {
        ctls_handshake_heap_enter()
        defer { ctls_handshake_heap_leave() }
        return key.withUnsafeBytes { ctls_quic_hp_new(suite.cValue, $0, key.count) }
    }

    /// The 5-byte mask for a 16-byte `sample` (§5.4.1), as the low 40 bits
    /// of the result in wire order (byte 0 in bits 32-39).
    func mask(sample: UnsafeRawPointer) -> (UInt8, UInt8, UInt8, UInt8, UInt8) {
        var m: (UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0)
        let h = handle
        let rc = withUnsafeMutableBytes(of: &m) {
            ctls_quic_hp_mask(h, sample.assumingMemoryBound(to: UInt8.self), $0.baseAddress!.assumingMemoryBound(to: UInt8.self))
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
    /// The traffic secret these keys came from, kept for the next key
    /// update: only by 1-RTT keys (an Initial or Handshake key is never
    /// updated, RFC 9001 §6; each handshake under way would hold four
    /// secrets for nothing, issue 15).
    let secret: [UInt8]
    public let aead: AEADKey
    public let headerProtection: HeaderProtectionKey

    /// Derives key, IV and header protection key from `secret` (§5.1).
    /// `updatable`: 1-RTT keys, which keep the secret for `nextGeneration`.
    public init(suite: CipherSuite, secret: [UInt8], version: QUICVersion, updatable: Bool = true) {
        let labels = KeyLabels.of(version)
        let hash = suite.hash
        let key = HKDF.expandLabel(hash, secret: secret, label: labels.key, length: suite.keyLength)
        let iv = HKDF.expandLabel(hash, secret: secret, label: labels.iv, length: 12)
        let hp = HKDF.expandLabel(hash, secret: secret, label: labels.hp, length: suite.keyLength)
        // The lengths match the suite by construction, so only a libcrypto
        // failure (out of memory) could refuse them.
        guard let aead = AEADKey(suite: suite, key: key, iv: iv, releasable: true),
              let protection = HeaderProtectionKey(suite: suite, key: hp) else {
            preconditionFailure("libcrypto refused a packet protection key")
        }
        self.init(suite: suite, version: version, secret: updatable ? secret : [], aead: aead, headerProtection: protection)
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
        precondition(!secret.isEmpty, "only 1-RTT keys are updated")
        let labels = KeyLabels.of(version)
        let hash = suite.hash
        let next = HKDF.expandLabel(hash, secret: secret, label: labels.ku, length: hash.length)
        let key = HKDF.expandLabel(hash, secret: next, label: labels.key, length: suite.keyLength)
        let iv = HKDF.expandLabel(hash, secret: next, label: labels.iv, length: 12)
        guard let aead = AEADKey(suite: suite, key: key, iv: iv, releasable: true) else {
            preconditionFailure("libcrypto refused a packet protection key")
        }
        return PacketKeys(suite: suite, version: version, secret: next, aead: aead, headerProtection: headerProtection)
    }
}
