// CUBIC congestion control (RFC 9438) on the RFC 9002 seam, with HyStart++
// (RFC 9406) ending the first slow start.
//
// Theory of operation. After a congestion event the window follows a cubic
// function of the time since congestion avoidance began (§4.2, Eq. 1):
//
//     W_cubic(t) = C * (t - K)^3 + W_max        K = cbrt((W_max - cwnd_epoch) / C)
//
//   window                                 convex (§4.5): probing beyond W_max
//     ^                                  /
//     |  W_max  ........___________.....´
//     |              ´  concave (§4.4): fast, then flattening toward W_max
//     | cwnd_epoch /
//     +-------------+-----------------------> t
//              epoch start       K
//
// Alongside, W_est estimates what Reno would have (§4.3); while W_cubic is
// below it the window follows W_est (the Reno-friendly region), so CUBIC
// is never slower than Reno on short-RTT paths. Windows are counted in
// bytes here; C's unit is segments/s^3, so it is scaled by the datagram size.
//
//   Slow start (HyStart++) ──loss──► Recovery ──ack of a packet sent after it──► Congestion avoidance
//        │ CSS_ROUNDS of CSS              ▲                                                │
//        └────────────────────────────────┼──────────────► Congestion avoidance ──loss─────┘
//                                         persistent congestion: minimum window, standard slow start
//
// On loss (§4.6): W_max = cwnd (or less with fast convergence, §4.7),
// ssthresh = cwnd = β_cubic * cwnd, never below kMinimumWindow (RFC 9002
// §7.2); the recovery period is NewReno's (RFC 9002 §7.3.2). Where this
// leaves the RFC:
// - ssthresh uses cwnd rather than flight size (§4.6 notes implementations do).
// - Spurious congestion events are not undone (§4.9 is a MAY).
// - Application-limited ACKs (§5.8) neither grow the window nor advance
//   the epoch: the time the flow was limited is added to t_epoch, so the
//   curve resumes where it stood.

import Core

public struct Cubic: CongestionController {
    /// β_cubic (§4.6): the multiplicative decrease factor.
    public static let beta = 0.7
    /// C (§4.2): the cubic's scaling constant, in segments per second cubed.
    public static let c = 0.4
    /// α_cubic (§4.3): 3 * (1 - β_cubic) / (1 + β_cubic), the Reno-friendly
    /// additive increase per RTT that matches Reno's average rate.
    public static let alpha = 3 * (1 - beta) / (1 + beta)

    /// Where the last ACK moved the window (tests, diagnostics).
    public enum Region: Sendable, Equatable {
        case slowStart, conservativeSlowStart, recovery, renoFriendly, concave, convex
    }

    public let maxDatagramSize: Int
    /// kInitialWindow (RFC 9002 §7.2).
    public let initialWindow: Int
    /// kMinimumWindow (RFC 9002 §7.2): 2 * max_datagram_size.
    public let minimumWindow: Int
    /// §4.7 fast convergence (on by default, as §4.7 recommends).
    public let fastConvergence: Bool
    public private(set) var slowStartThreshold: Int = .max
    /// congestion_recovery_start_time (RFC 9002 §B.2).
    public private(set) var recoveryStartTime: Instant?
    public private(set) var hyStart: HyStart
    public private(set) var region: Region = .slowStart
    /// W_max (§4.1.2) in bytes; nil before the first congestion event.
    public private(set) var windowMax: Double?
    /// t_epoch (§4.1.2): when this congestion avoidance stage began; nil
    /// until its first ACK.
    public private(set) var epochStart: Instant?
    /// K (§4.2), in seconds.
    public private(set) var k: Double = 0
    /// W_est (§4.3), in bytes.
    public private(set) var windowEstimate: Double = 0
    /// cwnd_prior (§4.1.2): the window before the last reduction.
    public private(set) var windowPrior: Double = 0
    /// The window with its fraction: growth per ACK is often below a byte.
    private var window: Double
    private var lastAckTime: Instant?

    /// `hyStart`: end the first slow start with HyStart++ (RFC 9406); false
    /// is standard slow start (until the first loss).
    public init(maxDatagramSize: Int, hyStart: Bool = true, fastConvergence: Bool = true) {
        precondition(maxDatagramSize > 0)
        self.maxDatagramSize = maxDatagramSize
        initialWindow = min(10 * maxDatagramSize, max(14_720, 2 * maxDatagramSize))
        minimumWindow = 2 * maxDatagramSize
        self.fastConvergence = fastConvergence
        window = Double(initialWindow)
        var h = HyStart()
        if !hyStart { h.finish() }
        self.hyStart = h
    }

    public var congestionWindow: Int { Int(window) }

    public var isInSlowStart: Bool { congestionWindow < slowStartThreshold }

    /// RFC 9002 §B.5 InCongestionRecovery.
    public func isInRecovery(sentTime: Instant) -> Bool {
        guard let start = recoveryStartTime else { return false }
        return sentTime <= start
    }

    /// W_cubic(t) (§4.2, Eq. 1), in bytes; `t` in seconds since the epoch.
    public func cubicWindow(t: Double) -> Double {
        let d = t - k
        return Self.c * Double(maxDatagramSize) * d * d * d + (windowMax ?? window)
    }

    public mutating func onPacketSent(bytes: Int, now: Instant) {}

    public mutating func onPacketsAcked(bytes: Int, largestAckedSentTime: Instant, rtt: RTTEstimator, now: Instant,
                                        appLimited: Bool) {
        let previousAck = lastAckTime
        lastAckTime = now
        if appLimited {
            // §5.8: "CUBIC does not increase cwnd if a flow is application
            // limited"; the limited time does not count toward t either.
            if let start = epochStart, let previous = previousAck {
                epochStart = Instant(nanoseconds: start.nanoseconds + (now.nanoseconds - previous.nanoseconds))
            }
            return
        }
        if isInRecovery(sentTime: largestAckedSentTime) {
            region = .recovery
            return
        }
        if isInSlowStart {
            // §4.10: slow start as in RFC 5681, ended early by HyStart++.
            switch hyStart.onAck(sentTime: largestAckedSentTime, latestRTT: rtt.latestRTT, now: now) {
            case .grow(let divisor):
                window += Double(bytes / divisor)
                region = divisor == 1 ? .slowStart : .conservativeSlowStart
                return
            case .enterCongestionAvoidance:
                slowStartThreshold = congestionWindow
                window = Double(slowStartThreshold)
                windowPrior = window
                region = .convex
                return
            }
        }
        congestionAvoidance(bytes: bytes, smoothedRTT: rtt.smoothedRTT, now: now)
    }

    private mutating func congestionAvoidance(bytes: Int, smoothedRTT: Int64, now: Instant) {
        let mss = Double(maxDatagramSize)
        if epochStart == nil {
            // §4.2: the epoch begins with congestion avoidance; cwnd_epoch is
            // the window then. Left without a loss (HyStart++), or grown past
            // W_max, the cubic starts at its plateau: W_max = cwnd, K = 0.
            epochStart = now
            if windowMax.map({ $0 < window }) ?? true { windowMax = window }
            k = cubeRoot((windowMax! - window) / (Self.c * mss))
            windowEstimate = window
        }
        let t = Double(now.nanoseconds - epochStart!.nanoseconds) / 1e9
        let acked = Double(bytes)
        // §4.3: "W_est = W_est + α_cubic * segments_acked / cwnd", with
        // α_cubic = 1 once W_est reaches cwnd_prior.
        let alpha = windowEstimate >= windowPrior ? 1 : Self.alpha
        windowEstimate += alpha * mss * acked / window
        let cubicNow = cubicWindow(t: t)
        if cubicNow < windowEstimate {
            // §4.3: "cwnd SHOULD be set to W_est at each reception of a new ACK".
            window = max(window, windowEstimate)
            region = .renoFriendly
            return
        }
        // §4.2: target = W_cubic(t + RTT), kept within [cwnd, 1.5 * cwnd];
        // §4.4/§4.5: "cwnd MUST be incremented by (target - cwnd) / cwnd for
        // each received new ACK" (per segment; per byte here).
        let target = min(max(cubicWindow(t: t + Double(smoothedRTT) / 1e9), window), 1.5 * window)
        window += (target - window) * acked / window
        region = cubicNow < windowMax! ? .concave : .convex
    }

    public mutating func onCongestionEvent(sentTime: Instant, now: Instant) {
        // RFC 9002 §7.3.2: one reduction per recovery period.
        if isInRecovery(sentTime: sentTime) { return }
        recoveryStartTime = now
        hyStart.finish()
        // §4.7: "if cwnd < W_max and fast convergence enabled, further reduce
        // W_max: W_max = cwnd * (1 + β_cubic) / 2", else W_max = cwnd.
        if fastConvergence, let max = windowMax, window < max {
            windowMax = window * (1 + Self.beta) / 2
        } else {
            windowMax = window
        }
        windowPrior = window
        // §4.6: ssthresh = cwnd * β_cubic, cwnd = ssthresh; RFC 9002 §7.2:
        // never below kMinimumWindow.
        slowStartThreshold = max(Int(window * Self.beta), minimumWindow)
        window = Double(slowStartThreshold)
        epochStart = nil
        region = .recovery
    }

    public mutating func onPersistentCongestion() {
        // RFC 9002 §7.6.2: the minimum window; §4.8: "CUBIC follows Reno to
        // reduce cwnd" after a timeout, ssthresh having been set by §4.6.
        // The next slow start is the standard one (RFC 9406 §4.2).
        window = Double(minimumWindow)
        recoveryStartTime = nil
        epochStart = nil
        hyStart.finish()
        region = .slowStart
    }

    public mutating func onPacketsDiscarded(bytes: Int) {}
}

/// The real cube root (negative for negative `x`: K < 0 when the window
/// already exceeds W_max). Newton's method from a power-of-two estimate:
/// the standard library has no cbrt and Foundation is not used here.
func cubeRoot(_ x: Double) -> Double {
    guard x != 0, x.isFinite else { return x }
    let magnitude = abs(x)
    var y = Double(sign: .plus, exponent: magnitude.exponent / 3, significand: 1)
    for _ in 0..<100 {
        let next = y - (y * y * y - magnitude) / (3 * y * y)
        if abs(next - y) <= 1e-12 * y { y = next; break }
        y = next
    }
    return x < 0 ? -y : y
}
