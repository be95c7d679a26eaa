// Pacing (RFC 9002 §7.7) with a fake clock: the interval, the burst, and
// what is and is not paced.

import XCTest
import Core
@testable import QUIC

final class PacerTests: XCTestCase {
    /// §7.7: rate = N * congestion_window / smoothed_rtt with N = 1.25, so a
    /// 1200-byte packet with a 12,000-byte window over 100 ms takes
    /// 100 ms / 10 / 1.25 = 8 ms.
    func testIntervalIsRTTOverPacketsPerWindowOverGain() {
        XCTAssertEqual(Pacer.interval(bytes: 1_200, congestionWindow: 12_000, smoothedRTT: ms(100)), ms(8))
        XCTAssertEqual(Pacer.interval(bytes: 600, congestionWindow: 12_000, smoothedRTT: ms(100)), ms(4))
        XCTAssertEqual(Pacer.interval(bytes: 1_200, congestionWindow: 120_000, smoothedRTT: ms(100)), 800_000)
        // A huge RTT saturates instead of trapping; a zero window is treated as one byte.
        XCTAssertGreaterThan(Pacer.interval(bytes: 1_500, congestionWindow: 2_400, smoothedRTT: .max / 2), 0)
        XCTAssertEqual(Pacer.interval(bytes: 1_200, congestionWindow: 0, smoothedRTT: 1_000), 960_000)
    }

    /// Up to `burstDatagrams` packets back to back, then one per interval;
    /// each may leave one timer granularity (1 ms) early. Idle time earns
    /// no more than the same burst.
    func testBurstThenOnePacketPerInterval() {
        var p = Pacer()
        var now = at(ms: 1_000)
        for _ in 0..<Pacer.burstDatagrams {
            XCTAssertNil(p.releaseTime(now: now))
            p.onPacketSent(bytes: 1_200, congestionWindow: 12_000, smoothedRTT: ms(100), maxDatagramSize: 1_200, now: now)
        }
        XCTAssertEqual(p.releaseTime(now: now), at(ms: 1_007))
        for i in 1...20 {
            now = p.releaseTime(now: now)!
            XCTAssertEqual(now, at(ms: 1_007 + 8 * Int64(i - 1)))
            XCTAssertNil(p.releaseTime(now: now))
            p.onPacketSent(bytes: 1_200, congestionWindow: 12_000, smoothedRTT: ms(100), maxDatagramSize: 1_200, now: now)
        }
        // A long idle period: again exactly one burst.
        now = at(ms: 60_000)
        var burst = 0
        while p.releaseTime(now: now) == nil {
            p.onPacketSent(bytes: 1_200, congestionWindow: 12_000, smoothedRTT: ms(100), maxDatagramSize: 1_200, now: now)
            burst += 1
        }
        XCTAssertEqual(burst, Pacer.burstDatagrams)
    }

    /// Through LossRecovery: nothing is paced before the first RTT sample
    /// (the rate is unknown); after it, in-flight packets of one window are
    /// spaced RTT / (cwnd / MSS) / 1.25 apart, and ACK-only packets (not in
    /// flight) neither wait nor use up the budget.
    func testLossRecoveryPacesInFlightPacketsOnly() {
        for algorithm in CongestionAlgorithm.allCases {
            var h = RecoveryHarness(algorithm: algorithm)
            for _ in 0..<10 {
                XCTAssertNil(h.recovery.pacingReleaseTime(now: h.now))
                h.send()
            }
            h.advance(ms: 100)
            h.ack([0...9])
            XCTAssertEqual(h.recovery.rtt.smoothedRTT, ms(100))
            let window = h.window
            XCTAssertEqual(window, 24_000)  // slow start: 12,000 + 12,000 acknowledged
            let expected = ms(100) * 1_200 * 4 / (Int64(window) * 5)   // 4 ms
            var times: [Int64] = []
            while h.recovery.sendAllowance >= 1_200 {
                if let release = h.recovery.pacingReleaseTime(now: h.now) {
                    // ACK-only packets go at once and change nothing.
                    h.send(bytes: 50, ackEliciting: false, inFlight: false)
                    XCTAssertEqual(h.recovery.pacingReleaseTime(now: h.now), release)
                    h.advance(to: release)
                }
                times.append(h.now.nanoseconds)
                h.send()
            }
            XCTAssertEqual(times.count, window / 1_200)
            let burst = Pacer.burstDatagrams
            XCTAssertTrue(times.prefix(burst).allSatisfy { $0 == times[0] })
            // The first paced packet leaves a granularity early, the rest one interval apart.
            XCTAssertEqual(times[burst] - times[burst - 1], expected - Pacer.granularity)
            let gaps = zip(times.dropFirst(burst + 1), times.dropFirst(burst)).map { $0 - $1 }
            XCTAssertTrue(gaps.allSatisfy { $0 == expected }, "\(algorithm): \(gaps)")
            // The window's paced part spans (packets - burst) intervals: about RTT / 1.25.
            XCTAssertEqual(times.last! - times[0], Int64(window / 1_200 - burst) * expected - Pacer.granularity)
        }
    }
}
