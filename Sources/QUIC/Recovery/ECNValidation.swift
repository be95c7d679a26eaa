// ECN on one path (RFC 9000 §13.4, Appendix A.4; RFC 9002 §7.1), sans-I/O.
//
// Theory of operation. Both directions live here:
//
// - Receiving (§13.4.1): every QUIC packet processed (duplicates are not)
//   adds one to its space's count for the ECN field of the IP header it
//   came in; coalesced packets each count. The counts go into every ACK of
//   the space once one is non-zero (ACK_ECN, §19.3.2).
// - Sending and validation (§13.4.2, A.4): the path starts in `testing`,
//   where datagrams carry ECT(0); after `testingPackets` marked packets it
//   is `unknown` and sends unmarked until an ACK validates the counts with
//   a marked packet acknowledged, which makes it `capable` (marked again).
//   Any failed validation makes it `failed` for good (the §13.4.2.2 MAY to
//   revalidate is not taken); so does the loss of every marked packet while
//   none was acknowledged (the marks themselves may be what is dropped).
//
//   testing ──(10 marked packets sent)──► unknown ──(valid ACK, a marked packet acked)──► capable
//      └──────────(10 sent, a marked packet already acked by valid ACKs)───────────────────►┘
//      └─────────────┴──────────────(validation fails / all marked lost)──────────┴──► failed
//
// Which packets were marked is kept as packet-number bounds per space
// (`SpaceCounts`; the Initial and Handshake spaces' go once both are
// discarded, DroppablePerSpace), not per packet: a space's marked packets are those sent while testing (all
// below `testingEnd`) and those from `capableFrom` on (marking stops for
// good only on failure, after which nothing is validated any more).
//
// Validation of an ACK frame's counts (§13.4.2.1), only for ACKs that raise
// the largest acknowledged (reordered ones MUST NOT fail it): counts absent
// while a marked packet is newly acknowledged; a count that went down; an
// ECT(1) count (we never send ECT(1)); ECT(0)+CE above the marked packets
// sent; or an increase of ECT(0)+CE smaller than the marked packets newly
// acknowledged. A valid increase of CE is a congestion signal (RFC 9002
// §7.1, B.7), which the caller turns into one congestion event.

import Core

public struct ECNValidation: Sendable {
    public enum State: Sendable, Equatable { case testing, unknown, capable, failed }

    /// Marked packets sent before the path's ECN state waits for proof
    /// (§13.4.2: "the first ten outgoing packets").
    public static let testingPackets = 10

    public private(set) var state = State.testing
    /// Times a valid CE increase asked for a congestion reaction.
    public private(set) var congestionSignals = 0

    /// What is counted per packet number space.
    struct SpaceCounts: EarlySpaceState {
        /// Packets received by ECN field.
        var received = ECNCounts(ect0: 0, ect1: 0, ce: 0)
        /// The peer's counts from the last ACK that passed validation.
        var peerCounts = ECNCounts(ect0: 0, ect1: 0, ce: 0)
        /// Packets sent with ECT(0).
        var markedSent: UInt64 = 0
        var testingEnd: UInt64 = 0
        var capableFrom: UInt64?

        static func fresh(early: Bool) -> SpaceCounts { SpaceCounts() }
        static var dropped: SpaceCounts { SpaceCounts() }
    }

    /// Per space (PacketNumberSpace.rawValue); the Initial and Handshake
    /// spaces' go once both are discarded (`dropEarlySpaces`).
    var spaces = DroppablePerSpace<SpaceCounts>()

    var testingMarked = 0
    var markedAcknowledged = false
    var markedLost = 0

    public init() {}

    /// Per space: packets received by ECN field.
    public var received: PerSpace<ECNCounts> { PerSpace { spaces[$0.rawValue].received } }
    /// Per space: the peer's counts from the last ACK that passed validation.
    public var peerCounts: PerSpace<ECNCounts> { PerSpace { spaces[$0.rawValue].peerCounts } }
    /// Per space: packets sent with ECT(0).
    public var markedSent: PerSpace<UInt64> { PerSpace { spaces[$0.rawValue].markedSent } }

    /// Gives back the Initial and Handshake spaces' counts: both were
    /// discarded (RFC 9001 §4.9), nothing of theirs is sent, received or
    /// acknowledged again.
    public mutating func dropEarlySpaces() { spaces.dropEarlySpaces() }

    /// The codepoint the next datagram carries: all its packets share it.
    public var marking: ECNCodepoint { state == .testing || state == .capable ? .ect0 : .notECT }

    // MARK: receiving (§13.4.1)

    /// A packet of `space` that arrived with `ecn` was processed.
    public mutating func packetReceived(space: PacketNumberSpace, ecn: ECNCodepoint) {
        let s = space.rawValue
        switch ecn {
        case .notECT: break
        case .ect0: spaces[s].received.ect0 += 1
        case .ect1: spaces[s].received.ect1 += 1
        case .ce: spaces[s].received.ce += 1
        }
    }

    /// The counts for an ACK of `space`, nil (a plain ACK) while every count
    /// is 0: §13.4.1 reports what was received, and nothing marked was.
    public func countsToReport(space: PacketNumberSpace) -> ECNCounts? {
        let c = spaces[space.rawValue].received
        return c.ect0 == 0 && c.ect1 == 0 && c.ce == 0 ? nil : c
    }

    // MARK: sending

    /// Packet `packetNumber` of `space` left in a datagram marked `ecn`
    /// (this struct's `marking` when the datagram was started).
    public mutating func packetSent(space: PacketNumberSpace, packetNumber: UInt64, ecn: ECNCodepoint) {
        guard ecn == .ect0 else { return }
        let s = space.rawValue
        spaces[s].markedSent += 1
        switch state {
        case .testing:
            spaces[s].testingEnd = packetNumber + 1
            testingMarked += 1
        case .capable:
            if spaces[s].capableFrom == nil { spaces[s].capableFrom = packetNumber }
        case .unknown, .failed:
            break
        }
    }

    /// A datagram was finished: the testing period ends after enough marked
    /// packets — in "capable" if ACKs already validated marked packets
    /// (every ACK so far passed, or the state would be "failed").
    public mutating func datagramSent() {
        if state == .testing && testingMarked >= Self.testingPackets { state = markedAcknowledged ? .capable : .unknown }
    }

    func isMarked(space: PacketNumberSpace, packetNumber: UInt64) -> Bool {
        let s = space.rawValue
        if packetNumber < spaces[s].testingEnd { return true }
        if let from = spaces[s].capableFrom, packetNumber >= from { return true }
        return false
    }

    // MARK: validation (§13.4.2.1)

    /// An ACK frame of `space` was processed: `newlyAcknowledged` are the
    /// packets it newly acknowledged, `raisedLargest` whether it raised the
    /// largest acknowledged. True when the peer's CE count grew validly:
    /// the caller reacts as to a loss (RFC 9002 §7.1).
    public mutating func ackReceived(space: PacketNumberSpace, counts: ECNCounts?, newlyAcknowledged: [UInt64],
                                     raisedLargest: Bool) -> Bool {
        guard state != .failed, raisedLargest else { return false }
        let s = space.rawValue
        var marked: UInt64 = 0
        for pn in newlyAcknowledged where isMarked(space: space, packetNumber: pn) { marked += 1 }
        guard let counts else {
            // "ECN validation fails if the corresponding ECN counts are not
            // present in the ACK frame."
            if marked > 0 { state = .failed }
            return false
        }
        let last = spaces[s].peerCounts
        let (total, overflow) = counts.ect0.addingReportingOverflow(counts.ce)
        guard counts.ect0 >= last.ect0, counts.ect1 >= last.ect1, counts.ce >= last.ce,
              // "... a non-zero ECN count corresponding to an ECT codepoint that it never applied."
              counts.ect1 == 0,
              // "... the received total count for either ECT(0) or ECT(1) exceeds the total number of packets sent with" it.
              !overflow, total <= spaces[s].markedSent,
              // "... the sum of the increase in ECT(0) and ECN-CE counts is less than the number of newly
              // acknowledged packets that were originally sent with an ECT(0) marking."
              (counts.ect0 - last.ect0) + (counts.ce - last.ce) >= marked else {
            state = .failed
            return false
        }
        spaces[s].peerCounts = counts
        if marked > 0 { markedAcknowledged = true }
        if state == .unknown && markedAcknowledged { state = .capable }
        guard counts.ce > last.ce else { return false }
        congestionSignals += 1
        return true
    }

    /// Packet `packetNumber` of `space` was declared lost (RFC 9002 §6.1):
    /// §13.4.2 "If all packets marked with non-zero ECN codepoints are
    /// subsequently lost, it can disable marking".
    public mutating func packetLost(space: PacketNumberSpace, packetNumber: UInt64) {
        guard state == .testing || state == .unknown, isMarked(space: space, packetNumber: packetNumber) else { return }
        markedLost += 1
        if state == .unknown && !markedAcknowledged && markedLost >= testingMarked { state = .failed }
    }
}
