// Datagram packetization layer path MTU discovery (DPLPMTUD: RFC 8899,
// RFC 9000 §14.3), sans-I/O: the datagram size a connection builds, and
// the probes that raise it.
//
// Theory of operation. Every connection starts at BASE_PLPMTU, 1200 bytes
// (RFC 9000 §14: every QUIC path carries them). Once the handshake is
// confirmed it searches upwards to `maximum` (the server's
// --quic-max-datagram-size, capped by the peer's max_udp_payload_size):
// a probe is one 1-RTT packet of exactly the probed size holding a PING and
// PADDING (§14.4), sent while the connection is sending anyway, one probe
// outstanding at a time. An acknowledged probe confirms its size, which
// becomes the size of every datagram built from then on (and so of each
// GSO segment); a probe lost `maxProbes` times (RFC 8899 §5.1.2
// MAX_PROBES = 3) marks its size too large. The search is a binary search
// between the largest confirmed size and the smallest failed one, trying
// the maximum first (on most paths it fits, and one probe ends the search),
// and stops when the two are within `searchGranularity`.
//
//   search ──(confirmed = maximum, or the bounds close)──► complete
//     ▲                                                      │
//     └──(PMTU_RAISE_TIMER: 600 s later, if below maximum)───┘
//   any state ──(black hole)──► back to 1200, search again
//
// Probes are not congestion signals (§14.4 "loss of a QUIC packet that is
// carried in a PMTU probe is therefore not a reliable indication of
// congestion"; RFC 8899 §3): the connection records them with loss
// recovery as neither in flight nor ack-eliciting, so a lost probe reduces
// no window, arms no PTO and counts toward no persistent congestion (it is
// still acknowledged or declared lost like any packet, which is what the
// search reads). The window and the pacer are not asked either: one probe
// at a time is a bounded extra.
//
// Black hole detection (RFC 8899 §4.3, RFC 9000 §14.4): a path whose MTU
// shrinks below the confirmed size loses every full-size packet, so no
// ack-eliciting packet is acknowledged and probe timeouts pile up. When
// `blackHoleProbeTimeouts` PTOs fire in a row (RFC 9002 §6.2 pto_count)
// while the size is above BASE, the size goes back to 1200 (the PTO probes
// that follow fit) and the search starts over. A blackout of the whole path
// looks the same and costs one search.
//
// The raise timer is lazy: the search resumes on the first send after it
// expired, so it needs no deadline of its own.

import Core

public struct PathMTUDiscovery: Sendable {
    /// BASE_PLPMTU (RFC 8899 §5.1.2; RFC 9000 §14: the smallest allowed maximum datagram size).
    public static let base = 1200
    /// MAX_PROBES (RFC 8899 §5.1.2): losses of one size before it counts as too large.
    public static let maxProbes = 3
    /// The search ends when the confirmed and failed sizes are this close.
    public static let searchGranularity = 16
    /// PMTU_RAISE_TIMER (RFC 8899 §5.1.1): 600 s between searches above a
    /// size that was not the maximum, in ns.
    public static let raiseInterval: Int64 = 600_000_000_000
    /// Probe timeouts in a row that mean a black hole above BASE.
    public static let blackHoleProbeTimeouts = 3

    public enum Phase: Sendable, Equatable {
        /// Not started (the handshake is not confirmed) or nothing to search.
        case idle
        case searching
        /// Done until `raiseAt` (nil: the maximum is confirmed, never again).
        case complete(raiseAt: Instant?)
    }

    /// The largest size that may be probed (≥ base).
    public private(set) var maximum: Int
    /// The confirmed size: every datagram is built at most this large.
    public private(set) var current = base
    public private(set) var phase = Phase.idle
    /// The smallest size that failed (a bound of the binary search).
    var tooLarge: Int
    var probeSize = 0
    var failures = 0
    /// The outstanding probe's packet number, in the application space.
    public private(set) var outstanding: UInt64?
    /// Sizes raised by probes and black holes seen, for statistics.
    public private(set) var raises = 0
    public private(set) var blackHoles = 0

    /// `maximum`: the most the server may send on any path (clamped to ≥ base).
    public init(maximum: Int) {
        self.maximum = max(Self.base, maximum)
        tooLarge = self.maximum + 1
    }

    /// The handshake is confirmed and the peer's max_udp_payload_size known:
    /// search from now on, up to the smaller maximum.
    public mutating func start(peerMaximum: Int) {
        guard phase == .idle else { return }
        maximum = max(Self.base, min(maximum, peerMaximum))
        tooLarge = maximum + 1
        phase = maximum > current ? .searching : .complete(raiseAt: nil)
    }

    /// The size of the probe to send now (the caller sends it and reports
    /// `probeSent`), or nil: none due (one is outstanding, the search is
    /// complete and the raise timer has not expired, or not started).
    public mutating func probeDue(now: Instant) -> Int? {
        guard outstanding == nil else { return nil }
        switch phase {
        case .idle:
            return nil
        case .complete(let raiseAt):
            guard let raiseAt, now >= raiseAt else { return nil }
            // RFC 8899 §5.1.1: search again above the current size (the path may have grown).
            tooLarge = maximum + 1
            probeSize = 0
            phase = .searching
        case .searching:
            break
        }
        if probeSize <= current || probeSize >= tooLarge {
            // The maximum first, then halfway between the bounds.
            probeSize = tooLarge == maximum + 1 ? maximum : (current + tooLarge) / 2
        }
        return probeSize
    }

    public mutating func probeSent(packetNumber: UInt64) {
        outstanding = packetNumber
    }

    /// Application-space packet `packetNumber` was acknowledged.
    public mutating func acknowledged(_ packetNumber: UInt64, now: Instant) {
        guard packetNumber == outstanding else { return }
        outstanding = nil
        failures = 0
        if probeSize > current {
            current = probeSize
            raises += 1
        }
        checkComplete(now: now)
    }

    /// Application-space packet `packetNumber` was declared lost.
    public mutating func lost(_ packetNumber: UInt64, now: Instant) {
        guard packetNumber == outstanding else { return }
        outstanding = nil
        failures += 1
        guard failures >= Self.maxProbes else { return }  // the same size again
        failures = 0
        tooLarge = probeSize
        checkComplete(now: now)
    }

    private mutating func checkComplete(now: Instant) {
        guard phase == .searching else { return }
        if current >= maximum {
            phase = .complete(raiseAt: nil)
        } else if tooLarge - current <= Self.searchGranularity {
            phase = .complete(raiseAt: Instant(nanoseconds: now.nanoseconds + Self.raiseInterval))
        }
    }

    /// Called as datagrams are built: `probeTimeouts` PTOs fired in a row
    /// without an acknowledgment. True when this was a black hole and the
    /// size went back to BASE (the search restarts at once).
    public mutating func checkBlackHole(probeTimeouts: Int) -> Bool {
        guard probeTimeouts >= Self.blackHoleProbeTimeouts, current > Self.base else { return false }
        current = Self.base
        blackHoles += 1
        tooLarge = maximum + 1
        probeSize = 0
        failures = 0
        outstanding = nil  // a probe in flight is forgotten: its answer no longer says anything
        if phase != .idle { phase = .searching }
        return true
    }
}
