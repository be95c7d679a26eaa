// The seam between the QUIC connection and TLS (RFC 9001 §4).
//
// QUIC carries the TLS handshake in CRYPTO frames and takes its packet
// protection keys from TLS, but never sees TLS records: per encryption level
// TLS hands over handshake bytes to send and traffic secrets as they are
// derived, and takes the bytes the peer sent at a level, in order (RFC 9001
// §4.1.3). The connection drives one `CryptoHandshake`; the worker supplies
// one made over OpenSSL (TLS/QUICHandshakeSession.swift), and the QUIC tests
// can supply a scripted one. The handshake is not a hot path: an existential
// call per CRYPTO frame is fine.

import Core

/// QUIC's encryption levels (RFC 9001 §4.1.4), in the order they come.
/// 0-RTT exists on the wire but this server never accepts early data.
public enum EncryptionLevel: Int, Sendable, CaseIterable, Comparable {
    case initial = 0
    case earlyData = 1
    case handshake = 2
    case application = 3

    public static func < (a: EncryptionLevel, b: EncryptionLevel) -> Bool { a.rawValue < b.rawValue }
}

/// Which way a traffic secret protects packets.
public enum SecretDirection: Sendable, Equatable {
    /// Removes protection from the peer's packets.
    case read
    /// Protects the packets this endpoint sends.
    case write
}

/// What a handshake produced, in the order it produced it.
public enum HandshakeEvent: Sendable, Equatable {
    /// Handshake bytes to send in CRYPTO frames at `level` (they continue the
    /// level's CRYPTO stream where the last `send` at that level ended).
    case send(EncryptionLevel, [UInt8])
    /// A traffic secret for `level` (handshake or application) and the suite
    /// it is used with. A read secret for a level always comes before any
    /// bytes the peer can only send under it are expected.
    case secret(EncryptionLevel, SecretDirection, CipherSuite, [UInt8])
    /// The handshake is complete (RFC 9001 §4.1.1; for a server: the
    /// client's Finished was received and verified). Bytes sent after this
    /// (session tickets) come as `.send(.application, ...)`.
    case complete
}

/// Why a handshake failed: the TLS alert it ends with (the connection closes
/// with CRYPTO_ERROR 0x100 + alert, RFC 9001 §4.8) and a reason for the log.
public struct HandshakeFailure: Error, Sendable, Equatable {
    public var alert: UInt8
    public var reason: String

    public init(alert: UInt8, reason: String) {
        self.alert = alert
        self.reason = reason
    }

    /// The transport error code this failure closes the connection with.
    public var transportErrorCode: UInt64 { 0x100 + UInt64(alert) }
}

/// One TLS 1.3 handshake as QUIC drives it. A server-side handshake is made
/// with this endpoint's encoded transport parameters already in it (they go
/// into EncryptedExtensions, RFC 9001 §8.2).
public protocol CryptoHandshake: AnyObject {
    /// Takes CRYPTO stream bytes the peer sent at `level`, in stream order,
    /// with no gaps (the connection reassembles). Events it causes are
    /// queued for `nextEvent()`.
    func receive(_ bytes: UnsafeRawBufferPointer, at level: EncryptionLevel) throws(HandshakeFailure)

    /// The oldest event not yet taken, or nil.
    func nextEvent() -> HandshakeEvent?

    /// The body of the peer's quic_transport_parameters extension (0x39),
    /// once the peer's hello has been read; nil before. A handshake refuses
    /// a peer hello without the extension (missing_extension alert).
    var peerTransportParameters: [UInt8]? { get }

    /// Server, before the peer's hello goes to `receive`: where the body of
    /// its quic_transport_parameters extension lies in `bytes`, the start of
    /// the Initial CRYPTO stream (compatible version negotiation reads the
    /// client's version_information before we answer, RFC 9368 §2.2).
    func peekHelloTransportParameters(_ bytes: UnsafeRawBufferPointer) -> ClientHelloPeek

    /// Server, before the peer's hello goes to `receive`: our encoded
    /// transport parameters change (the negotiated version is named in them).
    func replaceLocalTransportParameters(_ encoded: [UInt8])

    /// The negotiated ALPN protocol (e.g. "h3" as bytes), once chosen.
    var negotiatedProtocol: [UInt8]? { get }

    /// Whether the handshake resumed a session (no certificate was sent).
    var isResumed: Bool { get }

    /// Server, once the handshake is complete and every event (the session
    /// tickets among them) has been taken: TLS has nothing left to do in
    /// QUIC (key updates are QUIC's, RFC 9001 §6), so it may free its state,
    /// keeping `negotiatedProtocol` and `isResumed`. Any CRYPTO bytes
    /// `receive` takes afterwards fail with unexpected_message (§4.1.3).
    func releaseAfterHandshake()
}
