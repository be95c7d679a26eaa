import CTLS
import Core

/// A certificate chain file and its private key file (PEM), and the DER
/// OCSP response stapled for that certificate, if any.
public struct TLSCertificatePair: Sendable {
    public var certificate: String
    public var key: String
    public var ocspResponse: String?
    public init(certificate: String, key: String, ocspResponse: String? = nil) {
        self.certificate = certificate
        self.key = key
        self.ocspResponse = ocspResponse
    }
}

/// What a context loaded but the operator should hear about (one log line
/// each), such as an OCSP response already past its nextUpdate.
public struct TLSLoadWarning: Sendable {
    public let message: String
}

/// A configuration OpenSSL refused: one line for the operator.
public struct TLSConfigurationError: Error {
    public let message: String
}

/// The server side of TLS shared by every connection of a worker: TLS 1.2
/// and 1.3 only, no renegotiation, no compression, no 0-RTT; one or more
/// certificate/key pairs chosen by SNI; ALPN in the server's preference
/// order; session tickets under keys derived from a secret all workers share.
///
///     let context = try TLSContext(pairs: pairs, alpn: ["http/1.1"], ticketSecret: secret)
///     let session = context.makeSession(fd: acceptedSocket)!
///     while true {
///         switch session.handshake() {
///         case .complete: break                      // then read/write through `session`
///         case .wantRead, .wantWrite: waitForSocket() // and call handshake() again
///         case .failed: closeSocket()
///         }
///     }
public final class TLSContext {
    let raw: OpaquePointer

    /// Builds the context, loading and checking every file now.
    /// - Parameters:
    ///   - pairs: certificate chain and key files; the first pair answers
    ///     clients whose SNI name matches no certificate (or who send none).
    ///   - ciphers: an OpenSSL cipher list for TLS 1.2 (nil: OpenSSL's
    ///     default); TLS 1.3 suites are always OpenSSL's defaults.
    ///   - clientCA: PEM bundle client certificates are verified against.
    ///   - alpn: protocols in preference order (`h2`, `http/1.1`).
    ///   - ticketSecret: shared secret session-ticket keys are derived from;
    ///     nil leaves tickets to OpenSSL's per-process key.
    ///   - ticketPeriodSeconds: a ticket key is current for this long and
    ///     accepted for one more period.
    ///   - minimumVersion: the lowest version accepted (TLS 1.2 or 1.3).
    ///   - keyPassword: the password of encrypted keys (nil: an encrypted
    ///     key is refused, never prompted for).
    public init(pairs: [TLSCertificatePair], ciphers: String? = nil, clientCA: String? = nil,
                clientCertificates: ClientCertificateMode = .off, alpn: [String],
                ticketSecret: [UInt8]? = nil, ticketPeriodSeconds: Int = 3600,
                minimumVersion: TLSMinimumVersion = .tls12, keyPassword: [UInt8]? = nil) throws(TLSConfigurationError) {
        precondition(!pairs.isEmpty, "TLSContext needs a certificate")
        var wire: [UInt8] = []
        for p in alpn where !p.isEmpty && p.utf8.count < 256 {
            wire.append(UInt8(p.utf8.count))
            wire += p.utf8
        }
        let mode: Int32
        switch clientCA == nil ? .off : clientCertificates {
        case .off: mode = CTLS_CLIENT_CERT_NONE
        case .optional: mode = CTLS_CLIENT_CERT_OPTIONAL
        case .required: mode = CTLS_CLIENT_CERT_REQUIRED
        }
        var err = [CChar](repeating: 0, count: 512)
        let server = withOptionalCString(ciphers) { c in
            withOptionalCString(clientCA) { ca in
                ctls_server_new(c, ca, mode, wire, wire.count, &err, err.count)
            }
        }
        guard let server else { throw TLSConfigurationError(message: text(err)) }
        raw = server
        _ = ctls_server_set_min_version(raw, minimumVersion.wireValue)
        if let keyPassword {
            _ = keyPassword.withUnsafeBufferPointer { p in
                p.withMemoryRebound(to: CChar.self) { ctls_server_set_key_password(raw, $0.baseAddress, $0.count) }
            }
        }
        if let secret = ticketSecret, !secret.isEmpty {
            _ = ctls_server_set_ticket_secret(raw, secret, secret.count, Int32(ticketPeriodSeconds))
        }
        for (index, p) in pairs.enumerated() {
            guard ctls_server_add_pair(raw, p.certificate, p.key, &err, err.count) == 0 else {
                // (deinit frees `raw`: every stored property is set by now)
                throw TLSConfigurationError(message: text(err))
            }
            if let ocsp = p.ocspResponse {
                let loaded = ctls_server_set_ocsp(raw, Int32(index), ocsp, &err, err.count)
                if loaded < 0 { throw TLSConfigurationError(message: text(err)) }
                if loaded == 1 { warnings.append(TLSLoadWarning(ocspExpired: ocsp)) }
            }
        }
    }

    /// What loading found worth a warning (the caller logs each).
    public private(set) var warnings: [TLSLoadWarning] = []

    deinit { ctls_server_free(raw) }

    /// A server session on the accepted, non-blocking socket `fd` (which
    /// the caller keeps owning); nil if OpenSSL cannot make one.
    public func makeSession(fd: Int32) -> TLSSession? {
        guard let c = ctls_conn_new(raw, fd) else { return nil }
        return TLSSession(raw: c, context: self)
    }
}

/// The secret session-ticket keys derive from: made once by the supervisor
/// (Options.TicketSecretHandoff), handed to each worker it spawns through
/// the environment, and taken out of the worker's environment before
/// Python starts.
public enum TicketSecret {
    /// The secret the supervisor passed, removed from the environment.
    public static func take(environmentName: String) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: 64)
        let n = ctls_import_secret(environmentName, &bytes, bytes.count)
        return n > 0 ? Array(bytes.prefix(n)) : nil
    }
}

extension TLSLoadWarning {
    init(ocspExpired path: String) {
        message = "the OCSP response in \(path) is past its nextUpdate: it is not stapled until the file is refreshed"
            + " (and the workers replaced, SIGHUP)"
    }
}

func withOptionalCString<R>(_ s: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let s else { return body(nil) }
    return s.withCString { body($0) }
}

func text(_ buf: [CChar]) -> String {
    String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
