// TLS configuration for QUIC (RFC 9001): the server context a worker's QUIC
// connections share, and a client context for tests and a later client.
// The handshake itself is QUICHandshakeSession.swift; the OpenSSL work is
// CTLS/quic_tls.c.

import CTLS
import Core

/// The server side of TLS for QUIC, shared by every QUIC connection of a
/// worker, made from the same inputs as the TCP `TLSContext`: TLS 1.3 only
/// (AES-GCM and ChaCha20-Poly1305, RFC 9001 §5.3), elliptic-curve key
/// exchange only (a finite-field group would cost the server milliseconds
/// per Initial packet), ALPN `h3` only (any other offer is refused with no_application_protocol),
/// the same certificate pairs chosen by SNI the same way, session tickets
/// under keys derived from the same shared secret (so a ticket from one
/// worker resumes on another), no early data (tickets allow none), and a
/// ClientHello without QUIC transport parameters refused (missing_extension).
/// A ticket from TLS over TCP never resumes a QUIC session, nor the reverse.
///
///     let context = try QUICTLSContext(pairs: pairs, ticketSecret: secret)
///     let tls = context.makeSession(transportParameters: encodedParameters)!
///     // per CRYPTO frame reassembled at `level`:
///     try tls.receive(bytes, at: level)   // throws HandshakeFailure
///     while let event = tls.nextEvent() { ... }
public final class QUICTLSContext {
    let raw: OpaquePointer

    /// Builds the context, loading and checking every file now.
    /// - Parameters:
    ///   - pairs: certificate chain and key files; the first pair answers
    ///     clients whose SNI name matches no certificate (or who send none).
    ///   - ticketSecret: shared secret session-ticket keys are derived from;
    ///     nil leaves tickets to OpenSSL's per-process key.
    ///   - ticketPeriodSeconds: a ticket key is current for this long and
    ///     accepted for one more period.
    ///   - keyPassword: the password of encrypted keys (nil: an encrypted
    ///     key is refused, never prompted for).
    ///
    /// A pair's OCSP response is stapled as over TCP (in the leaf's
    /// CertificateEntry, RFC 8446 §4.4.2.1).
    public init(pairs: [TLSCertificatePair], ticketSecret: [UInt8]? = nil,
                ticketPeriodSeconds: Int = 3600, keyPassword: [UInt8]? = nil) throws(TLSConfigurationError) {
        precondition(!pairs.isEmpty, "QUICTLSContext needs a certificate")
        var err = [CChar](repeating: 0, count: 512)
        guard let server = ctls_quic_tls_server_new(&err, err.count) else {
            throw TLSConfigurationError(message: text(err))
        }
        raw = server
        if let keyPassword {
            _ = keyPassword.withUnsafeBufferPointer { p in
                p.withMemoryRebound(to: CChar.self) { ctls_quic_tls_server_set_key_password(raw, $0.baseAddress, $0.count) }
            }
        }
        if let secret = ticketSecret, !secret.isEmpty {
            _ = ctls_quic_tls_server_set_ticket_secret(raw, secret, secret.count, Int32(ticketPeriodSeconds))
        }
        for (index, p) in pairs.enumerated() {
            guard ctls_quic_tls_server_add_pair(raw, p.certificate, p.key, &err, err.count) == 0 else {
                throw TLSConfigurationError(message: text(err))
            }
            // Expiry was warned about by the TCP context, made from the same pairs.
            if let ocsp = p.ocspResponse, ctls_quic_tls_server_set_ocsp(raw, Int32(index), ocsp, &err, err.count) < 0 {
                throw TLSConfigurationError(message: text(err))
            }
        }
    }

    deinit { ctls_quic_tls_server_free(raw) }

    /// A server handshake that sends `transportParameters` (this endpoint's,
    /// encoded, RFC 9000 §18) in its EncryptedExtensions. It waits for the
    /// client's Initial CRYPTO bytes. Nil if OpenSSL cannot make one.
    public func makeSession(transportParameters: [UInt8]) -> QUICHandshakeSession? {
        let conn = transportParameters.withUnsafeBufferPointer {
            ctls_quic_tls_conn_new_server(raw, $0.baseAddress, $0.count)
        }
        guard let conn else { return nil }
        return QUICHandshakeSession(raw: conn, context: self)
    }
}

/// The client side of TLS for QUIC: TLS 1.3, the client's cipher suites,
/// optionally verifying the server's certificate and name.
public final class QUICTLSClientContext {
    let raw: OpaquePointer

    /// - Parameters:
    ///   - cipherSuites: an OpenSSL TLS 1.3 suite list, such as
    ///     "TLS_CHACHA20_POLY1305_SHA256" (nil: the three QUIC uses).
    ///   - groups: an OpenSSL key exchange group list, such as
    ///     "P-256:X25519"; the first one's key share is sent (nil: OpenSSL's
    ///     default).
    ///   - trustedCertificates: a PEM bundle the server's certificate must
    ///     chain to, its name checked against the server name (nil: none
    ///     verified).
    ///   - requestOCSPStatus: send status_request, so the server staples
    ///     its OCSP response (`QUICHandshakeSession.stapledOCSPResponse`).
    public init(cipherSuites: String? = nil, groups: String? = nil,
                trustedCertificates: String? = nil, requestOCSPStatus: Bool = false) throws(TLSConfigurationError) {
        var err = [CChar](repeating: 0, count: 512)
        let client = withOptionalCString(cipherSuites) { suites in
            withOptionalCString(groups) { groups in
                withOptionalCString(trustedCertificates) { ca in
                    ctls_quic_tls_client_new(suites, groups, ca, &err, err.count)
                }
            }
        }
        guard let client else { throw TLSConfigurationError(message: text(err)) }
        raw = client
        if requestOCSPStatus { ctls_quic_tls_client_request_status(raw) }
    }

    deinit { ctls_quic_tls_client_free(raw) }

    /// Starts a client handshake; its first event sends the ClientHello.
    /// - Parameters:
    ///   - serverName: the SNI name (and the name verified, if any).
    ///   - alpn: protocols offered (empty: no ALPN extension at all).
    ///   - transportParameters: this endpoint's, encoded; nil sends no
    ///     quic_transport_parameters extension (only a test wants that).
    ///   - session: `sessionTicket` of an earlier handshake, to resume.
    public func makeSession(serverName: String?, alpn: [String] = ["h3"], transportParameters: [UInt8]?,
                            resuming session: [UInt8]? = nil) throws(TLSConfigurationError) -> QUICHandshakeSession {
        let wire = alpnWireFormat(alpn)
        var err = [CChar](repeating: 0, count: 512)
        let conn = withOptionalCString(serverName) { name in
            withOptionalBytes(transportParameters) { tp in
                withOptionalBytes(session) { s in
                    ctls_quic_tls_conn_new_client(raw, name, wire, wire.count, tp.baseAddress, tp.count, s.baseAddress,
                                                  s.count, &err, err.count)
                }
            }
        }
        guard let conn else { throw TLSConfigurationError(message: text(err)) }
        return QUICHandshakeSession(raw: conn, context: self)
    }
}

/// ALPN protocol names as the extension carries them: each prefixed with
/// its length (RFC 7301 §3.1); names empty or too long are left out.
func alpnWireFormat(_ protocols: [String]) -> [UInt8] {
    var wire: [UInt8] = []
    for p in protocols where !p.isEmpty && p.utf8.count < 256 {
        wire.append(UInt8(p.utf8.count))
        wire += p.utf8
    }
    return wire
}

/// Calls `body` with the bytes, or with an empty buffer whose base address
/// is nil when there are none (which C reads as "absent").
func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
    guard let bytes else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
    return bytes.withUnsafeBufferPointer { buffer in
        // An empty array may lend a nil base address: present but empty
        // must stay present.
        if buffer.baseAddress == nil {
            var none: UInt8 = 0
            return withUnsafePointer(to: &none) { body(UnsafeBufferPointer(start: $0, count: 0)) }
        }
        return body(buffer)
    }
}
