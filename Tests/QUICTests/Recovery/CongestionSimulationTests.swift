// Both controllers over the simulated link (RecoveryHarness.swift), paced as
// the connection paces: loss, reordering, a blackout, a bottleneck.

import XCTest
import Core
@testable import QUIC

final class CongestionSimulationTests: XCTestCase {
    private struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 33
        }
    }

    /// 5% random loss and some reordering (deterministic seeds): every chunk
    /// arrives under each controller; losses cause congestion events, and
    /// the window never falls below kMinimumWindow (RFC 9002 §7.2).
    func testLossyReorderingTransferCompletesUnderBothControllers() {
        for algorithm in CongestionAlgorithm.allCases {
            for seed in [UInt64(3), 17, 2_026] {
                var link = SimulatedLink(oneWayDelay: ms(20), chunks: 1_500, algorithm: algorithm, paced: true)
                link.serialization = 200_000  // 6 MB/s
                var rng = Generator(state: seed)
                for pn in UInt64(0)..<6_000 {
                    let r = rng.next() % 100
                    if r < 5 { link.dropped.insert(pn) } else if r < 8 { link.extraDelay[pn] = ms(3) }
                }
                XCTAssertTrue(link.run(), "\(algorithm) seed \(seed)")
                XCTAssertEqual(link.delivered.count, 1_500)
                XCTAssertGreaterThan(link.congestionEvents, 0)
                XCTAssertGreaterThanOrEqual(link.windowTrace.min()!, 2_400)
                XCTAssertEqual(link.harness.recovery.bytesInFlight, 0)
            }
        }
    }

    /// A two-second blackout mid-transfer, far longer than the persistent
    /// congestion duration (RFC 9002 §7.6; PTO probes are lost too until it
    /// ends): both controllers restart from kMinimumWindow and still finish.
    func testBlackoutCausesPersistentCongestionUnderBothControllers() {
        for algorithm in CongestionAlgorithm.allCases {
            var link = SimulatedLink(oneWayDelay: ms(25), chunks: 100, algorithm: algorithm, paced: true)
            link.blackout = ms(150)..<ms(2_150)
            XCTAssertTrue(link.run(), "\(algorithm)")
            XCTAssertEqual(link.delivered.count, 100)
            XCTAssertEqual(link.harness.recovery.persistentCongestionCount, 1, "\(algorithm)")
            // The ACK that established it also acknowledged a probe: slow start from the minimum.
            XCTAssertEqual(link.windowTrace.min(), 2_400 + 1_200, "\(algorithm)")
            XCTAssertFalse(link.lostPackets.isEmpty)
            XCTAssertGreaterThanOrEqual(link.probes, 4)
        }
    }

    /// A bottleneck of one 1200-byte packet per ms behind a 50 ms RTT (a
    /// bandwidth-delay product of 50 packets, unlimited buffer): once the
    /// window outgrows it, the queue lengthens the RTT, and HyStart++ (RFC
    /// 9406) ends CUBIC's slow start without a single loss (CSS still grows
    /// the window by a quarter per round for five rounds, so it ends a few
    /// BDPs up); NewReno's slow start only stops at a loss, so it keeps doubling.
    func testHyStartLeavesSlowStartAtTheBottleneckWithoutLoss() {
        var cubic = SimulatedLink(oneWayDelay: ms(25), chunks: 3_000, algorithm: .cubic, paced: true)
        cubic.serialization = ms(1)
        XCTAssertTrue(cubic.run())
        XCTAssertEqual(cubic.lostPackets, [])
        guard case .cubic(let c) = cubic.harness.recovery.controller else { return XCTFail() }
        XCTAssertEqual(c.hyStart.phase, .done)
        XCTAssertFalse(c.isInSlowStart)
        XCTAssertLessThan(c.slowStartThreshold, 8 * 50 * 1_200, "left slow start within 8x the BDP")
        XCTAssertGreaterThan(c.slowStartThreshold, 50 * 1_200)

        var reno = SimulatedLink(oneWayDelay: ms(25), chunks: 3_000, algorithm: .newReno, paced: true)
        reno.serialization = ms(1)
        XCTAssertTrue(reno.run())
        XCTAssertEqual(reno.lostPackets, [])
        XCTAssertTrue(reno.harness.recovery.controller.isInSlowStart)
        XCTAssertGreaterThan(reno.harness.window, 3 * c.congestionWindow)
    }

    /// RFC 9002 §7.8 through LossRecovery: ACKs while far below the window
    /// grow neither controller.
    func testApplicationLimitedSendingDoesNotGrowEitherWindow() {
        for algorithm in CongestionAlgorithm.allCases {
            var h = RecoveryHarness(algorithm: algorithm)
            for round in 0..<20 {
                let pn = h.send()
                h.advance(ms: 50)
                h.ack([pn...pn])
                XCTAssertEqual(h.window, 12_000, "\(algorithm) round \(round)")
            }
        }
    }
}
