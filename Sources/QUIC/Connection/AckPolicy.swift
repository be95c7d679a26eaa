// How the peer asked us to acknowledge 1-RTT packets with ACK_FREQUENCY
// (draft-ietf-quic-ack-frequency §4, §6); until it does, RFC 9000 §13.2's
// defaults: an ACK after the second ack-eliciting packet (threshold 1), at
// most our max_ack_delay later, and at once on any reordering (threshold 1).

struct AckPolicy: Equatable {
    /// Ack-eliciting packets received without an ACK; one more and the ACK
    /// goes at once.
    var ackElicitingThreshold: UInt64 = 1
    /// The peer's Request Max Ack Delay in ns; nil: our max_ack_delay.
    var requestedMaxAckDelay: Int64?
    /// 0: reordering alone never hurries an ACK; 1: any reordering does;
    /// N: a packet missing N below the largest does (§6.2).
    var reorderingThreshold: UInt64 = 1
    /// The largest ACK_FREQUENCY sequence number applied (§4: a frame with
    /// one not above it is ignored).
    var sequenceNumber: UInt64?

    /// Applies `f` unless it is stale; true if applied.
    mutating func apply(_ f: AckFrequencyFrame) -> Bool {
        if let seen = sequenceNumber, f.sequenceNumber <= seen { return false }
        sequenceNumber = f.sequenceNumber
        ackElicitingThreshold = f.ackElicitingThreshold
        // µs to ns; a value past 2^53 µs would be centuries, clamp instead of trapping.
        requestedMaxAckDelay = Int64(min(f.requestMaxAckDelay, UInt64(Int64.max / 1000))) * 1000
        reorderingThreshold = f.reorderingThreshold
        return true
    }
}

extension QUICConnection {
    /// The min_ack_delay we advertise, in µs (QUICConfiguration.transportParameters),
    /// which lets the peer send ACK_FREQUENCY and IMMEDIATE_ACK.
    var advertisedMinAckDelay: UInt64? { configuration.minAckDelayMicroseconds }
}

extension QUICConfiguration {
    /// min_ack_delay as sent (µs): never above max_ack_delay as sent, in
    /// whole milliseconds (draft-ietf-quic-ack-frequency §3).
    var minAckDelayMicroseconds: UInt64? {
        minAckDelay.map { UInt64(max(0, min($0, maxAckDelay / 1_000_000 * 1_000_000)) / 1000) }
    }
}
