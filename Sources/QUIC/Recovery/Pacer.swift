// Pacing (RFC 9002 §7.7): spreading each congestion window over the RTT
// instead of sending it in one burst that overflows a bottleneck queue.
//
// Theory of operation. The pacing rate is N * congestion_window /
// smoothed_rtt with N = 1.25 (§7.7: "Using a value for N that is small,
// but at least 1 (for example, 1.25) ensures that variations in RTT do not
// result in underutilization of the congestion window"), so a packet of b
// bytes occupies b * smoothed_rtt / (1.25 * cwnd) of time. The pacer keeps
// one instant, `nextSendTime`, when the budget is exhausted; each paced
// packet moves it forward by its interval. Credit accumulated while idle is
// capped at `burstDatagrams` packets (§7.7: "limit bursts to the initial
// congestion window"; we allow fewer so that a window really is spread), and
// a packet may leave up to kGranularity early because the worker's timer
// fires in whole milliseconds. Only in-flight packets are paced: ACK-only
// packets are not (they neither consume nor wait for budget), nor are PTO
// probes (§6.2.4), nor anything before the first RTT sample (the rate is
// unknown; the initial window goes as one flight).

import Core

public struct Pacer: Sendable {
    /// Packets that may leave back to back after an idle period.
    public static let burstDatagrams = 4
    /// N = 5/4 (§7.7).
    public static let gainNumerator: Int64 = 5
    public static let gainDenominator: Int64 = 4
    /// How early a packet may leave (the worker's timer granularity).
    public static let granularity: Int64 = kGranularity

    /// When the next paced packet is due; nil: no packet paced yet.
    public private(set) var nextSendTime: Instant?

    public init() {}

    /// The time one packet of `bytes` occupies at the pacing rate, in ns
    /// (saturating: a huge RTT only means a slow rate).
    public static func interval(bytes: Int, congestionWindow: Int, smoothedRTT: Int64) -> Int64 {
        let (scaled, overflow) = Int64(bytes).multipliedReportingOverflow(by: smoothedRTT)
        let numerator = overflow ? Int64.max : scaled
        let denominator = Int64(max(congestionWindow, 1)) * gainNumerator
        // Divided first, so numerator * 4 cannot overflow.
        return numerator / denominator * gainDenominator + numerator % denominator * gainDenominator / denominator
    }

    /// nil when a paced packet may be sent at `now`; else when it may.
    public func releaseTime(now: Instant) -> Instant? {
        guard let next = nextSendTime, next.nanoseconds - Self.granularity > now.nanoseconds else { return nil }
        return Instant(nanoseconds: next.nanoseconds - Self.granularity)
    }

    /// A paced packet of `bytes` left at `now`.
    public mutating func onPacketSent(bytes: Int, congestionWindow: Int, smoothedRTT: Int64, maxDatagramSize: Int,
                                      now: Instant) {
        let burst = Self.interval(bytes: (Self.burstDatagrams - 1) * maxDatagramSize, congestionWindow: congestionWindow,
                                  smoothedRTT: smoothedRTT)
        let earliest = now.nanoseconds - burst
        let base = max(nextSendTime?.nanoseconds ?? earliest, earliest)
        nextSendTime = Instant(nanoseconds: base + Self.interval(bytes: bytes, congestionWindow: congestionWindow,
                                                                  smoothedRTT: smoothedRTT))
    }
}
