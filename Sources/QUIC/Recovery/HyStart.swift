// HyStart++ (RFC 9406): leaving slow start on a rising RTT, before the
// loss that standard slow start needs to find the path's capacity.
//
// Theory of operation. Slow start is cut into rounds of one RTT (§4.2: a
// round ends when a packet sent after it began is acknowledged; we compare
// send times, which the loss recovery layer already has, instead of
// SND.NXT). Each round keeps the smallest RTT sample of its ACKs. Once a
// round has N_RTT_SAMPLE samples and its minimum exceeds the previous
// round's by RttThresh (an eighth of it, clamped to 4..16 ms), the queue
// at the bottleneck is assumed to be building:
//
//     Slow Start ──RTT rose──► Conservative Slow Start ──CSS_ROUNDS rounds──► done
//         ▲                         │                                 (ssthresh = cwnd:
//         └──RTT fell below the ────┘                                  congestion avoidance)
//            CSS baseline (spurious exit)
//
// Conservative Slow Start (CSS) grows the window by a quarter of what
// slow start would (CSS_GROWTH_DIVISOR). A loss in either phase ends
// HyStart++ through the controller's normal reaction (§4.2). The growth
// limit L is infinite because our sender paces (§4.3: "L = infinity if
// paced"). Every ACK that grows the window counts as one RTT sample (its
// latest_rtt), which is what the loss recovery layer reports per ACK frame.
// HyStart++ runs only for the first slow start (§4.2: "SHOULD use
// HyStart++ only for the initial slow start ... and fall back to ... standard
// slow start for the remaining ... slow starts").

import Core

public struct HyStart: Sendable {
    /// MIN_RTT_THRESH (§4.3): 4 ms.
    public static let minRTTThreshold: Int64 = 4_000_000
    /// MAX_RTT_THRESH (§4.3): 16 ms.
    public static let maxRTTThreshold: Int64 = 16_000_000
    /// MIN_RTT_DIVISOR (§4.3).
    public static let minRTTDivisor: Int64 = 8
    /// N_RTT_SAMPLE (§4.3): samples a round needs before it can end slow start.
    public static let rttSampleThreshold = 8
    /// CSS_GROWTH_DIVISOR (§4.3).
    public static let cssGrowthDivisor = 4
    /// CSS_ROUNDS (§4.3): rounds of CSS before congestion avoidance.
    public static let cssRounds = 5

    public enum Phase: Sendable, Equatable {
        case slowStart
        /// `baselineMinRTT`: cssBaselineMinRtt (§4.2), the round minimum
        /// that triggered CSS; `rounds`: rounds completed in CSS.
        case conservativeSlowStart(baselineMinRTT: Int64, rounds: Int)
        /// Left for congestion avoidance (or a loss ended it).
        case done
    }

    /// What the controller does with one ACK.
    public enum Verdict: Sendable, Equatable {
        /// Grow by the bytes acknowledged divided by this (1 in slow start, 4 in CSS).
        case grow(divisor: Int)
        /// §4.2: "enter congestion avoidance by setting the ssthresh to the current cwnd".
        case enterCongestionAvoidance
    }

    public private(set) var phase: Phase = .slowStart
    /// When the current round began; packets sent at or after it close it when acknowledged.
    public private(set) var roundStart: Instant?
    /// lastRoundMinRTT, currentRoundMinRTT (§4.2); .max is "infinity".
    public private(set) var lastRoundMinRTT: Int64 = .max
    public private(set) var currentRoundMinRTT: Int64 = .max
    /// rttSampleCount (§4.2).
    public private(set) var rttSampleCount = 0

    public init() {}

    /// One ACK in slow start. `sentTime`: the send time of the largest
    /// packet it newly acknowledged; `latestRTT`: the RTT sample it gave.
    public mutating func onAck(sentTime: Instant, latestRTT: Int64, now: Instant) -> Verdict {
        if case .done = phase { return .grow(divisor: 1) }
        // §4.2: "At the start of each round during standard slow start and CSS".
        if roundStart.map({ sentTime >= $0 }) ?? true {
            roundStart = now
            lastRoundMinRTT = currentRoundMinRTT
            currentRoundMinRTT = .max
            rttSampleCount = 0
            if case .conservativeSlowStart(let baseline, let rounds) = phase {
                // §4.2: "If CSS_ROUNDS rounds are complete, enter congestion avoidance".
                if rounds + 1 >= Self.cssRounds {
                    phase = .done
                    return .enterCongestionAvoidance
                }
                phase = .conservativeSlowStart(baselineMinRTT: baseline, rounds: rounds + 1)
            }
        }
        if latestRTT > 0 {
            currentRoundMinRTT = min(currentRoundMinRTT, latestRTT)
            rttSampleCount += 1
        }
        switch phase {
        case .slowStart:
            // §4.2: "if (currentRoundMinRTT >= (lastRoundMinRTT + RttThresh))
            // cssBaselineMinRtt = currentRoundMinRTT; exit slow start and enter CSS".
            if rttSampleCount >= Self.rttSampleThreshold, currentRoundMinRTT != .max, lastRoundMinRTT != .max {
                let threshold = min(max(lastRoundMinRTT / Self.minRTTDivisor, Self.minRTTThreshold), Self.maxRTTThreshold)
                if currentRoundMinRTT >= lastRoundMinRTT + threshold {
                    phase = .conservativeSlowStart(baselineMinRTT: currentRoundMinRTT, rounds: 0)
                    return .grow(divisor: Self.cssGrowthDivisor)
                }
            }
            return .grow(divisor: 1)
        case .conservativeSlowStart(let baseline, _):
            // §4.2: "if (currentRoundMinRTT < cssBaselineMinRtt) ... resume
            // slow start": the RTT rise was not a queue after all.
            if rttSampleCount >= Self.rttSampleThreshold, currentRoundMinRTT < baseline {
                phase = .slowStart
                return .grow(divisor: 1)
            }
            return .grow(divisor: Self.cssGrowthDivisor)
        case .done:
            return .grow(divisor: 1)
        }
    }

    /// A loss, or a slow start after persistent congestion: HyStart++ is over.
    public mutating func finish() { phase = .done }
}
