// The congestion controller seam (RFC 9002 §7).
//
// LossRecovery owns bytes in flight, the sent-packet ledger and the
// decision of what was acknowledged or lost; the controller owns only the
// window. RFC 9002 §7 lets a sender pick its algorithm ("such as CUBIC");
// NewReno (NewReno.swift) is the one of §7/Appendix B. Every call takes the
// time as a parameter, so controllers stay sans-I/O and testable.

import Core

/// Pluggable congestion control (RFC 9002 §7): NewReno, Cubic, and CongestionControl choosing between them.
public protocol CongestionController: Sendable {
    /// Bytes allowed in flight (§7.2).
    var congestionWindow: Int { get }
    /// An in-flight packet of `bytes` left (§A.5 OnPacketSentCC). Probes included.
    mutating func onPacketSent(bytes: Int, now: Instant)
    /// One ACK frame newly acknowledged `bytes` of in-flight packets, the largest
    /// of which was sent at `largestAckedSentTime` (§B.5). `appLimited`: the
    /// window was not fully used since the previous ACK, so it must not grow (§7.8).
    mutating func onPacketsAcked(bytes: Int, largestAckedSentTime: Instant, rtt: RTTEstimator, now: Instant, appLimited: Bool)
    /// Packets were lost, the last of them sent at `sentTime` (§B.6); reacts at
    /// most once per loss episode (§7.3.2).
    mutating func onCongestionEvent(sentTime: Instant, now: Instant)   // once per loss episode (§7.3.2)
    /// §7.6.2: "the sender's congestion window MUST be reduced to the minimum congestion window".
    mutating func onPersistentCongestion()                               // §7.6
    /// Keys of a space were discarded: its in-flight `bytes` left the network
    /// without an acknowledgment or a loss (§6.4, B.9).
    mutating func onPacketsDiscarded(bytes: Int)                         // key discard removes in-flight bytes
}
