// Persistent congestion, RFC 9002 §7.6 (and B.8).

import XCTest
import Core
@testable import QUIC

final class PersistentCongestionTests: XCTestCase {
    /// §7.6.3 example, one unit = 40 ms. RTT samples: 8 ms before the example,
    /// 48 ms (#1, sent at 0, acknowledged at 1.2) and 8 ms (#9, 12 to 12.2):
    /// smoothed_rtt = 12.375 ms and rttvar = 11 ms; max_ack_delay = 23.625 ms
    /// makes smoothed_rtt + max(4*rttvar, kGranularity) + max_ack_delay = 80 ms
    /// = 2 units, as the example assumes, and the duration 3 * 2 = 6 units.
    /// Packets #2...#8 are lost when #9 is acknowledged; 8 - 1 = 7 > 6 units.
    func testRFCExampleEstablishesPersistentCongestion() {
        var h = RecoveryHarness(maxAckDelay: 23_625_000)
        let unit = ms(40)
        h.send(); h.advance(ms: 8); h.ack([0...0])            // the prior RTT sample
        let t0 = h.now.nanoseconds
        func time(_ units: Double) -> Instant { Instant(nanoseconds: t0 + Int64(units * Double(unit))) }
        h.advance(to: time(0)); h.send()                      // #1
        h.advance(to: time(1)); h.send()                      // #2
        h.advance(to: time(1.2)); h.ack([1...1])              // acknowledgment of #1
        for t in [2.0, 3, 4, 5, 6] { h.advance(to: time(t)); h.send() }   // #3 ... #7
        h.advance(to: time(8)); h.send()                      // #8 (PTO 1)
        h.advance(to: time(12)); h.send()                     // #9 (PTO 2)
        h.advance(to: time(12.2))
        XCTAssertGreaterThan(h.window, 2_400)
        let result = h.ack([9...9])
        XCTAssertEqual(h.recovery.rtt.probeTimeout(maxAckDelay: 23_625_000), 2 * unit)
        XCTAssertEqual(result.lost, [2, 3, 4, 5, 6, 7, 8])
        XCTAssertEqual(h.window, 2_400)
        XCTAssertNil(h.recovery.controller.recoveryStartTime)
        XCTAssertTrue(h.recovery.controller.isInSlowStart)
        // §5.2: min_rtt is set to the newest sample after persistent congestion.
        XCTAssertEqual(h.recovery.rtt.minRTT, h.recovery.rtt.latestRTT)
    }

    /// The same example with #2 and #3 acknowledged late: the lost span is
    /// #4...#8, 4 units, not more than 6: an ordinary congestion event.
    func testRFCExampleWithShorterSpanIsOrdinaryLoss() {
        var h = RecoveryHarness(maxAckDelay: 23_625_000)
        let unit = ms(40)
        h.send(); h.advance(ms: 8); h.ack([0...0])
        let t0 = h.now.nanoseconds
        func time(_ units: Double) -> Instant { Instant(nanoseconds: t0 + Int64(units * Double(unit))) }
        h.advance(to: time(0)); h.send()
        h.advance(to: time(1)); h.send()
        h.advance(to: time(1.2)); h.ack([1...1])
        for t in [2.0, 3, 4, 5, 6] { h.advance(to: time(t)); h.send() }
        h.advance(to: time(8)); h.send()
        h.advance(to: time(12)); h.send()
        h.advance(to: time(12.2))
        let window = h.window
        let result = h.ack([9...9, 2...3])                    // #2 and #3 arrived after all
        XCTAssertEqual(result.lost, [4, 5, 6, 7, 8])
        XCTAssertEqual(h.window, window / 2)
    }

    /// §7.6.2: "none of the packets sent between the send times of these two
    /// packets are acknowledged" — one acknowledged packet in between breaks it.
    func testAcknowledgedPacketBetweenPreventsPersistentCongestion() {
        var h = RecoveryHarness(maxAckDelay: 0)
        h.send(); h.advance(ms: 100); h.ack([0...0])          // duration 3 * 300 = 900 ms
        for _ in 0..<5 { h.send(); h.advance(ms: 250) }       // 1...5 over 1000+ ms
        h.send()                                              // 6
        h.advance(ms: 10)
        let result = h.ack([6...6, 3...3])                    // 3 acknowledged between the losses
        XCTAssertEqual(result.lost, [1, 2, 4, 5])             // spans 1-2 (250 ms) and 4-5 (250 ms)
        XCTAssertEqual(h.window, 6_000)                       // an ordinary halving only
        XCTAssertNotNil(h.recovery.controller.recoveryStartTime)
    }

    /// §7.6.2: the lost span must exceed the duration.
    func testShortLossSpanIsNotPersistentCongestion() {
        var h = RecoveryHarness(maxAckDelay: 0)
        h.send(); h.advance(ms: 100); h.ack([0...0])          // duration 900 ms
        for _ in 0..<4 { h.send(); h.advance(ms: 300) }       // 1...4: 1 to 3 span 600 ms
        h.send()
        h.advance(ms: 10)
        XCTAssertEqual(h.ack([5...5]).lost, [1, 2, 3, 4])     // 1 to 4: 900 ms, not more
        XCTAssertEqual(h.window, 6_000)
    }

    /// §7.6.2: "a prior RTT sample existed when these two packets were sent"
    /// (B.8: only packets sent after the first sample count).
    func testNoPersistentCongestionWithoutPriorRTTSample() {
        var h = RecoveryHarness(maxAckDelay: 0)
        for _ in 0..<6 { h.send(); h.advance(ms: 2_000) }     // 0...5 over 10 s, no sample yet
        h.send()                                              // 6
        h.advance(ms: 10)
        XCTAssertEqual(h.ack([6...6]).lost, [0, 1, 2, 3, 4, 5])
        XCTAssertEqual(h.window, 6_000)
    }

    /// §7.6.2: "These two packets MUST be ack-eliciting."
    func testNonAckElicitingLossesDoNotCount() {
        var h = RecoveryHarness(maxAckDelay: 0)
        h.send(); h.advance(ms: 100); h.ack([0...0])
        h.send()                                              // 1: ack-eliciting
        h.advance(ms: 2_000)
        h.send(bytes: 1_200, ackEliciting: false, inFlight: true)   // 2: padding only
        h.send(); h.send()                                    // 3, 4
        h.send()                                              // 5
        h.advance(ms: 10)
        XCTAssertEqual(h.ack([5...5]).lost, [1, 2])           // only 1 is ack-eliciting among the lost
        XCTAssertEqual(h.window, 6_000)
    }
}
