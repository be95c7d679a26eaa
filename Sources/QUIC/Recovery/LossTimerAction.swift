// What the connection does when the loss detection timer fires (RFC 9002
// §6.2, A.9 OnLossDetectionTimeout).

/// RFC 9002 §6.2/§7: what the connection must do when the loss-detection timer fires.
public enum LossTimerAction: Equatable, Sendable {
    /// The timer was not due (called early, or nothing to detect).
    case none
    /// Packets declared lost by time threshold: the connection re-queues their frames (it reads them
    /// with the `lost` closure of `onLossDetectionTimeout`).
    case lossDetected
    /// PTO: send `count` (1 or 2) ack-eliciting probe packets in `space` (new data, else retransmitted
    /// data, else PING), bypassing the congestion window (RFC 9002 §6.2.4).
    case probe(space: PacketNumberSpace, count: Int)
}
