// Address-validation tokens (RFC 9000 §8.1.2 Retry, §8.1.3 NEW_TOKEN,
// §8.1.4 token integrity).
//
// A token is stateless: everything the server needs to trust it travels in
// it, sealed with AES-128-GCM under a key every worker of one supervisor
// generation derives from the secret they share (the TLS ticket secret), so
// a token one worker minted validates on any other:
//
//   Token {
//     Kind (8),                       // AEAD associated data: 'R' Retry, 'N' NEW_TOKEN
//     Nonce (96),                     // random per token
//     Sealed {
//       Issued (64),                  // the minting worker's monotonic clock, ns
//       Family (8), Address (128), Port (16),   // port 0 in NEW_TOKEN tokens
//       [Retry only] ODCID Length (8), ODCID (..), RSCID Length (8), RSCID (..),
//     },
//     Tag (128),
//   }
//
// A Retry token binds the client's full address (its next Initial comes
// from the same socket), the Destination Connection ID of its first Initial
// (which becomes original_destination_connection_id, §7.3) and the Source
// Connection ID of our Retry (which the client's next Initial must carry as
// its Destination Connection ID, and which becomes
// retry_source_connection_id); it lives `retryLifetime`. A NEW_TOKEN token
// binds only the IP address, since "a client is likely to use a different
// port" on a later connection (§8.1.3), and lives `newTokenLifetime`.
//
// The clock is CLOCK_MONOTONIC, which all worker processes of a host share;
// the key changes with each supervisor generation, so tokens never outlive
// it.

import Core
import CTLS

public final class AddressTokens {
    public enum Kind: UInt8, Sendable {
        case retry = 0x52
        case newToken = 0x4e
    }

    /// What a token proved.
    public enum Validation: Equatable, Sendable {
        /// A Retry token for this address and Destination Connection ID.
        case retry(originalDestinationID: ConnectionID, retrySourceID: ConnectionID)
        /// A NEW_TOKEN token for this address; `nonce` identifies it (reuse
        /// is limited by the endpoint, §8.1.4).
        case newToken(nonce: TokenNonce)
        /// Not ours, tampered with, expired, or for another address or
        /// connection ID.
        case invalid
    }

    /// §8.1.2: a Retry token is used at once; seconds are plenty for a
    /// round trip and a retransmitted Initial.
    public static let retryLifetime: Int64 = 10_000_000_000
    /// §8.1.3: a NEW_TOKEN token is for a later connection: 24 hours.
    public static let newTokenLifetime: Int64 = 86_400_000_000_000
    static let nonceLength = 12
    static let tagLength = 16
    static let addressLength = 1 + 16 + 2
    /// The largest token we mint (a Retry token with 20-byte IDs).
    public static let maxLength = 1 + nonceLength + 8 + addressLength + 2 * (1 + ConnectionID.maxLength) + tagLength

    private let aead: AEADKey

    /// `secret`: the shared secret of the supervisor generation (any
    /// length; a random one makes tokens valid on this endpoint only).
    public init(secret: [UInt8]) {
        let prk = secret.withUnsafeBytes { HKDF.extract(.sha256, salt: Array("peregrine address tokens".utf8), inputKeyingMaterial: $0) }
        let key = HKDF.expandLabel(.sha256, secret: prk, label: "peregrine token key", length: 16)
        guard let aead = AEADKey(suite: .aes128GCM, key: key, iv: [UInt8](repeating: 0, count: 12)) else {
            preconditionFailure("libcrypto refused the address-token key")
        }
        self.aead = aead
    }

    // MARK: minting

    /// A Retry token (§8.1.2).
    public func mintRetry(address: SocketAddress, originalDestinationID: ConnectionID, retrySourceID: ConnectionID,
                          now: Instant) -> [UInt8] {
        mint(.retry, address: address, extra: 2 + originalDestinationID.count + retrySourceID.count, now: now) { w in
            w.connectionID(originalDestinationID)
            w.connectionID(retrySourceID)
        }
    }

    /// A token for a NEW_TOKEN frame (§8.1.3), bound to the IP address only.
    public func mintNewToken(address: SocketAddress, now: Instant) -> [UInt8] {
        var a = address
        a.port = 0
        return mint(.newToken, address: a, extra: 0, now: now) { _ in }
    }

    private func mint(_ kind: Kind, address: SocketAddress, extra: Int, now: Instant,
                      _ rest: (inout WireWriter) -> Void) -> [UInt8] {
        let plainLength = 8 + Self.addressLength + extra
        var plain = [UInt8](repeating: 0, count: plainLength)
        plain.withUnsafeMutableBytes { p in
            var w = WireWriter(p, size: plainLength)
            w.uint64(UInt64(bitPattern: now.nanoseconds))
            Self.writeAddress(address, &w)
            rest(&w)
            _ = w.finish()
        }
        var out = [UInt8](repeating: 0, count: 1 + Self.nonceLength + plainLength + Self.tagLength)
        out[0] = kind.rawValue
        var nonce = (UInt64.random(in: 0...UInt64.max), UInt32.random(in: 0...UInt32.max))
        withUnsafeBytes(of: &nonce) { n in
            for i in 0..<Self.nonceLength { out[1 + i] = n[i] }
        }
        out.withUnsafeMutableBufferPointer { o in
            let base = o.baseAddress!
            (base + 1 + Self.nonceLength).update(from: plain, count: plainLength)
            let rc = ctls_quic_aead_seal(aead.handle, base + 1, base, 1, base + 1 + Self.nonceLength, plainLength,
                                         base + 1 + Self.nonceLength + plainLength)
            precondition(rc == 0, "address-token seal failed in libcrypto")
        }
        return out
    }

    // MARK: validating

    /// Opens `token` from an Initial sent by `address` to
    /// `destinationID`. The token's bytes are copied, never changed (they
    /// are part of the Initial's header, its packet protection's AAD).
    public func validate(_ token: UnsafeRawBufferPointer, address: SocketAddress, destinationID: ConnectionID,
                         now: Instant) -> Validation {
        let sealedLength = token.count - 1 - Self.nonceLength
        guard sealedLength >= Self.tagLength + 8 + Self.addressLength, token.count <= Self.maxLength,
              let kind = Kind(rawValue: token[0]) else { return .invalid }
        let plainLength = sealedLength - Self.tagLength
        return withUnsafeTemporaryAllocation(byteCount: token.count, alignment: 1) { copy -> Validation in
            copy.copyMemory(from: token)
            let base = copy.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let rc = ctls_quic_aead_open(aead.handle, base + 1, base, 1, base + 1 + Self.nonceLength, plainLength,
                                         base + 1 + Self.nonceLength + plainLength)
            guard rc == 0 else { return .invalid }
            var r = WireReader(UnsafeRawBufferPointer(copy), from: 1 + Self.nonceLength, to: 1 + Self.nonceLength + plainLength,
                               truncated: .invalidToken)
            guard let issued = try? r.uint64(), let bound = Self.readAddress(&r) else { return .invalid }
            let age = now.nanoseconds &- Int64(bitPattern: issued)
            let lifetime = kind == .retry ? Self.retryLifetime : Self.newTokenLifetime
            // A token from the future is as suspect as an old one (clocks
            // are shared, so it cannot happen honestly).
            guard age >= 0 && age <= lifetime else { return .invalid }
            switch kind {
            case .retry:
                guard Self.sameHost(bound, address, port: true), let odcid = Self.readConnectionID(&r),
                      let rscid = Self.readConnectionID(&r), r.isAtEnd, rscid == destinationID else { return .invalid }
                return .retry(originalDestinationID: odcid, retrySourceID: rscid)
            case .newToken:
                guard Self.sameHost(bound, address, port: false), r.isAtEnd else { return .invalid }
                return .newToken(nonce: TokenNonce(UnsafeRawBufferPointer(rebasing: token[1..<(1 + Self.nonceLength)])))
            }
        }
    }

    private static func writeAddress(_ a: SocketAddress, _ w: inout WireWriter) {
        w.uint8(a.family.rawValue)
        w.uint64(a.high)
        w.uint64(a.low)
        w.uint16(a.port)
    }

    /// Address equality as a token binds it: family, address bytes and
    /// (for Retry) port; the IPv6 scope is the local interface, not the
    /// client's identity.
    private static func sameHost(_ bound: SocketAddress, _ a: SocketAddress, port: Bool) -> Bool {
        bound.family == a.family && bound.high == a.high && bound.low == a.low && (!port || bound.port == a.port)
    }

    private static func readConnectionID(_ r: inout WireReader) -> ConnectionID? {
        guard let n = try? r.uint8(), n <= ConnectionID.maxLength, let span = try? r.span(Int(n)) else { return nil }
        return ConnectionID(r.bytes.slice(span))
    }

    private static func readAddress(_ r: inout WireReader) -> SocketAddress? {
        guard let f = try? r.uint8(), let family = SocketAddress.Family(rawValue: f),
              let high = try? r.uint64(), let low = try? r.uint64(), let port = try? r.uint16() else { return nil }
        return SocketAddress(family: family, port: port, high: high, low: low)
    }
}

/// A token's 96-bit nonce, which names it for reuse checks.
public struct TokenNonce: Hashable, Sendable {
    var high: UInt64
    var low: UInt32

    init(_ bytes: UnsafeRawBufferPointer) {
        var h: UInt64 = 0, l: UInt32 = 0
        for i in 0..<8 { h = h << 8 | UInt64(bytes[i]) }
        for i in 8..<12 { l = l << 8 | UInt32(bytes[i]) }
        high = h
        low = l
    }
}
