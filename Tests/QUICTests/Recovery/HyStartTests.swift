// HyStart++ (RFC 9406 §4.2) round by round with a fake clock.

import XCTest
import Core
@testable import QUIC

final class HyStartTests: XCTestCase {
    /// Feeds one round of `acks` ACKs, each an RTT sample of `rtt`. A round
    /// starts when an ACK acknowledges a packet sent at or after the previous
    /// round's start: the first ACK of each round acknowledges exactly that
    /// packet, the others older ones. Rounds are 100 ms apart.
    private struct Driver {
        var hyStart = HyStart()
        var round: Int64 = 0

        mutating func round(rtt: Int64, acks: Int = 8) -> [HyStart.Verdict] {
            let start = round * 100
            let previous = (round - 1) * 100
            round += 1
            return (0..<acks).map { i in
                hyStart.onAck(sentTime: Instant(nanoseconds: ms(previous) + Int64(i)), latestRTT: rtt,
                              now: at(ms: start + Int64(i)))
            }
        }
    }

    /// Flat RTTs never end slow start: growth stays full (divisor 1).
    func testConstantRTTStaysInSlowStart() {
        var d = Driver()
        for _ in 0..<20 {
            XCTAssertEqual(d.round(rtt: ms(50)), Array(repeating: .grow(divisor: 1), count: 8))
        }
        XCTAssertEqual(d.hyStart.phase, .slowStart)
        XCTAssertEqual(d.hyStart.lastRoundMinRTT, ms(50))
    }

    /// §4.2: a round's minimum RTT of at least lastRoundMinRTT + RttThresh
    /// (lastRoundMinRTT / 8 = 12.5 ms here), after N_RTT_SAMPLE = 8 samples,
    /// enters Conservative Slow Start; not on the 7th sample, and not below
    /// the threshold.
    func testRTTIncreaseEntersConservativeSlowStartAfterEightSamples() {
        var d = Driver()
        _ = d.round(rtt: ms(100))
        _ = d.round(rtt: ms(100))
        XCTAssertEqual(d.round(rtt: ms(112)), Array(repeating: .grow(divisor: 1), count: 8))  // +12 ms < 12.5 ms
        XCTAssertEqual(d.hyStart.phase, .slowStart)
        // lastRoundMinRTT is now 112: the threshold 14 ms.
        let verdicts = d.round(rtt: ms(126))
        XCTAssertEqual(Array(verdicts.prefix(7)), Array(repeating: .grow(divisor: 1), count: 7))
        XCTAssertEqual(verdicts[7], .grow(divisor: HyStart.cssGrowthDivisor))
        XCTAssertEqual(d.hyStart.phase, .conservativeSlowStart(baselineMinRTT: ms(126), rounds: 0))
    }

    /// §4.3: RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT /
    /// MIN_RTT_DIVISOR, MAX_RTT_THRESH)): 4 ms floor on short paths, 16 ms
    /// cap on long ones.
    func testRTTThresholdIsClampedBetweenFourAndSixteenMilliseconds() {
        for (base, below, atThreshold) in [(ms(10), ms(13), ms(14)), (ms(400), ms(415), ms(416))] {
            var d = Driver()
            _ = d.round(rtt: base)
            _ = d.round(rtt: below)
            XCTAssertEqual(d.hyStart.phase, .slowStart, "\(base)")
            var e = Driver()
            _ = e.round(rtt: base)
            _ = e.round(rtt: atThreshold)
            XCTAssertEqual(e.hyStart.phase, .conservativeSlowStart(baselineMinRTT: atThreshold, rounds: 0), "\(base)")
        }
    }

    /// §4.2: CSS grows by a quarter and, after CSS_ROUNDS = 5 rounds, enters
    /// congestion avoidance.
    func testConservativeSlowStartEndsAfterFiveRounds() {
        var d = Driver()
        _ = d.round(rtt: ms(100))
        _ = d.round(rtt: ms(130))
        for rounds in 1..<HyStart.cssRounds {
            XCTAssertEqual(d.round(rtt: ms(130)), Array(repeating: .grow(divisor: 4), count: 8))
            XCTAssertEqual(d.hyStart.phase, .conservativeSlowStart(baselineMinRTT: ms(130), rounds: rounds))
        }
        XCTAssertEqual(d.round(rtt: ms(130), acks: 1), [.enterCongestionAvoidance])
        XCTAssertEqual(d.hyStart.phase, .done)
        XCTAssertEqual(d.round(rtt: ms(500)), Array(repeating: .grow(divisor: 1), count: 8))
    }

    /// §4.2: in CSS, a round whose minimum RTT falls below the baseline
    /// means the exit was spurious: back to slow start.
    func testRTTBelowTheBaselineResumesSlowStart() {
        var d = Driver()
        _ = d.round(rtt: ms(100))
        _ = d.round(rtt: ms(130))
        let verdicts = d.round(rtt: ms(120))
        XCTAssertEqual(Array(verdicts.prefix(7)), Array(repeating: .grow(divisor: 4), count: 7))
        XCTAssertEqual(verdicts[7], .grow(divisor: 1))
        XCTAssertEqual(d.hyStart.phase, .slowStart)
    }

    /// Through CUBIC: CSS adds a quarter of the bytes acknowledged, a loss
    /// ends HyStart++ for good.
    func testCubicGrowsAQuarterInCSSAndStopsHyStartOnLoss() {
        var c = Cubic(maxDatagramSize: 1_200)
        var r = RTTEstimator()
        func ack(_ sent: Int64, _ now: Int64, rtt sample: Int64) {
            r.update(latest: sample, ackDelay: 0, maxAckDelay: 0, handshakeConfirmed: true)
            c.onPacketsAcked(bytes: 1_200, largestAckedSentTime: Instant(nanoseconds: sent), rtt: r, now: at(ms: now),
                             appLimited: false)
        }
        for i in 0..<8 { ack(Int64(i) - 10, Int64(i), rtt: ms(100)) }          // round 1
        for i in 0..<8 { ack(Int64(i), 100 + Int64(i), rtt: ms(130)) }         // round 2: into CSS on the 8th
        XCTAssertEqual(c.region, .conservativeSlowStart)
        XCTAssertEqual(c.congestionWindow, 12_000 + 15 * 1_200 + 300)
        ack(5, 108, rtt: ms(130))
        XCTAssertEqual(c.congestionWindow, 12_000 + 15 * 1_200 + 600)
        c.onCongestionEvent(sentTime: at(ms: 108), now: at(ms: 110))
        XCTAssertEqual(c.hyStart.phase, .done)
        XCTAssertEqual(c.slowStartThreshold, Int(Double(12_000 + 15 * 1_200 + 600) * 0.7))
    }
}
