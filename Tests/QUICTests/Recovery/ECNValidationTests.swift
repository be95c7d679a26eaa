// ECN counting and validation (RFC 9000 §13.4, Appendix A.4), the struct
// alone: which datagrams are marked, which ACK frames pass or fail the
// §13.4.2.1 checks, and when a CE increase is a congestion signal.

import XCTest
import Core
@testable import QUIC

final class ECNValidationTests: XCTestCase {
    private func counts(_ ect0: UInt64, _ ect1: UInt64 = 0, _ ce: UInt64 = 0) -> ECNCounts {
        ECNCounts(ect0: ect0, ect1: ect1, ce: ce)
    }

    /// Sends `n` one-packet datagrams in the application space, each with
    /// the marking in force; returns their packet numbers and markings.
    @discardableResult
    private func send(_ e: inout ECNValidation, _ n: Int, from first: UInt64) -> [(UInt64, ECNCodepoint)] {
        var out: [(UInt64, ECNCodepoint)] = []
        for i in 0..<UInt64(n) {
            let mark = e.marking
            e.packetSent(space: .application, packetNumber: first + i, ecn: mark)
            e.datagramSent()
            out.append((first + i, mark))
        }
        return out
    }

    /// §13.4.2 / A.4: the first ten packets carry ECT(0), then the state is
    /// "unknown" and packets go unmarked until validation succeeds.
    func testTestingMarksTenPacketsThenWaits() {
        var e = ECNValidation()
        XCTAssertEqual(e.state, .testing)
        let sent = send(&e, 12, from: 0)
        XCTAssertEqual(sent.prefix(10).map(\.1), Array(repeating: .ect0, count: 10))
        XCTAssertEqual(sent.suffix(2).map(\.1), [.notECT, .notECT])
        XCTAssertEqual(e.state, .unknown)
        XCTAssertEqual(e.markedSent[PacketNumberSpace.application.rawValue], 10)
        XCTAssertTrue(e.isMarked(space: .application, packetNumber: 9))
        XCTAssertFalse(e.isMarked(space: .application, packetNumber: 10))
    }

    /// Coalesced packets share one IP header: a datagram of three packets
    /// marks all three, and testing ends only after the datagram.
    func testCoalescedPacketsShareTheDatagramsMark() {
        var e = ECNValidation()
        for round in 0..<4 {
            let mark = e.marking
            XCTAssertEqual(mark, .ect0, "round \(round)")
            for space in PacketNumberSpace.allCases { e.packetSent(space: space, packetNumber: UInt64(round), ecn: mark) }
            e.datagramSent()
        }
        // 12 marked packets in 4 datagrams: the 10th was in the 4th datagram.
        XCTAssertEqual(e.state, .unknown)
        XCTAssertEqual(e.markedSent, [4, 4, 4])
    }

    /// A.4: a valid ACK with a marked packet acknowledged makes the path
    /// "capable"; marking resumes and the new packets count as marked.
    func testValidCountsMakeThePathCapable() {
        var e = ECNValidation()
        send(&e, 12, from: 0)
        XCTAssertFalse(e.ackReceived(space: .application, counts: counts(10), newlyAcknowledged: Array(0...11), raisedLargest: true))
        XCTAssertEqual(e.state, .capable)
        XCTAssertEqual(e.marking, .ect0)
        send(&e, 3, from: 12)
        XCTAssertTrue(e.isMarked(space: .application, packetNumber: 13))
        XCTAssertFalse(e.isMarked(space: .application, packetNumber: 11))
        XCTAssertFalse(e.ackReceived(space: .application, counts: counts(13), newlyAcknowledged: [12, 13, 14], raisedLargest: true))
        XCTAssertEqual(e.state, .capable)
    }

    /// Acknowledgments during testing validate too: a path whose marked
    /// packets were already acknowledged validly is capable as soon as
    /// testing ends, and never stops marking.
    func testAcknowledgedDuringTestingThenCapable() {
        var e = ECNValidation()
        send(&e, 5, from: 0)
        _ = e.ackReceived(space: .application, counts: counts(5), newlyAcknowledged: Array(0...4), raisedLargest: true)
        XCTAssertEqual(e.state, .testing)
        let sent = send(&e, 6, from: 5)
        XCTAssertEqual(e.state, .capable)
        XCTAssertEqual(Set(sent.map(\.1)), [.ect0])
        XCTAssertTrue(e.isMarked(space: .application, packetNumber: 10))
    }

    /// §13.4.2.1: "ECN validation fails if the corresponding ECN counts are
    /// not present in the ACK frame" (a peer that does not report, or a
    /// network that clears the field).
    func testMissingCountsFail() {
        var e = ECNValidation()
        send(&e, 3, from: 0)
        XCTAssertFalse(e.ackReceived(space: .application, counts: nil, newlyAcknowledged: [0, 1, 2], raisedLargest: true))
        XCTAssertEqual(e.state, .failed)
        XCTAssertEqual(e.marking, .notECT)
        // For good: later valid-looking counts change nothing.
        _ = e.ackReceived(space: .application, counts: counts(3), newlyAcknowledged: [], raisedLargest: true)
        XCTAssertEqual(e.state, .failed)
    }

    /// A plain ACK of unmarked packets only is no failure.
    func testMissingCountsForUnmarkedPacketsAreFine() {
        var e = ECNValidation()
        send(&e, 11, from: 0)  // the 11th is unmarked
        _ = e.ackReceived(space: .application, counts: nil, newlyAcknowledged: [10], raisedLargest: true)
        XCTAssertEqual(e.state, .unknown)
    }

    /// §13.4.2.1: "An endpoint MUST NOT fail ECN validation as a result of
    /// processing an ACK frame that does not increase the largest
    /// acknowledged packet number."
    func testReorderedAckNeverFails() {
        var e = ECNValidation()
        send(&e, 4, from: 0)
        _ = e.ackReceived(space: .application, counts: counts(4), newlyAcknowledged: [0, 1, 3], raisedLargest: true)
        // An older ACK (lower counts, no counts at all) arriving late.
        _ = e.ackReceived(space: .application, counts: counts(1), newlyAcknowledged: [2], raisedLargest: false)
        _ = e.ackReceived(space: .application, counts: nil, newlyAcknowledged: [2], raisedLargest: false)
        XCTAssertEqual(e.state, .testing)
        XCTAssertEqual(e.peerCounts[PacketNumberSpace.application.rawValue], counts(4))
    }

    /// Counts are cumulative: one that goes down (in an ACK that raised the
    /// largest acknowledged) is invalid.
    func testDecreasingCountFails() {
        var e = ECNValidation()
        send(&e, 4, from: 0)
        _ = e.ackReceived(space: .application, counts: counts(2), newlyAcknowledged: [0, 1], raisedLargest: true)
        _ = e.ackReceived(space: .application, counts: counts(1, 0, 2), newlyAcknowledged: [2], raisedLargest: true)
        XCTAssertEqual(e.state, .failed)
    }

    /// §13.4.2.1: "validation will fail when an endpoint receives a non-zero
    /// ECN count corresponding to an ECT codepoint that it never applied".
    func testECT1CountFails() {
        var e = ECNValidation()
        send(&e, 2, from: 0)
        _ = e.ackReceived(space: .application, counts: counts(1, 1), newlyAcknowledged: [0, 1], raisedLargest: true)
        XCTAssertEqual(e.state, .failed)
    }

    /// §13.4.2.1: the ECT(0) total (with CE, the only remark a router may
    /// make of it) cannot exceed the packets sent with ECT(0).
    func testCountAboveMarkedSentFails() {
        var e = ECNValidation()
        send(&e, 2, from: 0)
        _ = e.ackReceived(space: .application, counts: counts(2, 0, 1), newlyAcknowledged: [0, 1], raisedLargest: true)
        XCTAssertEqual(e.state, .failed)
        var huge = ECNValidation()
        send(&huge, 2, from: 0)
        _ = huge.ackReceived(space: .application, counts: counts(.max, 0, .max), newlyAcknowledged: [0], raisedLargest: true)
        XCTAssertEqual(huge.state, .failed, "overflowing counts fail, they do not trap")
    }

    /// §13.4.2.1: an increase of ECT(0)+CE smaller than the marked packets
    /// newly acknowledged means the marks were cleared on the way.
    func testBleachedMarksFail() {
        var e = ECNValidation()
        send(&e, 4, from: 0)
        _ = e.ackReceived(space: .application, counts: counts(3), newlyAcknowledged: [0, 1, 2, 3], raisedLargest: true)
        XCTAssertEqual(e.state, .failed)
    }

    /// Counts larger than the packets newly acknowledged are allowed (ACK
    /// frames get lost).
    func testCountsAheadOfAcknowledgmentsAreValid() {
        var e = ECNValidation()
        send(&e, 4, from: 0)
        _ = e.ackReceived(space: .application, counts: counts(4), newlyAcknowledged: [3], raisedLargest: true)
        XCTAssertEqual(e.state, .testing)
    }

    /// RFC 9002 §7.1: a valid CE increase is a congestion signal, one per
    /// ACK that raises the count; an unchanged count is none.
    func testCEIncreaseSignalsCongestion() {
        var e = ECNValidation()
        send(&e, 6, from: 0)
        XCTAssertTrue(e.ackReceived(space: .application, counts: counts(1, 0, 1), newlyAcknowledged: [0, 1], raisedLargest: true))
        XCTAssertFalse(e.ackReceived(space: .application, counts: counts(3, 0, 1), newlyAcknowledged: [2, 3], raisedLargest: true))
        XCTAssertTrue(e.ackReceived(space: .application, counts: counts(3, 0, 3), newlyAcknowledged: [4, 5], raisedLargest: true))
        XCTAssertEqual(e.congestionSignals, 2)
        XCTAssertNotEqual(e.state, .failed)
    }

    /// An invalid CE increase is no signal (the counts are not used).
    func testInvalidCEIncreaseIsNoSignal() {
        var e = ECNValidation()
        send(&e, 2, from: 0)
        XCTAssertFalse(e.ackReceived(space: .application, counts: counts(0, 1, 2), newlyAcknowledged: [0, 1], raisedLargest: true))
        XCTAssertEqual(e.congestionSignals, 0)
    }

    /// §13.4.2: "If all packets marked with non-zero ECN codepoints are
    /// subsequently lost, it can disable marking."
    func testAllMarkedPacketsLostFails() {
        var e = ECNValidation()
        send(&e, 12, from: 0)
        for pn in UInt64(0)..<9 { e.packetLost(space: .application, packetNumber: pn) }
        e.packetLost(space: .application, packetNumber: 11)  // unmarked: does not count
        XCTAssertEqual(e.state, .unknown)
        e.packetLost(space: .application, packetNumber: 9)
        XCTAssertEqual(e.state, .failed)
    }

    /// One marked packet acknowledged: losing the others is ordinary loss.
    func testSomeMarkedPacketsAcknowledgedIsNotFailure() {
        var e = ECNValidation()
        send(&e, 10, from: 0)
        _ = e.ackReceived(space: .application, counts: counts(1), newlyAcknowledged: [9], raisedLargest: true)
        for pn in UInt64(0)..<9 { e.packetLost(space: .application, packetNumber: pn) }
        XCTAssertEqual(e.state, .capable)
    }

    /// §13.4.1: counts per space and per packet processed; an ACK carries
    /// them (ACK_ECN) only once something marked arrived.
    func testReceivedCountsPerSpace() {
        var e = ECNValidation()
        XCTAssertNil(e.countsToReport(space: .application))
        e.packetReceived(space: .application, ecn: .notECT)
        XCTAssertNil(e.countsToReport(space: .application))
        e.packetReceived(space: .application, ecn: .ect0)
        e.packetReceived(space: .application, ecn: .ect0)
        e.packetReceived(space: .application, ecn: .ect1)
        e.packetReceived(space: .application, ecn: .ce)
        e.packetReceived(space: .handshake, ecn: .ce)
        XCTAssertEqual(e.countsToReport(space: .application), counts(2, 1, 1))
        XCTAssertEqual(e.countsToReport(space: .handshake), counts(0, 0, 1))
        XCTAssertNil(e.countsToReport(space: .initial))
    }

    /// The ECN field is the two low bits of the TOS byte (RFC 3168 §5).
    func testCodepointFromTOSByte() {
        XCTAssertEqual(ECNCodepoint(field: 0x02), .ect0)
        XCTAssertEqual(ECNCodepoint(field: 0x01), .ect1)
        XCTAssertEqual(ECNCodepoint(field: 0xb8 | 0x03), .ce, "DSCP EF with CE")
        XCTAssertEqual(ECNCodepoint(field: 0xb8), .notECT)
    }
}
