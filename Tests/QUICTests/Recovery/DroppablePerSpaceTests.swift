// The three spaces' ledgers (DroppablePerSpace): the Initial and Handshake ones
// go once both spaces are discarded (RFC 9001 §4.9), copies stay
// independent (copy-on-write), and a discarded space reads as empty.

import XCTest
import Core
@testable import QUIC

final class DroppablePerSpaceTests: XCTestCase {
    func testEarlyLedgersGoWithBothEarlySpaces() {
        var recovery = LossRecovery(controller: CongestionControl(.newReno, maxDatagramSize: 1_200), maxAckDelay: 0,
                                    now: at(ms: 0))
        recovery.onPacketSent(space: .initial, packetNumber: 0, bytes: 1_200, ackEliciting: true, inFlight: true, now: at(ms: 0))
        recovery.onPacketSent(space: .handshake, packetNumber: 0, bytes: 500, ackEliciting: true, inFlight: true, now: at(ms: 0))
        recovery.onPacketSent(space: .application, packetNumber: 0, bytes: 300, ackEliciting: true, inFlight: true,
                              now: at(ms: 0))
        XCTAssertEqual(recovery.bytesInFlight, 2_000)
        recovery.discard(space: .initial)
        XCTAssertTrue(recovery.ledgers.holdsEarlySpaces, "the Handshake space is not discarded yet")
        XCTAssertEqual(recovery.bytesInFlight, 800)
        recovery.discard(space: .handshake)
        XCTAssertFalse(recovery.ledgers.holdsEarlySpaces)
        XCTAssertEqual(recovery.bytesInFlight, 300)
        XCTAssertEqual(recovery.ledger(space: .initial).count, 0)
        XCTAssertNil(recovery.ledger(space: .handshake).largestSent)
        XCTAssertEqual(recovery.ledger(space: .application).largestSent, 0)
        // Discarding again (a late Initial's keys, say) changes nothing and makes no box.
        recovery.discard(space: .initial)
        XCTAssertFalse(recovery.ledgers.holdsEarlySpaces)
        XCTAssertEqual(recovery.bytesInFlight, 300)
    }

    func testCopiesAreIndependent() {
        var a = DroppablePerSpace<SentPacketLedger>()
        a[0].append(outstandingPacket(0))
        var b = a
        b[0].append(outstandingPacket(1))
        b[1].append(outstandingPacket(7))
        XCTAssertEqual(a[0].count, 1)
        XCTAssertEqual(a[1].count, 0)
        XCTAssertEqual(b[0].count, 2)
        XCTAssertEqual(b[1].count, 1)
        a.dropEarlySpaces()
        XCTAssertEqual(b[0].count, 2, "a copy keeps its own box")
    }

    /// A write to a space whose box is gone is not lost nor a trap: it makes
    /// a fresh box (nothing writes there; this pins the fallback).
    func testAWriteAfterTheDropMakesAFreshBox() {
        var l = DroppablePerSpace<SentPacketLedger>()
        l.dropEarlySpaces()
        XCTAssertEqual(l[1].count, 0)
        XCTAssertFalse(l.holdsEarlySpaces)
        l[1].append(outstandingPacket(3))
        XCTAssertTrue(l.holdsEarlySpaces)
        XCTAssertEqual(l[1].count, 1)
        XCTAssertEqual(l[0].count, 0)
        XCTAssertEqual(l.indices, 0..<3)
        XCTAssertTrue(l.contains { $0.count == 1 })
    }
}
