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
// (a gap below it or a packet number below the largest).

import Core

struct ReceivedPackets {
    /// More ranges than this and the lowest is forgotten (an ACK frame of
    /// 32 ranges fits a packet easily).
    static let maxRanges = 32

    private(set) var ranges = RangeSet()
    /// Packet numbers below this are treated as already processed.
    private(set) var forgottenBelow: UInt64 = 0
    private(set) var largest: UInt64?
    private(set) var largestReceivedTime = Instant(nanoseconds: 0)
    /// Ack-eliciting packets received since the last ACK frame sent.
    private(set) var unackedElicitingCount = 0
    /// An ACK frame should go out now.
    private(set) var ackImmediately = false
    /// When an ACK frame must go out at the latest (delayed ACK), if one is owed.
    private(set) var ackDeadline: Instant?
    /// Something new arrived since the last ACK frame (an ACK may be
    /// piggybacked even when none is owed).
    private(set) var hasNewRanges = false

    func isDuplicate(_ pn: UInt64) -> Bool { pn < forgottenBelow || ranges.contains(pn) }

    /// Records an authenticated, processed packet.
    mutating func record(_ pn: UInt64, ackEliciting: Bool, now: Instant, immediate: Bool, maxAckDelay: Int64) {
        let outOfOrder = largest.map { pn < $0 || pn > $0 + 1 } ?? false
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
        if immediate || outOfOrder || unackedElicitingCount >= 2 {
            ackImmediately = true
        } else if ackDeadline == nil {
            ackDeadline = Instant(nanoseconds: now.nanoseconds + maxAckDelay)
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
        unackedElicitingCount = 0
        ackImmediately = false
        ackDeadline = nil
        hasNewRanges = false
    }

    /// The peer acknowledged a packet of ours that carried an ACK frame whose
    /// Largest Acknowledged was `largestAcknowledged` (§13.2.4).
    mutating func ackOfAckReceived(_ largestAcknowledged: UInt64) {
        let below = largestAcknowledged + 1
        guard below > forgottenBelow else { return }
        // Keep the range that holds the largest so the next ACK frame still
        // reports the largest packet number received.
        if let last = ranges.last, last.lowerBound < below { return }
        ranges.remove(below: below)
        forgottenBelow = below
    }
}
