import CTLS

/// One connection's TLS on a non-blocking socket. The handshake and every
/// read and write return at once; "want read" / "want write" say which
/// socket readiness to wait for before calling again.
///
/// OpenSSL may hold decrypted bytes the socket will never signal again
/// (a record bigger than the caller's buffer): `read` drains until the
/// buffer is full or nothing is left, and `pendingBytes` tells whether a
/// later read can proceed without waiting for the socket.
public final class TLSSession {
    let raw: OpaquePointer
    let context: TLSContext

    init(raw: OpaquePointer, context: TLSContext) {
        self.raw = raw
        self.context = context
    }

    deinit { ctls_conn_free(raw) }

    public enum HandshakeResult { case complete, wantRead, wantWrite, failed }

    public enum IOResult: Equatable {
        /// Bytes moved (more than 0).
        case bytes(Int)
        case wantRead, wantWrite
        /// The peer closed (close_notify or EOF).
        case closed
        case failed
        /// `sendFile` only: the file ended early.
        case fileEnded
    }

    /// Advances the handshake as far as the socket allows.
    public func handshake() -> HandshakeResult {
        switch ctls_handshake(raw) {
        case 1: return .complete
        case CTLS_WANT_READ: return .wantRead
        case CTLS_WANT_WRITE: return .wantWrite
        default: return .failed
        }
    }

    /// Why the last failed handshake or I/O call (on this thread) failed.
    public static var lastError: String { String(cString: ctls_last_error()) }

    /// Reads decrypted bytes until `buffer` is full or none are available.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        result(ctls_read(raw, buffer.baseAddress, buffer.count))
    }

    /// Writes as much of `a`, then `b`, as the socket takes now. After
    /// `.wantWrite` (or a short count) the next write must start with the
    /// bytes not written, as OpenSSL requires.
    public func write(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> IOResult {
        result(ctls_write2(raw, a.baseAddress, a.count, b.baseAddress, b.count))
    }

    /// Sends up to `count` bytes of the file `fd` from `offset` (advanced
    /// by what was sent): pread into a record-sized buffer, then encrypt.
    public func sendFile(fd: Int32, offset: inout Int64, count: Int) -> IOResult {
        result(ctls_sendfile(raw, fd, &offset, count))
    }

    private func result(_ n: Int) -> IOResult {
        if n > 0 { return .bytes(n) }
        switch Int32(truncatingIfNeeded: n) {
        case 0: return .closed
        case CTLS_WANT_READ: return .wantRead
        case CTLS_WANT_WRITE: return .wantWrite
        case CTLS_FILE_ENDED: return .fileEnded
        default: return .failed
        }
    }

    /// Decrypted bytes waiting inside OpenSSL.
    public var pendingBytes: Int { Int(ctls_pending(raw)) }

    /// Sends close_notify (once; the peer's is not waited for).
    public func shutdown() { ctls_shutdown(raw) }

    // MARK: - After the handshake

    /// The protocol ALPN chose (`h2`, `http/1.1`), or nil when the client
    /// offered none of ours (or no ALPN at all).
    public var negotiatedProtocol: String? {
        var p: UnsafePointer<UInt8>?
        var n = 0
        ctls_alpn(raw, &p, &n)
        guard let p, n > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }

    /// The protocol version as on the wire: 0x0303 (TLS 1.2), 0x0304 (1.3).
    public var version: Int { Int(ctls_version(raw)) }
    /// The handshake resumed an earlier session (a ticket) instead of a full one.
    public var isResumed: Bool { ctls_session_reused(raw) == 1 }
    /// "TLSv1.2", "TLSv1.3".
    public var versionName: String { String(cString: ctls_version_name(raw)) }
    /// The IANA cipher suite number (0x1301 is TLS_AES_128_GCM_SHA256).
    public var cipherSuite: Int { Int(ctls_cipher_id(raw)) }
    /// OpenSSL's name for the cipher suite.
    public var cipherName: String { String(cString: ctls_cipher_name(raw)) }
    /// The PEM of the certificate presented (the pair SNI chose).
    public var serverCertificatePEM: String? { ctls_server_cert_pem(raw).map { String(cString: $0) } }

    /// The client's certificate, if it sent one.
    public func peerCertificate() -> TLSPeerCertificate? {
        var err = [CChar](repeating: 0, count: 256)
        guard ctls_peer_verify(raw, &err, err.count) == 1 else { return nil }
        var chain: [String] = []
        var i: Int32 = 0
        while let p = ctls_peer_cert_pem(raw, i) {
            chain.append(String(cString: p))
            ctls_free(p)
            i += 1
        }
        func field(_ n: Int32) -> String {
            guard let p = ctls_peer_cert_field(raw, n) else { return "" }
            defer { ctls_free(p) }
            return String(cString: p)
        }
        let error = text(err)
        return TLSPeerCertificate(chainPEM: chain, subject: field(0), issuer: field(1), serial: field(2),
                                  notBefore: field(3), notAfter: field(4),
                                  verifyError: error.isEmpty ? nil : error)
    }
}

/// A client certificate as the application is told about it.
public struct TLSPeerCertificate: Sendable {
    /// PEM, leaf first.
    public let chainPEM: [String]
    /// Subject and issuer distinguished names (RFC 4514).
    public let subject: String
    public let issuer: String
    /// Serial number in upper-case hex.
    public let serial: String
    /// Validity, as "Mon DD HH:MM:SS YYYY GMT".
    public let notBefore: String
    public let notAfter: String
    /// Why verification failed; nil when it passed.
    public let verifyError: String?
}
