import Core
import HTTP3
import QUIC

/// How an HTTP/3 connection ends gracefully (RFC 9114 §5.2), in the order
/// the phases follow each other:
///
///     serving ──announce──▶ announced ──final at──▶ refusing ──no request──▶ settling ──acked──▶ closed
///
/// - **announced**: GOAWAY with 2^62-4 went out: "a server can send a GOAWAY
///   frame with an identifier of 2^62-4 ... to indicate that the connection
///   is going away" and the client opens no new request here, while every
///   request already on its way is still taken. --drain-delay and
///   --max-connection-age announce; a stop or drain also schedules the next
///   step a round trip later ("after allowing time for any in-flight
///   requests ... to arrive", §5.2: the probe timeout, within bounds).
/// - **refusing**: the final GOAWAY names the lowest request stream not
///   seen: those below it are served, later ones get H3_REQUEST_REJECTED
///   (the client may retry them elsewhere, §4.1.1).
/// - **settling**: no request is left. The close waits until everything
///   sent (the last responses, the GOAWAY) is acknowledged — QUIC's
///   closing state sends nothing but CONNECTION_CLOSE (RFC 9000 §10.2.1),
///   so closing earlier would lose them — or for three probe timeouts
///   (within bounds), whichever comes first, then CONNECTION_CLOSE with
///   H3_NO_ERROR ("an endpoint that completes a graceful shutdown SHOULD
///   use the H3_NO_ERROR error code").
///
/// Past --graceful-timeout the worker cuts whatever is left (`cut`).
enum H3ShutdownPhase {
    case serving
    /// `finalAt`: when the final GOAWAY follows (nil: not decided yet, as
    /// during --drain-delay).
    case announced(since: Instant, finalAt: Instant?)
    case refusing
    case settling(until: Instant)

    var isUnderway: Bool {
        if case .serving = self { false } else { true }
    }
}

extension H3Connection {
    /// The wait between the announcing and the final GOAWAY, at least: a
    /// loaded client may read the first a little late.
    static let minimumGoAwayGraceMilliseconds = 100
    /// ... and at most. The probe timeout can be far longer than the path's
    /// round trip: RTT samples are taken when the worker reads the ACK, so
    /// an inline WSGI call that held the loop for seconds inflates them.
    static let maximumGoAwayGraceMilliseconds = 1000
    /// The close waits this long for acknowledgments at most (and at least
    /// the minimum grace): then the peer is taken to be gone.
    static let maximumSettleMilliseconds = 3000

    /// --drain-delay or --max-connection-age: the client is to open new
    /// requests elsewhere; nothing is refused (the final GOAWAY follows only
    /// when the stop begins: `beginShutdown`).
    func announceGoingAway() {
        guard !closed, case .serving = shutdown else { return }
        announce(now: worker.now, finalAt: nil)
    }

    /// Stopping (SIGTERM) or draining (replaced): GOAWAY now, the final one
    /// a round trip later (at once if the announcement is that old), then
    /// the open requests finish and the connection closes.
    func beginShutdown() {
        guard !closed else { return }
        // WebSockets close with 1001 (going away), as over HTTP/1.1 and HTTP/2.
        closeWebSocketsGoingAway()
        let now = worker.now
        switch shutdown {
        case .serving:
            announce(now: now, finalAt: now.adding(milliseconds: goAwayGraceMilliseconds))
        case .announced(let since, nil):
            shutdown = .announced(since: since, finalAt: max(now, since.adding(milliseconds: goAwayGraceMilliseconds)))
            service.watchShutdown(self)
        case .announced, .refusing, .settling:
            return
        }
    }

    private func announce(now: Instant, finalAt: Instant?) {
        core.goAway(announceOnly: true)
        // WebTransport sessions are asked to finish up (webtransport.drain;
        // WT_DRAIN_SESSION in the current draft, §4.7).
        if let wt = webTransport {
            wt.registry.goAway()
            webTransportProgress()
        }
        writeLocalOutput()
        shutdown = .announced(since: now, finalAt: finalAt)
        service.watchShutdown(self)
    }

    private var goAwayGraceMilliseconds: Int {
        min(max(probeTimeoutMilliseconds, H3Connection.minimumGoAwayGraceMilliseconds), H3Connection.maximumGoAwayGraceMilliseconds)
    }

    /// Three probe timeouts: time for a lost packet to be sent again twice.
    private var settleMilliseconds: Int {
        min(max(3 * probeTimeoutMilliseconds, H3Connection.minimumGoAwayGraceMilliseconds), H3Connection.maximumSettleMilliseconds)
    }

    private var probeTimeoutMilliseconds: Int { Int(quic.probeTimeout / 1_000_000) }

    /// Takes the shutdown as far as it can go now (after input, at its
    /// deadline, when a request ends). False once the connection is closed.
    func advanceShutdown(now: Instant) -> Bool {
        guard !closed else { return false }
        if case .announced(_, let finalAt?) = shutdown, now >= finalAt {
            core.goAway()
            writeLocalOutput()
            shutdown = .refusing
        }
        if case .refusing = shutdown, core.isFinished {
            shutdown = .settling(until: now.adding(milliseconds: settleMilliseconds))
        }
        if case .settling(let until) = shutdown, now >= until || (!hasLocalOutput && quic.allStreamDataAcknowledged) {
            closeNormally()
            return false
        }
        return true
    }

    /// When `advanceShutdown` must run even if nothing arrives.
    var shutdownDeadline: Instant? {
        switch shutdown {
        case .announced(_, let finalAt): finalAt
        case .settling(let until): until
        case .serving, .refusing: nil
        }
    }
}
