// The controller a connection runs, chosen at run time
// (`--quic-congestion cubic|newreno`, Core's CongestionAlgorithm).
//
// LossRecovery is generic over its controller so the calls stay static;
// an existential (`any CongestionController`) would box the state and
// dispatch through a witness table on every packet. This enum holds one of
// the two concrete controllers inline and switches per call instead.

import Core

public enum CongestionControl: CongestionController {
    case newReno(NewReno)
    case cubic(Cubic)

    public init(_ algorithm: CongestionAlgorithm, maxDatagramSize: Int) {
        switch algorithm {
        case .cubic: self = .cubic(Cubic(maxDatagramSize: maxDatagramSize))
        case .newReno: self = .newReno(NewReno(maxDatagramSize: maxDatagramSize))
        }
    }

    public var algorithm: CongestionAlgorithm {
        switch self {
        case .newReno: .newReno
        case .cubic: .cubic
        }
    }

    public var congestionWindow: Int {
        switch self {
        case .newReno(let c): c.congestionWindow
        case .cubic(let c): c.congestionWindow
        }
    }

    public var slowStartThreshold: Int {
        switch self {
        case .newReno(let c): c.slowStartThreshold
        case .cubic(let c): c.slowStartThreshold
        }
    }

    public var recoveryStartTime: Instant? {
        switch self {
        case .newReno(let c): c.recoveryStartTime
        case .cubic(let c): c.recoveryStartTime
        }
    }

    public var isInSlowStart: Bool { congestionWindow < slowStartThreshold }

    public var initialWindow: Int {
        switch self {
        case .newReno(let c): c.initialWindow
        case .cubic(let c): c.initialWindow
        }
    }

    public var minimumWindow: Int {
        switch self {
        case .newReno(let c): c.minimumWindow
        case .cubic(let c): c.minimumWindow
        }
    }

    public var maxDatagramSize: Int {
        switch self {
        case .newReno(let c): c.maxDatagramSize
        case .cubic(let c): c.maxDatagramSize
        }
    }

    // The payloads are plain structs (no heap storage), so taking one out
    // and storing it back copies a few words and never triggers copy-on-write.

    public mutating func onPacketSent(bytes: Int, now: Instant) {
        switch self {
        case .newReno(var c): c.onPacketSent(bytes: bytes, now: now); self = .newReno(c)
        case .cubic(var c): c.onPacketSent(bytes: bytes, now: now); self = .cubic(c)
        }
    }

    public mutating func onPacketsAcked(bytes: Int, largestAckedSentTime: Instant, rtt: RTTEstimator, now: Instant,
                                        appLimited: Bool) {
        switch self {
        case .newReno(var c):
            c.onPacketsAcked(bytes: bytes, largestAckedSentTime: largestAckedSentTime, rtt: rtt, now: now, appLimited: appLimited)
            self = .newReno(c)
        case .cubic(var c):
            c.onPacketsAcked(bytes: bytes, largestAckedSentTime: largestAckedSentTime, rtt: rtt, now: now, appLimited: appLimited)
            self = .cubic(c)
        }
    }

    public mutating func onCongestionEvent(sentTime: Instant, now: Instant) {
        switch self {
        case .newReno(var c): c.onCongestionEvent(sentTime: sentTime, now: now); self = .newReno(c)
        case .cubic(var c): c.onCongestionEvent(sentTime: sentTime, now: now); self = .cubic(c)
        }
    }

    public mutating func onPersistentCongestion() {
        switch self {
        case .newReno(var c): c.onPersistentCongestion(); self = .newReno(c)
        case .cubic(var c): c.onPersistentCongestion(); self = .cubic(c)
        }
    }

    public mutating func onPacketsDiscarded(bytes: Int) {
        switch self {
        case .newReno(var c): c.onPacketsDiscarded(bytes: bytes); self = .newReno(c)
        case .cubic(var c): c.onPacketsDiscarded(bytes: bytes); self = .cubic(c)
        }
    }
}
