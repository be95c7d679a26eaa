// One QUIC connection's TLS 1.3 handshake over OpenSSL: the
// `QUIC.CryptoHandshake` the worker gives each connection. CTLS/quic_tls.c
// does the translation (secrets from OpenSSL's key log, handshake messages
// from its message callback, the peer's CRYPTO bytes wrapped back into TLS
// records); this class turns its events and failures into the seam's types.

import CTLS
import Core
import QUIC

/// A TLS 1.3 handshake as a QUIC connection drives it (RFC 9001 §4), on the
/// server (`QUICTLSContext.makeSession`) or the client
/// (`QUICTLSClientContext.makeSession`).
///
///     try tls.receive(cryptoBytes, at: .initial)
///     while let event = tls.nextEvent() {
///         switch event {
///         case .send(let level, let bytes): queueCrypto(bytes, at: level)
///         case .secret(let level, let direction, let suite, let secret): installKeys(...)
///         case .complete: handshakeComplete()
///         }
///     }
///
/// A failure is sticky: once `receive` has thrown, it throws the same
/// `HandshakeFailure` again (`failure`). The events queued before the
/// failure can still be taken; an alert OpenSSL meant to send is not an
/// event (it becomes the failure: CONNECTION_CLOSE with 0x100 + alert).
public final class QUICHandshakeSession: CryptoHandshake {
    let raw: OpaquePointer
    /// The context the C connection points into, kept alive with it.
    let context: AnyObject

    init(raw: OpaquePointer, context: AnyObject) {
        self.raw = raw
        self.context = context
    }

    deinit { ctls_quic_tls_conn_free(raw) }

    public func receive(_ bytes: UnsafeRawBufferPointer, at level: EncryptionLevel) throws(HandshakeFailure) {
        let data = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        guard ctls_quic_tls_conn_receive(raw, Int32(level.rawValue), data, bytes.count) == 0 else {
            throw failure ?? HandshakeFailure(alert: 80, reason: "TLS handshake failed")
        }
    }

    public func nextEvent() -> HandshakeEvent? {
        var event = ctls_quic_tls_event()
        guard ctls_quic_tls_conn_next_event(raw, &event) == 1 else { return nil }
        // The C layer only reports the levels and suites below.
        let level = EncryptionLevel(rawValue: Int(event.level))!
        // A 1-RTT secret is kept by the connection's keys for key updates
        // (PacketKeys), so it is made where the connection's blocks are
        // (AllocationZone); the rest goes with the handshake.
        let kept = level == .application && event.kind != CTLS_QUIC_EVENT_SEND
        let zone = AllocationZone.connection.enter(if: kept)
        let bytes = event.len == 0 ? [] : Array(UnsafeBufferPointer(start: event.data, count: event.len))
        AllocationZone.restore(zone)
        switch event.kind {
        case CTLS_QUIC_EVENT_SEND:
            return .send(level, bytes)
        case CTLS_QUIC_EVENT_READ_SECRET, CTLS_QUIC_EVENT_WRITE_SECRET:
            let suite = CipherSuite(rawValue: UInt16(event.suite))!
            return .secret(level, event.kind == CTLS_QUIC_EVENT_READ_SECRET ? .read : .write, suite, bytes)
        default:
            return .complete
        }
    }

    public func peekHelloTransportParameters(_ bytes: UnsafeRawBufferPointer) -> ClientHelloPeek {
        ClientHelloPeek.transportParameters(in: bytes)
    }

    public func replaceLocalTransportParameters(_ encoded: [UInt8]) {
        let rc = encoded.withUnsafeBufferPointer { ctls_quic_tls_conn_set_transport_parameters(raw, $0.baseAddress, $0.count) }
        precondition(rc == 0, "out of memory replacing QUIC transport parameters")
    }

    public var peerTransportParameters: [UInt8]? {
        var n = 0
        guard let p = ctls_quic_tls_conn_peer_transport_parameters(raw, &n) else { return nil }
        return Array(UnsafeBufferPointer(start: p, count: n))
    }

    public var negotiatedProtocol: [UInt8]? {
        var p: UnsafePointer<UInt8>?
        var n = 0
        ctls_quic_tls_conn_alpn(raw, &p, &n)
        guard let p, n > 0 else { return nil }
        return Array(UnsafeBufferPointer(start: p, count: n))
    }

    public var isResumed: Bool { ctls_quic_tls_conn_resumed(raw) == 1 }

    /// Gives the heap's free pages back to the system (glibc `malloc_trim`):
    /// what a burst of handshakes freed between longer-lived blocks. Costly
    /// (it walks the heap): for after such a burst, never per request.
    public static func trimHeap() -> Bool { ctls_quic_tls_trim_heap() == 1 }

    /// Frees OpenSSL's connection once a server's handshake is over and its
    /// events are taken (CTLS `ctls_quic_tls_conn_release`); the facts
    /// above stay. Does nothing on a client (its NewSessionTicket comes
    /// after the handshake) or before the handshake is complete.
    public func releaseAfterHandshake() {
        _ = ctls_quic_tls_conn_release(raw)
    }

    /// Whether `releaseAfterHandshake` has freed OpenSSL's connection.
    public var isReleased: Bool { ctls_quic_tls_conn_released(raw) == 1 }

    /// OpenSSL connections of QUIC handshakes alive in this process.
    public static var liveCount: Int { ctls_quic_tls_live_connections() }

    /// Why the handshake failed, once it has.
    public var failure: HandshakeFailure? {
        var reason: UnsafePointer<CChar>?
        let alert = ctls_quic_tls_conn_failure(raw, &reason)
        guard alert != 0 else { return nil }
        return HandshakeFailure(alert: UInt8(truncatingIfNeeded: alert), reason: reason.map { String(cString: $0) } ?? "")
    }

    /// The negotiated cipher suite, once chosen.
    public var cipherSuite: CipherSuite? {
        CipherSuite(rawValue: UInt16(truncatingIfNeeded: ctls_quic_tls_conn_cipher_suite(raw)))
    }

    /// Server: the index (in the context's `pairs`) of the certificate SNI
    /// chose; nil on a client.
    public var certificateIndex: Int? {
        let i = ctls_quic_tls_conn_pair_index(raw)
        return i < 0 ? nil : Int(i)
    }

    /// Client: the session the server's latest NewSessionTicket made,
    /// serialized, for `QUICTLSClientContext.makeSession(resuming:)`.
    public var sessionTicket: [UInt8]? {
        var n = 0
        guard let p = ctls_quic_tls_conn_session(raw, &n) else { return nil }
        return Array(UnsafeBufferPointer(start: p, count: n))
    }

    /// Client: the OCSP response the server stapled (DER), if the context
    /// asked for one (`requestOCSPStatus`) and the server sent it.
    public var stapledOCSPResponse: [UInt8]? {
        var n = 0
        guard let p = ctls_quic_tls_conn_stapled_ocsp(raw, &n) else { return nil }
        return Array(UnsafeBufferPointer(start: p, count: n))
    }
}
