import CSys
import Core
import Gateway
import TLS

/// TLS on a connection: a handshake phase before any HTTP, driven by the
/// poller (OpenSSL says whether it waits to read or to write; the interest
/// follows), bounded by --tls-handshake-timeout. Once complete, what the
/// application may learn about the connection is taken once (`TLSInfo`),
/// and `startProtocol` chooses the protocol ALPN agreed on.
///
///     accept ─▶ handshake ──complete──▶ startProtocol ─▶ HTTP/1.1 (head)
///                  │                          └─ALPN h2─▶ HTTP/2 (later)
///                  └─failed / timeout─▶ closed (OpenSSL sends its alert)
///
/// While handshaking, `phase` is `.head` with `tls.handshaking` set: stopping
/// treats the connection as idle, and its one timer is the handshake's.
extension H1Connection {
    var io: ConnectionIO { ConnectionIO(fd: fd, tls: tls?.session, metrics: worker.metrics) }

    /// From `open`, for a connection that has a TLS session.
    func beginHandshake() {
        tls?.handshaking = true
        worker.arm(self, milliseconds: worker.config.tlsHandshakeTimeoutMilliseconds)
        // The ClientHello may be here already: the level-triggered poller
        // reports it on the next round.
    }

    func continueHandshake() {
        guard let session = tls?.session else { close(); return }
        switch session.handshake() {
        case .complete:
            tls?.handshaking = false
            worker.metrics.tlsHandshake(.tcp, session.isResumed ? .resumed : .full)
            peer.tls = Self.tlsInfo(session)
            startProtocol()
        case .wantRead:
            setHandshakeInterest(.readable)
        case .wantWrite:
            setHandshakeInterest(.writable)
        case .failed:
            // Plain HTTP, garbage, no shared protocol version or cipher, a
            // missing or bad client certificate under `required`...
            Log.debug("TLS handshake with \(peer.remoteAddress) failed: \(TLSSession.lastError)")
            aborted = true  // no close_notify
            close()
        }
    }

    private func setHandshakeInterest(_ want: IOEvents) {
        guard want != interest else { return }
        interest = want
        worker.setInterest(self, fd: fd, want)
    }

    /// The handshake is complete: the protocol ALPN chose starts here.
    /// `tls!.session.negotiatedProtocol` is "h2", "http/1.1", or nil (the client
    /// offered no ALPN or none of ours: HTTP/1.1). Only the protocols the
    /// context was given (TLSSetup.alpnProtocols) can come out of it; the
    /// HTTP/2 integration branches off here for "h2".
    func startProtocol() {
        if tls?.session.negotiatedProtocol == "h2" {
            startHTTP2()
            return
        }
        phase = .head
        worker.arm(self, milliseconds: worker.config.requestTimeoutMilliseconds)
        updateInterest()
    }

    /// OpenSSL may hold decrypted bytes that the poller will never report:
    /// when this connection is reading and some are waiting, the worker
    /// delivers a readable event for it after the current round (called
    /// after every event and whenever the interest is recomputed, which is
    /// where reading resumes: the next request, ASGI asking for body,
    /// WebSocket reads unpaused).
    func deferReadIfBuffered() {
        guard let tls, !tls.handshaking, !tls.readDeferred, phase != .closed, phase != .lingering,
              interest.contains(.readable), tls.session.pendingBytes > 0 else { return }
        self.tls?.readDeferred = true
        worker.deferRead(self)
    }

    func onDeferredRead() {
        tls?.readDeferred = false
        guard phase != .closed, interest.contains(.readable) else { return }
        dispatch(.readable)
    }

    private static func tlsInfo(_ s: TLSSession) -> TLSInfo {
        let client = s.peerCertificate().map {
            TLSInfo.ClientCertificate(chainPEM: $0.chainPEM, subject: $0.subject, issuer: $0.issuer, serial: $0.serial,
                                      notBefore: $0.notBefore, notAfter: $0.notAfter, verifyError: $0.verifyError)
        }
        return TLSInfo(version: s.version, versionName: s.versionName, cipherSuite: s.cipherSuite,
                       cipherName: s.cipherName, serverCertificatePEM: s.serverCertificatePEM, client: client)
    }
}
