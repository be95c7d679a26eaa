// What an application needs to end a connection without losing what it
// already wrote (RFC 9000 §10.2: once CONNECTION_CLOSE is sent, the closing
// state sends nothing else, so stream data still unacknowledged at that
// moment is never resent).
//
// HTTP/3's graceful shutdown (RFC 9114 §5.2) uses both: a GOAWAY
// announcing the shutdown, a wait of about a round trip for requests
// already in flight (`probeTimeout`), the final GOAWAY, and the close only
// once the last responses and that GOAWAY were acknowledged
// (`allStreamDataAcknowledged`), with a timer in case they never are.

extension QUICConnection {
    /// The probe timeout without backoff (RFC 9002 §6.2.1): smoothed_rtt +
    /// max(4 * rttvar, kGranularity) + max_ack_delay, in nanoseconds. About
    /// the longest a round trip takes, with the peer's acknowledgment delay;
    /// before any RTT sample it is based on kInitialRtt (333 ms, §6.2.2).
    public var probeTimeout: Int64 {
        recovery.rtt.probeTimeout(maxAckDelay: recovery.maxAckDelay)
    }

    /// Every byte and FIN written on any stream was acknowledged (reset
    /// streams count as settled: their data is abandoned by design). A
    /// stream still open for writing counts when everything written so far
    /// was acknowledged. False once the connection is closing: nothing is
    /// sent any more.
    public var allStreamDataAcknowledged: Bool {
        guard isOpen else { return false }
        return streams.all.allSatisfy { $0.send?.isSettled ?? true }
    }
}

extension StreamSendSide {
    /// Nothing of this side waits for an acknowledgment (see
    /// `QUICConnection.allStreamDataAcknowledged`).
    var isSettled: Bool {
        switch state {
        case .dataReceived, .resetSent, .resetReceived: true
        case .sending: finOffset == nil && buffer.allAcknowledged
        case .dataSent: false
        }
    }
}
