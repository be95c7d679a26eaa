// Loss recovery end to end over a simulated path (RFC 9002 §6, §7): a fake
// clock, a fixed one-way delay, drops and reordering.

import XCTest
import Core
@testable import QUIC

final class SimulatedLinkTests: XCTestCase {
    /// No loss: everything delivered, nothing declared lost, no probe; slow
    /// start (§7.3.1) grows the window; the RTT estimate converges on the path's.
    func testLosslessTransferGrowsWindowInSlowStart() {
        var link = SimulatedLink(oneWayDelay: ms(25), chunks: 300)
        XCTAssertTrue(link.run())
        XCTAssertEqual(link.delivered.count, 300)
        XCTAssertEqual(link.lostPackets, [])
        XCTAssertEqual(link.probes, 0)
        XCTAssertEqual(link.congestionEvents, 0)
        XCTAssertEqual(link.harness.recovery.persistentCongestionCount, 0)
        XCTAssertGreaterThan(link.harness.window, 100_000)
        XCTAssertEqual(link.harness.recovery.rtt.minRTT, ms(50))
        XCTAssertEqual(link.harness.recovery.rtt.smoothedRTT, ms(50))
    }

    /// Drops in the middle: declared lost by packet threshold (§6.1.1), their
    /// data resent and delivered; one congestion event halves the window (§7.3.2)
    /// although several packets of the same flight were lost.
    func testDropsAreRecoveredWithOneCongestionEvent() {
        var link = SimulatedLink(oneWayDelay: ms(25), chunks: 200)
        link.dropped = [40, 41, 45]
        XCTAssertTrue(link.run())
        XCTAssertEqual(link.delivered.count, 200)
        XCTAssertEqual(link.lostPackets.sorted(), [40, 41, 45])
        XCTAssertEqual(link.congestionEvents, 1)
        XCTAssertEqual(link.probes, 0)
        XCTAssertFalse(link.harness.recovery.controller.isInSlowStart)
    }

    /// Tail loss: nothing follows the last packet, so only the PTO (§6.2)
    /// recovers it; the probe carries the lost data, and the ACK of the probe
    /// then declares the original lost (§6.1).
    func testTailLossRecoveredByProbe() {
        var link = SimulatedLink(oneWayDelay: ms(25), chunks: 20)
        link.dropped = [19]
        XCTAssertTrue(link.run())
        XCTAssertEqual(link.delivered.count, 20)
        XCTAssertGreaterThanOrEqual(link.probes, 1)
        XCTAssertEqual(link.lostPackets, [19])
    }

    /// Reordering within the thresholds (late by less than 1/8 RTT and
    /// overtaken by fewer than kPacketThreshold packets) is not loss (§6.1).
    func testMildReorderingIsNotLoss() {
        var link = SimulatedLink(oneWayDelay: ms(40), chunks: 100)
        link.serialization = ms(1)
        link.extraDelay = [30: 1_500_000, 60: 2_500_000]   // overtaken by one, then two packets
        XCTAssertTrue(link.run())
        XCTAssertEqual(link.lostPackets, [])
        XCTAssertEqual(link.congestionEvents, 0)
    }

    /// Reordering beyond the packet threshold is declared lost (spuriously);
    /// the late original is then acknowledged without being reported twice.
    func testDeepReorderingIsDeclaredLostOnce() {
        var link = SimulatedLink(oneWayDelay: ms(40), chunks: 100)
        link.serialization = ms(1)
        link.extraDelay = [30: ms(30)]
        XCTAssertTrue(link.run())
        XCTAssertEqual(link.lostPackets, [30])
        XCTAssertEqual(link.delivered.count, 100)
    }

    /// A black hole after some traffic: PTOs back off exponentially (§6.2.1)
    /// and, when the path comes back, persistent congestion (§7.6) has reset
    /// the window to the minimum before the transfer completes.
    func testBlackHoleBacksOffThenPersistentCongestion() {
        var link = SimulatedLink(oneWayDelay: ms(25), chunks: 60)
        link.dropped = Set(20..<60)
        XCTAssertTrue(link.run())
        XCTAssertEqual(link.delivered.count, 60)
        XCTAssertEqual(link.harness.recovery.persistentCongestionCount, 1)
        // The ACK that established it also acknowledged a probe: slow start again from the minimum.
        XCTAssertEqual(link.windowTrace.min(), 2_400 + 1_200)
        XCTAssertGreaterThanOrEqual(link.probes, 4)
    }
}
