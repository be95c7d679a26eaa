// RTT estimation (RFC 9002 §5, A.7 UpdateRtt).
//
// One estimator per path, shared by the three packet number spaces. The
// sample itself (ack time minus send time of the largest newly acknowledged
// packet, §5.1) is taken by LossRecovery, which knows the send times; this
// struct folds samples into min_rtt, smoothed_rtt and rttvar. All values are
// nanoseconds.

/// Timer granularity, kGranularity (RFC 9002 §6.1.2, A.2): 1 ms.
public let kGranularity: Int64 = 1_000_000

public struct RTTEstimator: Sendable {
    /// The most recent sample, unadjusted (§5.1); 0 before the first.
    public var latestRTT: Int64
    public var smoothedRTT: Int64
    public var rttVariance: Int64
    /// The smallest sample seen, ignoring ack delay (§5.2); 0 before the first.
    public var minRTT: Int64
    public var hasSample: Bool

    /// §5.3: before any sample, smoothed_rtt = kInitialRtt and rttvar =
    /// kInitialRtt / 2; §6.2.2 recommends 333 ms (a first PTO of about 1 s).
    public init(initialRTT: Int64 = 333_000_000) {
        latestRTT = 0
        smoothedRTT = initialRTT
        rttVariance = initialRTT / 2
        minRTT = 0
        hasSample = false
    }

    /// Folds in one sample. `ackDelay` is the peer's reported delay, decoded;
    /// `maxAckDelay` the peer's transport parameter.
    public mutating func update(latest: Int64, ackDelay: Int64, maxAckDelay: Int64, handshakeConfirmed: Bool) {
        let latest = max(latest, 0)
        latestRTT = latest
        guard hasSample else {
            // §5.3: the first sample resets the estimator; §5.2: "min_rtt MUST
            // be set to the latest_rtt on the first RTT sample".
            hasSample = true
            minRTT = latest
            smoothedRTT = latest
            rttVariance = latest / 2
            return
        }
        // §5.2: min_rtt ignores acknowledgment delay.
        minRTT = min(minRTT, latest)
        // §5.3: the peer's max_ack_delay is ignored until the handshake is
        // confirmed (handshake ACKs may be late); after, "MUST use the lesser
        // of the acknowledgment delay and the peer's max_ack_delay".
        var delay = max(ackDelay, 0)
        if handshakeConfirmed { delay = min(delay, maxAckDelay) }
        // §5.3: "MUST NOT subtract the acknowledgment delay from the RTT
        // sample if the resulting value is smaller than the min_rtt."
        var adjusted = latest
        if latest >= minRTT + delay { adjusted = latest - delay }
        rttVariance = (3 * rttVariance + abs(smoothedRTT - adjusted)) / 4
        smoothedRTT = (7 * smoothedRTT + adjusted) / 8
    }

    /// The PTO period without backoff (§6.2.1): smoothed_rtt +
    /// max(4 * rttvar, kGranularity) + max_ack_delay.
    public func probeTimeout(maxAckDelay: Int64) -> Int64 {
        smoothedRTT + max(4 * rttVariance, kGranularity) + maxAckDelay
    }

    /// The time threshold (§6.1.2): max(9/8 * max(smoothed_rtt, latest_rtt),
    /// kGranularity). Packets sent this long before an acknowledged one are lost.
    public var lossDelay: Int64 {
        max(max(smoothedRTT, latestRTT) * 9 / 8, kGranularity)
    }

    /// §5.2: "Endpoints SHOULD set the min_rtt to the newest RTT sample after
    /// persistent congestion is established", so a longer path stops looking
    /// congested forever.
    mutating func resetMinRTTAfterPersistentCongestion() {
        if hasSample { minRTT = latestRTT }
    }
}
