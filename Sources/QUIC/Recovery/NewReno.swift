// NewReno congestion control (RFC 9002 §7, Appendix B).
//
//                  new path or       +------------+
//             persistent congestion  | Slow Start |  window < ssthresh: grows by bytes acked
//         (O)----------------------->|            |
//                                    +------------+
//                                          | loss
//                                          v
//   +------------+       loss         +------------+
//   | Congestion |------------------->|  Recovery  |  ssthresh = window / 2 = window;
//   | Avoidance  |                    |   Period   |  no change on acks or new losses
//   +------------+<-------------------+------------+
//     + 1 datagram per window  ack of a packet sent in recovery
//
// The state is not stored as an enum: as in Appendix B it follows from the
// numbers. "In recovery" means a packet's send time is at or before the
// recovery start (B.5 InCongestionRecovery); "slow start" means window <
// ssthresh (§7.3.1), which persistent congestion brings back (§7.6.2).
//
// Acknowledgments arrive per ACK frame, not per packet: the whole frame
// counts as sent at the send time of its largest in-flight packet. The
// additive increase uses byte counting (RFC 3465 §2.1, which §B.5
// recommends for integer windows): one datagram per window of bytes acked.

import Core

public struct NewReno: CongestionController {
    public let maxDatagramSize: Int
    /// kInitialWindow (§7.2): min(10 * max_datagram_size, max(14720, 2 * max_datagram_size)).
    public let initialWindow: Int
    /// kMinimumWindow (§7.2): 2 * max_datagram_size.
    public let minimumWindow: Int
    public private(set) var congestionWindow: Int
    /// ssthresh (§B.2); Int.max is "infinite" (§7.3.1: slow start until the first loss).
    public private(set) var slowStartThreshold: Int = .max
    /// congestion_recovery_start_time (§B.2); nil: never in recovery, or reset
    /// by persistent congestion.
    public private(set) var recoveryStartTime: Instant?
    /// Bytes acknowledged in congestion avoidance not yet turned into window.
    private var bytesAckedInAvoidance = 0

    public init(maxDatagramSize: Int) {
        precondition(maxDatagramSize > 0)
        self.maxDatagramSize = maxDatagramSize
        initialWindow = min(10 * maxDatagramSize, max(14_720, 2 * maxDatagramSize))
        minimumWindow = 2 * maxDatagramSize
        congestionWindow = initialWindow
    }

    public var isInSlowStart: Bool { congestionWindow < slowStartThreshold }

    /// B.5 InCongestionRecovery: a packet sent at or before the start of the
    /// recovery period belongs to the episode that started it.
    public func isInRecovery(sentTime: Instant) -> Bool {
        guard let start = recoveryStartTime else { return false }
        return sentTime <= start
    }

    /// NewReno keys everything off acknowledgments and losses: it keeps no
    /// per-send state (bytes in flight live in LossRecovery). The hook exists
    /// for controllers that do, such as CUBIC's idle-period handling.
    public mutating func onPacketSent(bytes: Int, now: Instant) {}

    public mutating func onPacketsAcked(bytes: Int, largestAckedSentTime: Instant, rtt: RTTEstimator, now: Instant,
                                        appLimited: Bool) {
        // §7.8: "the congestion window SHOULD NOT be increased in either slow
        // start or congestion avoidance" when it is underutilized.
        if appLimited { return }
        // §7.3.2: during recovery the window does not change; an ACK of a packet
        // sent after recovery started ends it (the comparison says so by itself).
        if isInRecovery(sentTime: largestAckedSentTime) { return }
        if isInSlowStart {
            // §7.3.1: "the congestion window increases by the number of bytes acknowledged".
            congestionWindow += bytes
        } else {
            // §7.3.3: "MUST limit the increase to the congestion window to at
            // most one maximum datagram size for each congestion window that is
            // acknowledged."
            bytesAckedInAvoidance += bytes
            while bytesAckedInAvoidance >= congestionWindow {
                bytesAckedInAvoidance -= congestionWindow
                congestionWindow += maxDatagramSize
            }
        }
    }

    public mutating func onCongestionEvent(sentTime: Instant, now: Instant) {
        // §7.3.2: "A sender that is already in a recovery period stays in it and
        // does not reenter it."
        if isInRecovery(sentTime: sentTime) { return }
        recoveryStartTime = now
        // §7.3.2: "MUST set the slow start threshold to half the value of the
        // congestion window"; the window is reduced at once (allowed), never
        // below kMinimumWindow (§7.2).
        slowStartThreshold = congestionWindow / 2
        congestionWindow = max(slowStartThreshold, minimumWindow)
        bytesAckedInAvoidance = 0
    }

    public mutating func onPersistentCongestion() {
        // §7.6.2 and B.8: window to kMinimumWindow, recovery forgotten, so the
        // sender is back in slow start (window < ssthresh) per §7.3.1.
        congestionWindow = minimumWindow
        recoveryStartTime = nil
        bytesAckedInAvoidance = 0
    }

    /// B.9 only removes the bytes from bytes_in_flight, which LossRecovery
    /// owns; the window itself is untouched by a key discard.
    public mutating func onPacketsDiscarded(bytes: Int) {}
}
