// CUBIC (RFC 9438) driven by hand with a fake clock: the window after each
// ACK against the RFC's equations.

import XCTest
import Core
@testable import QUIC

final class CubicTests: XCTestCase {
    private func rtt(_ value: Int64) -> RTTEstimator {
        var r = RTTEstimator()
        r.update(latest: value, ackDelay: 0, maxAckDelay: 0, handshakeConfirmed: true)
        return r
    }

    /// A controller grown in slow start to `window` bytes, then a loss at
    /// `lossAt`: the start of a congestion avoidance epoch.
    private func afterLoss(window: Int, lossAt: Instant, hyStart: Bool = false) -> Cubic {
        var c = Cubic(maxDatagramSize: 1_200, hyStart: hyStart)
        c.onPacketsAcked(bytes: window - c.congestionWindow, largestAckedSentTime: at(ms: 0), rtt: rtt(ms(100)),
                         now: at(ms: 100), appLimited: false)
        XCTAssertEqual(c.congestionWindow, window)
        c.onCongestionEvent(sentTime: lossAt, now: lossAt)
        return c
    }

    /// RFC 9002 §7.2: kInitialWindow = min(10 * max_datagram_size,
    /// max(14720, 2 * max_datagram_size)); kMinimumWindow = 2 * max_datagram_size.
    /// Both controllers start there.
    func testInitialAndMinimumWindowFollowRFC9002() {
        for (size, initial) in [(1_200, 12_000), (1_472, 14_720), (9_000, 18_000)] {
            for algorithm in CongestionAlgorithm.allCases {
                let c = CongestionControl(algorithm, maxDatagramSize: size)
                XCTAssertEqual(c.congestionWindow, initial, "\(algorithm) \(size)")
                XCTAssertEqual(c.initialWindow, initial)
                XCTAssertEqual(c.minimumWindow, 2 * size)
                XCTAssertEqual(c.slowStartThreshold, .max)
                XCTAssertTrue(c.isInSlowStart)
                XCTAssertEqual(c.algorithm, algorithm)
            }
        }
    }

    /// §4.10 / RFC 9002 §7.3.1: slow start adds the bytes acknowledged, so
    /// the window doubles each round trip while the RTT stays flat.
    func testSlowStartDoublesPerRoundTrip() {
        var c = Cubic(maxDatagramSize: 1_200)
        var now: Int64 = 0
        for round in 1...6 {
            let window = c.congestionWindow
            // One ACK per datagram of the window, each an RTT sample of 50 ms.
            for i in 0..<(window / 1_200) {
                now += 1
                c.onPacketsAcked(bytes: 1_200, largestAckedSentTime: Instant(nanoseconds: ms(now - 50) + Int64(i)),
                                 rtt: rtt(ms(50)), now: at(ms: now), appLimited: false)
            }
            XCTAssertEqual(c.congestionWindow, 12_000 << round)
            XCTAssertEqual(c.region, .slowStart)
        }
        XCTAssertTrue(c.isInSlowStart)
        XCTAssertEqual(c.hyStart.phase, .slowStart)
    }

    /// §4.6: "ssthresh = cwnd * β_cubic", cwnd = ssthresh, β_cubic = 0.7;
    /// W_max remembers the window before. RFC 9002 §7.3.2: one reduction per
    /// recovery period, and no growth from ACKs of packets sent before it.
    func testLossReducesTheWindowToSeventyPercentOncePerRecoveryPeriod() {
        var c = afterLoss(window: 100_800, lossAt: at(ms: 1_000))
        XCTAssertEqual(c.congestionWindow, 70_560)
        XCTAssertEqual(c.slowStartThreshold, 70_560)
        XCTAssertEqual(c.windowMax, 100_800)
        XCTAssertEqual(c.windowPrior, 100_800)
        XCTAssertFalse(c.isInSlowStart)
        XCTAssertEqual(c.recoveryStartTime, at(ms: 1_000))
        // Another loss from the same flight: same recovery period.
        c.onCongestionEvent(sentTime: at(ms: 990), now: at(ms: 1_050))
        XCTAssertEqual(c.congestionWindow, 70_560)
        // ACKs of packets sent before recovery began do not grow the window.
        c.onPacketsAcked(bytes: 50_000, largestAckedSentTime: at(ms: 1_000), rtt: rtt(ms(100)), now: at(ms: 1_100),
                         appLimited: false)
        XCTAssertEqual(c.congestionWindow, 70_560)
        XCTAssertEqual(c.region, .recovery)
        XCTAssertNil(c.epochStart)
    }

    /// RFC 9002 §7.2: the reduction never goes below kMinimumWindow.
    func testLossNeverGoesBelowTheMinimumWindow() {
        var c = Cubic(maxDatagramSize: 1_200)
        c.onPersistentCongestion()
        XCTAssertEqual(c.congestionWindow, 2_400)
        c.onCongestionEvent(sentTime: at(ms: 10), now: at(ms: 10))
        XCTAssertEqual(c.congestionWindow, 2_400)  // 0.7 * 2400 = 1680 < 2400
        XCTAssertEqual(c.slowStartThreshold, 2_400)
    }

    /// §4.7 fast convergence: a loss while the window is still below W_max
    /// (the available bandwidth shrank) lowers W_max further, to
    /// cwnd * (1 + β_cubic) / 2.
    func testFastConvergenceLowersWMaxWhenLossComesBelowIt() {
        var c = afterLoss(window: 100_800, lossAt: at(ms: 1_000))
        c.onPacketsAcked(bytes: 70_560, largestAckedSentTime: at(ms: 1_010), rtt: rtt(ms(100)), now: at(ms: 1_110),
                         appLimited: false)
        let before = Double(c.congestionWindow)
        XCTAssertLessThan(before, 100_800)
        c.onCongestionEvent(sentTime: at(ms: 1_110), now: at(ms: 1_200))
        XCTAssertEqual(c.windowMax!, before * 0.85, accuracy: 1)
        XCTAssertEqual(Double(c.congestionWindow), before * 0.7, accuracy: 1)
        // Without fast convergence W_max is the window itself.
        var plain = Cubic(maxDatagramSize: 1_200, hyStart: false, fastConvergence: false)
        plain.onPacketsAcked(bytes: 88_800, largestAckedSentTime: at(ms: 0), rtt: rtt(ms(100)), now: at(ms: 100),
                             appLimited: false)
        plain.onCongestionEvent(sentTime: at(ms: 1_000), now: at(ms: 1_000))
        plain.onPacketsAcked(bytes: 70_560, largestAckedSentTime: at(ms: 1_010), rtt: rtt(ms(100)), now: at(ms: 1_110),
                             appLimited: false)
        let w = Double(plain.congestionWindow)
        plain.onCongestionEvent(sentTime: at(ms: 1_110), now: at(ms: 1_200))
        XCTAssertEqual(plain.windowMax!, w, accuracy: 1)
    }

    /// §4.2 Eq. 1–2, §4.4, §4.5: acknowledging a whole window per RTT moves
    /// cwnd to the target W_cubic(t + RTT); K = cbrt((W_max - cwnd_epoch) / C)
    /// = cbrt(0.3 * 1000 segments / 0.4) ≈ 9.09 s. Before K the curve is
    /// concave (increments shrink toward W_max), after it convex (they grow);
    /// with a window this large the Reno estimate stays below throughout.
    func testConcaveThenConvexGrowthFollowsTheCubicFunction() {
        var c = afterLoss(window: 1_200_000, lossAt: at(ms: 1_000))
        let r = rtt(ms(100))
        var now: Int64 = 1_000
        var trace: [(t: Double, window: Int, region: Cubic.Region)] = []
        for _ in 0..<140 {
            now += 100
            // Acknowledges packets sent after the recovery period began (RFC 9002 §7.3.2).
            c.onPacketsAcked(bytes: c.congestionWindow, largestAckedSentTime: at(ms: now - 99), rtt: r, now: at(ms: now),
                             appLimited: false)
            let t = Double(now - 1_100) / 1_000
            trace.append((t, c.congestionWindow, c.region))
            if t > 0 {
                // cwnd += (target - cwnd) * acked / cwnd with acked = cwnd: cwnd = target.
                XCTAssertEqual(Double(c.congestionWindow), c.cubicWindow(t: t + 0.1), accuracy: 2, "t=\(t)")
            }
        }
        XCTAssertEqual(c.epochStart, at(ms: 1_100))
        XCTAssertEqual(c.k, cubeRoot(Double(1_200_000 - 840_000) / (0.4 * 1_200)), accuracy: 1e-9)
        XCTAssertEqual(c.k, 9.086, accuracy: 0.001)
        // The epoch's first ACK (t = 0) is Reno-friendly: W_cubic(0) = cwnd_epoch < W_est.
        XCTAssertEqual(trace[0].region, .renoFriendly)
        let concave = trace.filter { $0.t > 0 && $0.t + 0.1 < c.k - 0.05 }
        let convex = trace.filter { $0.t > c.k + 0.05 }
        XCTAssertGreaterThan(concave.count, 30)
        XCTAssertGreaterThan(convex.count, 30)
        XCTAssertTrue(concave.allSatisfy { $0.region == .concave && $0.window < 1_200_000 })
        XCTAssertTrue(convex.allSatisfy { $0.region == .convex && $0.window > 1_200_000 }, "\(convex.map { ($0.t, $0.window, $0.region) })")
        let concaveSteps = zip(concave.dropFirst(), concave).map { $0.window - $1.window }
        let convexSteps = zip(convex.dropFirst(), convex).map { $0.window - $1.window }
        // Non-increasing / non-decreasing, up to the byte lost to truncation.
        XCTAssertTrue(zip(concaveSteps.dropFirst(), concaveSteps).allSatisfy { $0 <= $1 + 1 }, "\(concaveSteps)")
        XCTAssertTrue(zip(convexSteps.dropFirst(), convexSteps).allSatisfy { $0 + 1 >= $1 }, "\(convexSteps)")
        XCTAssertTrue(concaveSteps.allSatisfy { $0 >= 0 })
        XCTAssertGreaterThan(concaveSteps.first!, 10 * concaveSteps.last!)
        XCTAssertGreaterThan(convexSteps.last!, 10 * max(convexSteps.first!, 1))
        XCTAssertLessThan(c.windowEstimate, 1_200_000)
    }

    /// §4.3: on a short RTT the Reno estimate W_est (α_cubic = 3(1-β)/(1+β)
    /// ≈ 0.53 segments per RTT until it reaches cwnd_prior, then 1) outruns
    /// W_cubic, and cwnd follows W_est: CUBIC is never slower than Reno.
    func testRenoFriendlyRegionOnShortRTT() {
        var c = afterLoss(window: 24_000, lossAt: at(ms: 1_000))
        XCTAssertEqual(c.congestionWindow, 16_800)
        let r = rtt(ms(10))
        var now: Int64 = 1_000
        now += 10
        c.onPacketsAcked(bytes: c.congestionWindow, largestAckedSentTime: at(ms: now - 9), rtt: r, now: at(ms: now),
                         appLimited: false)
        XCTAssertEqual(Cubic.alpha, 0.9 / 1.7, accuracy: 1e-12)
        XCTAssertEqual(c.windowEstimate, 16_800 + Cubic.alpha * 1_200, accuracy: 1e-6)
        XCTAssertEqual(c.region, .renoFriendly)
        XCTAssertEqual(c.congestionWindow, 17_435)
        var perRound: [Int] = []
        for _ in 0..<99 {
            now += 10
            let before = c.congestionWindow
            c.onPacketsAcked(bytes: c.congestionWindow, largestAckedSentTime: at(ms: now - 10), rtt: r, now: at(ms: now),
                             appLimited: false)
            perRound.append(c.congestionWindow - before)
            XCTAssertEqual(c.region, .renoFriendly)
            XCTAssertEqual(c.congestionWindow, Int(c.windowEstimate))
            XCTAssertGreaterThan(Double(c.congestionWindow), c.cubicWindow(t: Double(now - 1_010) / 1_000))
        }
        // 0.53 segments per RTT below cwnd_prior (24,000), 1 segment after.
        XCTAssertTrue(perRound.prefix(10).allSatisfy { $0 == 635 || $0 == 636 }, "\(perRound.prefix(12))")
        XCTAssertTrue(perRound.suffix(80).allSatisfy { $0 == 1_200 }, "\(perRound.suffix(80))")
    }

    /// §5.8: "CUBIC does not increase cwnd if a flow is application limited",
    /// and the limited time does not count toward t: the curve resumes where
    /// it stood.
    func testApplicationLimitedAcksNeitherGrowTheWindowNorAdvanceTheCurve() {
        var limited = afterLoss(window: 100_800, lossAt: at(ms: 1_000))
        var reference = limited
        let r = rtt(ms(100))
        limited.onPacketsAcked(bytes: 70_560, largestAckedSentTime: at(ms: 1_010), rtt: r, now: at(ms: 1_100), appLimited: false)
        reference.onPacketsAcked(bytes: 70_560, largestAckedSentTime: at(ms: 1_010), rtt: r, now: at(ms: 1_100), appLimited: false)
        let window = limited.congestionWindow
        // Five seconds of application-limited ACKs.
        for i in 1...50 {
            limited.onPacketsAcked(bytes: 5_000, largestAckedSentTime: at(ms: 1_100 + Int64(i) * 100 - 50), rtt: r,
                                   now: at(ms: 1_100 + Int64(i) * 100), appLimited: true)
            XCTAssertEqual(limited.congestionWindow, window)
        }
        XCTAssertEqual(limited.epochStart, at(ms: 6_100))
        // Then the same full-window ACK as the reference's, shifted by those five seconds.
        limited.onPacketsAcked(bytes: window, largestAckedSentTime: at(ms: 6_150), rtt: r, now: at(ms: 6_200), appLimited: false)
        reference.onPacketsAcked(bytes: window, largestAckedSentTime: at(ms: 1_150), rtt: r, now: at(ms: 1_200), appLimited: false)
        XCTAssertEqual(limited.congestionWindow, reference.congestionWindow)
        XCTAssertGreaterThan(limited.congestionWindow, window)
        // In slow start too.
        var fresh = Cubic(maxDatagramSize: 1_200)
        fresh.onPacketsAcked(bytes: 6_000, largestAckedSentTime: at(ms: 0), rtt: r, now: at(ms: 100), appLimited: true)
        XCTAssertEqual(fresh.congestionWindow, 12_000)
    }

    /// RFC 9002 §7.6.2 with RFC 9438 §4.8: persistent congestion takes the
    /// window to kMinimumWindow; the following slow start is the standard one
    /// (RFC 9406 §4.2: HyStart++ only for the initial slow start), up to the
    /// ssthresh of the congestion event; then a new CUBIC epoch toward W_max.
    func testPersistentCongestionRestartsFromTheMinimumWindow() {
        var c = afterLoss(window: 100_800, lossAt: at(ms: 1_000), hyStart: true)
        c.onPersistentCongestion()
        XCTAssertEqual(c.congestionWindow, 2_400)
        XCTAssertNil(c.recoveryStartTime)
        XCTAssertNil(c.epochStart)
        XCTAssertEqual(c.hyStart.phase, .done)
        XCTAssertTrue(c.isInSlowStart)
        XCTAssertEqual(c.slowStartThreshold, 70_560)
        c.onPacketsAcked(bytes: 2_400, largestAckedSentTime: at(ms: 900), rtt: rtt(ms(100)), now: at(ms: 2_000), appLimited: false)
        XCTAssertEqual(c.congestionWindow, 4_800)
        XCTAssertEqual(c.region, .slowStart)
        c.onPacketsAcked(bytes: 66_000, largestAckedSentTime: at(ms: 2_000), rtt: rtt(ms(100)), now: at(ms: 2_100), appLimited: false)
        XCTAssertFalse(c.isInSlowStart)
        c.onPacketsAcked(bytes: 1_200, largestAckedSentTime: at(ms: 2_100), rtt: rtt(ms(100)), now: at(ms: 2_200), appLimited: false)
        XCTAssertEqual(c.epochStart, at(ms: 2_200))
        XCTAssertEqual(c.windowMax, 100_800)
        XCTAssertGreaterThan(c.k, 0)
    }

    /// HyStart++ leaving slow start without a loss: after CSS_ROUNDS rounds
    /// of CSS, ssthresh = cwnd (RFC 9406 §4.2); the CUBIC epoch then starts at
    /// its plateau (W_max = cwnd, K = 0) and grows convexly.
    func testHyStartExitStartsAConvexEpoch() {
        var c = Cubic(maxDatagramSize: 1_200)
        var now: Int64 = 0
        var previousRoundStart: Int64 = -100
        var exited = false
        for round in 0..<20 where !exited {
            let start = now
            let sample = round < 3 ? ms(100) : ms(130)  // a queue builds from round 3
            for i in 0..<10 {
                c.onPacketsAcked(bytes: 1_200, largestAckedSentTime: Instant(nanoseconds: ms(previousRoundStart) + Int64(i)),
                                 rtt: rtt(sample), now: at(ms: now), appLimited: false)
                now += 10
                if !c.isInSlowStart { exited = true; break }
            }
            previousRoundStart = start
        }
        XCTAssertTrue(exited)
        XCTAssertEqual(c.slowStartThreshold, c.congestionWindow)
        XCTAssertEqual(c.hyStart.phase, .done)
        let window = c.congestionWindow
        c.onPacketsAcked(bytes: 1_200, largestAckedSentTime: at(ms: now), rtt: rtt(ms(130)), now: at(ms: now + 130), appLimited: false)
        XCTAssertEqual(c.windowMax, Double(window))
        XCTAssertEqual(c.k, 0)
        // At t = 0 W_cubic is W_max and W_est a little above: Reno-friendly,
        // never concave (there is no W_max above to approach).
        XCTAssertEqual(c.region, .renoFriendly)
        XCTAssertGreaterThan(c.congestionWindow, window)
    }

    /// The cube root used for K, against exact cubes and signs.
    func testCubeRoot() {
        for x in [1.0, 8, 27, 75, 1e-6, 1e9, 3.375] {
            XCTAssertEqual(cubeRoot(x) * cubeRoot(x) * cubeRoot(x), x, accuracy: x * 1e-12)
            XCTAssertEqual(cubeRoot(-x), -cubeRoot(x))
        }
        XCTAssertEqual(cubeRoot(0), 0)
        XCTAssertEqual(cubeRoot(27), 3, accuracy: 1e-12)
    }

    /// The run-time choice forwards every call to the controller it holds.
    func testCongestionControlForwardsToTheChosenController() {
        var cubic = CongestionControl(.cubic, maxDatagramSize: 1_200)
        var reno = CongestionControl(.newReno, maxDatagramSize: 1_200)
        for i in 0..<2 {
            var c = i == 0 ? cubic : reno
            c.onPacketSent(bytes: 1_200, now: at(ms: 0))
            c.onPacketsAcked(bytes: 88_000, largestAckedSentTime: at(ms: 0), rtt: rtt(ms(100)), now: at(ms: 100), appLimited: false)
            XCTAssertEqual(c.congestionWindow, 100_000)
            c.onCongestionEvent(sentTime: at(ms: 100), now: at(ms: 200))
            XCTAssertEqual(c.recoveryStartTime, at(ms: 200))
            c.onPacketsDiscarded(bytes: 1_200)
            if i == 0 { cubic = c } else { reno = c }
        }
        XCTAssertEqual(cubic.congestionWindow, 70_000)  // β_cubic = 0.7
        XCTAssertEqual(reno.congestionWindow, 50_000)   // RFC 9002 §7.3.2: half
        cubic.onPersistentCongestion()
        reno.onPersistentCongestion()
        XCTAssertEqual(cubic.congestionWindow, 2_400)
        XCTAssertEqual(reno.congestionWindow, 2_400)
        XCTAssertEqual(CongestionAlgorithm(rawValue: "newreno"), .newReno)
        XCTAssertEqual(CongestionAlgorithm(rawValue: "cubic"), .cubic)
        XCTAssertEqual(QUICConfiguration().congestionControl, .cubic)
    }
}
