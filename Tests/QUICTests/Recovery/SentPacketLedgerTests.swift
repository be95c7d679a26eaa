// The per-space sent-packet store (RFC 9002 §A.1): order, lookup, tombstones,
// and no allocation per packet in steady state.

import XCTest
import Core
@testable import QUIC

final class SentPacketLedgerTests: XCTestCase {
    func testLookupWithGapsAndSettledPrefix() {
        var ledger = SentPacketLedger(initialCapacity: 4)
        for pn: UInt64 in [0, 1, 3, 4, 7] { ledger.append(outstandingPacket(pn)) }
        XCTAssertEqual(ledger.count, 5)
        XCTAssertEqual(ledger.firstPosition(atLeast: 2), 2)
        XCTAssertEqual(ledger[ledger.firstPosition(atLeast: 5)].packetNumber, 7)
        XCTAssertEqual(ledger.firstPosition(atLeast: 8), 5)
        XCTAssertEqual(ledger.bytesInFlight, 6_000)
        XCTAssertEqual(ledger.ackElicitingInFlight, 5)
        _ = ledger.settle(at: 0, as: .acknowledged)
        _ = ledger.settle(at: 1, as: .lost)
        _ = ledger.settle(at: 3, as: .acknowledged)   // a tombstone behind an outstanding packet stays
        ledger.dropSettledPrefix()
        XCTAssertEqual(ledger.count, 3)
        XCTAssertEqual(ledger[0].packetNumber, 3)
        XCTAssertEqual(ledger[1].state, .acknowledged)
        XCTAssertEqual(ledger.bytesInFlight, 2_400)
        XCTAssertTrue(ledger.wasSent(0))               // forgotten, but below the window: sent
        XCTAssertFalse(ledger.wasSent(2))              // never sent (a gap within the window)
        XCTAssertFalse(ledger.wasSent(5))
        XCTAssertFalse(ledger.wasSent(8))
    }

    /// The ring doubles when full, keeping order across the wrap.
    func testGrowthKeepsOrderAcrossWrap() {
        var ledger = SentPacketLedger(initialCapacity: 4)
        for pn: UInt64 in 0..<3 { ledger.append(outstandingPacket(pn)) }
        _ = ledger.settle(at: 0, as: .acknowledged)
        _ = ledger.settle(at: 1, as: .acknowledged)
        ledger.dropSettledPrefix()                     // head = 2
        for pn: UInt64 in 3..<9 { ledger.append(outstandingPacket(pn)) }   // wraps, then grows
        XCTAssertEqual(ledger.capacity, 8)
        XCTAssertEqual((0..<ledger.count).map { ledger[$0].packetNumber }, Array(2..<9))
    }

    /// Packet numbers must increase (RFC 9000 §12.3); a removed space remembers its largest.
    func testRemoveAllReturnsBytesInFlight() {
        var ledger = SentPacketLedger()
        ledger.append(outstandingPacket(0))
        ledger.append(SentPacket(packetNumber: 1, timeSent: at(ms: 1), bytes: 50, ackEliciting: false, inFlight: false,
                                 state: .outstanding))
        XCTAssertEqual(ledger.removeAll(), 1_200)
        XCTAssertEqual(ledger.count, 0)
        XCTAssertEqual(ledger.capacity, 0)  // the ring goes with the space
        XCTAssertEqual(ledger.largestSent, 1)
        XCTAssertNil(ledger.timeOfLastAckEliciting)
        XCTAssertEqual(ledger.ackElicitingInFlight, 0)
    }

    /// "No allocation per packet in steady state": 100,000 packets sent and
    /// acknowledged in windows of 20 grow the ring once, for the first
    /// window (it starts at 8), and never again; the ledger holds only what
    /// is unsettled.
    func testSteadyStateDoesNotGrow() {
        var h = RecoveryHarness()
        XCTAssertEqual(h.recovery.ledger(space: .application).capacity, 8)
        for _ in 0..<20 { h.send() }
        h.advance(ms: 20)
        h.ack([1...19, 0...0])
        let capacity = h.recovery.ledger(space: .application).capacity
        XCTAssertEqual(capacity, 32)
        var pn: UInt64 = 20
        for _ in 1..<5_000 {
            for _ in 0..<20 { h.send() }
            h.advance(ms: 20)
            h.ack([(pn + 1)...(pn + 19), pn...pn])
            pn += 20
        }
        XCTAssertEqual(h.recovery.ledger(space: .application).capacity, capacity)
        XCTAssertEqual(h.recovery.ledger(space: .application).count, 0)
        XCTAssertEqual(h.recovery.bytesInFlight, 0)
    }

    /// A larger window than ever before grows the ring once; it then stays.
    func testRingGrowsOnlyPastPreviousPeak() {
        var h = RecoveryHarness()
        for _ in 0..<200 { h.send() }
        h.advance(ms: 10)
        h.ack([0...199])
        let grown = h.recovery.ledger(space: .application).capacity
        XCTAssertGreaterThanOrEqual(grown, 200)
        for round in 0..<100 {
            for _ in 0..<150 { h.send() }
            h.advance(ms: 10)
            let first = UInt64(200 + round * 150)
            h.ack([first...(first + 149)])
        }
        XCTAssertEqual(h.recovery.ledger(space: .application).capacity, grown)
    }
}
