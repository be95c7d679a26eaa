// What one packet number space has received, for duplicate detection and
// ACK frames (RFC 9000 §12.3, §13.2).
//
// Packet numbers received are kept as ranges. A packet number seen before is
// a duplicate and is dropped before its frames are processed (§12.3: "A
// receiver MUST discard a newly unprotected packet unless it is certain
// that it has not processed another packet with the same packet number").
// The set is bounded: once the peer has acknowledged an ACK frame of ours,
// the ranges it covered need not be sent again (§13.2.4), and when there
// are more than `maxRanges` the oldest go. Packet numbers below what was
// forgotten count as duplicates — a very late packet is dropped unacknowledged
// and the peer treats it as lost, which is safe.
//
// When to acknowledge (§13.2.1, §13.2.2): Initial and Handshake packets at
// once; 1-RTT ack-eliciting packets after the second one or after
// max_ack_delay, whichever first, and at once when one arrives out of order
// (below the largest ack-eliciting packet, or above it with a gap between),
// when it carries IMMEDIATE_ACK, or when it was marked ECN-CE (§13.2.1
// SHOULD; the `congestionExperienced` hook for ECN). The peer may move
// the first three rules with ACK_FREQUENCY (`AckPolicy`,
// draft-ietf-quic-ack-frequency). Only ack-eliciting packets make an ACK
// due: a packet with nothing but ACK or PADDING is recorded and reported
// with the next ACK frame, never answered by one of its own (§13.2.1:
// "MUST NOT send a non-ack-eliciting packet in response to a
// non-ack-eliciting packet").

import Core

struct ReceivedPackets {
    /// More ranges than this and the lowest is forgotten (an ACK frame of
    /// 32 ranges fits a packet easily).
    static let maxRanges = 32

    private(set) var ranges = RangeSet()
    /// Packet numbers below this are treated as already processed.
    private(set) var forgottenBelow: UInt64 = 0
    private(set) var largestReceivedTime = Instant(nanoseconds: 0)
    /// Ack-eliciting packets received since the last ACK frame sent.
    private(set) var unackedElicitingCount = 0
    private(set) var largest: UInt64?
    // (The two flags here, in the padding after an optional.)
    /// An ACK frame should go out now.
    private(set) var ackImmediately = false
    /// Something new arrived since the last ACK frame (an ACK may be
    /// piggybacked even when none is owed).
    private(set) var hasNewRanges = false
    /// When an ACK frame must go out at the latest (delayed ACK), if one is owed.
    private(set) var ackDeadline: Instant?
    /// The largest ack-eliciting packet number received (§13.2.1's
    /// reordering rule; largest_unacked in draft-ietf-quic-ack-frequency §6.2).
    private(set) var largestAckEliciting: UInt64?
    /// The Largest Acknowledged of the last ACK frame sent (largest_reported).
    private(set) var largestReported: UInt64?
    /// What the peer asked with ACK_FREQUENCY (1-RTT only).
    var policy = AckPolicy()

    /// The ranges' spare capacity back (an idle connection).
    mutating func releaseIdleCapacity() { ranges.releaseCapacity() }

    func isDuplicate(_ pn: UInt64) -> Bool { pn < forgottenBelow || ranges.contains(pn) }

    /// Records an authenticated, processed packet. `immediate`: acknowledge
    /// it at once if ack-eliciting (a handshake space, an IMMEDIATE_ACK
    /// frame); `congestionExperienced`: its IP header was marked ECN-CE.
    /// `maxAckDelay`: ours (ns), unless the peer set another (`policy`).
    mutating func record(_ pn: UInt64, ackEliciting: Bool, now: Instant, immediate: Bool, maxAckDelay: Int64,
                         congestionExperienced: Bool = false) {
        let previousLargest = largest
        ranges.insert(pn)
        while ranges.count > Self.maxRanges {
            forgottenBelow = ranges.first!.upperBound
            ranges.removeFirst()
        }
        if largest.map({ pn > $0 }) ?? true {
            largest = pn
            largestReceivedTime = now
        }
        hasNewRanges = true
        guard ackEliciting else { return }
        unackedElicitingCount += 1
        let reordered = isReordered(pn, previousLargest: previousLargest)
        if largestAckEliciting.map({ pn > $0 }) ?? true { largestAckEliciting = pn }
        if immediate || congestionExperienced || reordered || unackedElicitingCount > Int(clamping: policy.ackElicitingThreshold) {
            ackImmediately = true
        } else if ackDeadline == nil {
            ackDeadline = Instant(nanoseconds: now.nanoseconds + (policy.requestedMaxAckDelay ?? maxAckDelay))
        }
    }

    /// Whether ack-eliciting `pn` (already in `ranges`) calls for an ACK now
    /// because of reordering: RFC 9000 §13.2.1 with the default Reordering
    /// Threshold of 1, draft-ietf-quic-ack-frequency §6.2 with another.
    /// `previousLargest`: the largest of any kind before `pn`, the reference
    /// while no ack-eliciting packet has arrived.
    private func isReordered(_ pn: UInt64, previousLargest: UInt64?) -> Bool {
        guard let largestAE = largestAckEliciting ?? previousLargest else { return false }
        switch policy.reorderingThreshold {
        case 0:
            return false
        case 1:
            // "a packet number less than another ack-eliciting packet that
            // has been received, or ... larger than the highest-numbered
            // ack-eliciting packet ... and there are missing packets between".
            if pn < largestAE { return true }
            return pn > largestAE + 1 && ranges.firstMissing(in: (largestAE + 1)..<pn) != nil
        case let threshold:
            // The smallest packet missing above the last one reported, once
            // the largest ack-eliciting is `threshold` or more beyond it.
            let largestUnacked = max(pn, largestAE)
            // Before any ACK was sent, from the smallest packet received.
            let lower = max(largestReported.map { $0 + 1 } ?? ranges.first!.lowerBound, forgottenBelow)
            guard lower < largestUnacked, let gap = ranges.firstMissing(in: lower..<largestUnacked) else { return false }
            return largestUnacked - gap.lowerBound >= threshold
        }
    }

    /// Whether an ACK frame is owed now.
    func ackDue(now: Instant) -> Bool {
        ackImmediately || (ackDeadline.map { now >= $0 } ?? false)
    }

    /// The ranges of an ACK frame, largest first.
    var ackRanges: ReversedCollection<[Range<UInt64>]> { ranges.ranges.reversed() }

    /// An ACK frame was sent with everything received so far.
    mutating func ackSent() {
        largestReported = largest
        unackedElicitingCount = 0
        ackImmediately = false
        ackDeadline = nil
        hasNewRanges = false
    }

    /// The peer acknowledged a packet of ours that carried an ACK frame whose
    /// Largest Acknowledged was `largestAcknowledged` (§13.2.4).
    mutating func ackOfAckReceived(_ largestAcknowledged: UInt64) {
        // Keep the range that holds the largest so the next ACK frame still
        // reports the largest packet number received; everything below it
        // that the acknowledged frame reported goes (§13.2.4). (It used to
        // go only when the acknowledged frame ended below that range, which
        // in a steady download it never does: every ACK frame then carried
        // all `maxRanges` ranges.)
        guard let last = ranges.last else { return }
        let below = min(largestAcknowledged + 1, last.lowerBound)
        guard below > forgottenBelow else { return }
        ranges.remove(below: below)
        forgottenBelow = below
    }
}
