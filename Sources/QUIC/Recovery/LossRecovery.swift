// Loss detection (RFC 9002 §6, Appendix A), sans-I/O.
//
// Theory of operation. The connection reports every packet it sends
// (`onPacketSent`) and every ACK frame it receives (`onAckReceived`); this
// struct answers which packets were acknowledged and which are lost, keeps
// the RTT estimate (§5) and bytes in flight, and drives a congestion
// controller (§7) through the `CongestionController` seam. It never reads a
// clock: time is a parameter. The single loss-detection timer of §6.2/A.8 is
// not stored: `lossDetectionDeadline` recomputes it from the state on each
// query, so "restart the PTO timer" (§6.2.1) holds by construction.
//
//   sent ──► outstanding ──ACK──► acknowledged (acked callback)
//                 │
//                 ├─ packet threshold (3) or time threshold (9/8 RTT) ──► lost (lost callback)
//                 └─ key discard ──► forgotten (no callback; the connection drops the space too)
//
// Per space (§6): the sent-packet ledger, largest acknowledged, loss time,
// time of last ack-eliciting packet. Per path: RTT, the controller, the PTO
// backoff (§6.2.1: "the exponential increase in PTO occurs across all spaces").
//
// Where this follows a MAY or leaves the pseudocode:
// - The ACK Delay of Initial packets is ignored (§5.3 MAY).
// - Persistent congestion (§7.6.2) looks at the acknowledged space only
//   (allowed: "MAY use state for just the packet number space that was acknowledged").
// - A packet declared lost and acknowledged later is not reported again: each
//   packet ends exactly once. It counts as acknowledged for §7.6.2.
// - Application-limited (§7.8): the window counts as used when, since the
//   previous ACK, bytes in flight came within one packet of it.
// - A PTO asks for two probes (§6.2.4 MAY), one for the client's anti-deadlock probe.

import Core

public struct LossRecovery<Controller: CongestionController>: Sendable {
    /// kPacketThreshold (§6.1.1).
    public static var packetThreshold: UInt64 { 3 }
    /// kPersistentCongestionThreshold (§7.6.1).
    public static var persistentCongestionThreshold: Int64 { 3 }

    public internal(set) var rtt: RTTEstimator
    public internal(set) var controller: Controller
    /// Spreads in-flight packets over the RTT (§7.7).
    public internal(set) var pacer = Pacer()
    /// The peer's max_ack_delay (ns).
    public let maxAckDelay: Int64
    public let role: EndpointRole
    /// pto_count (§A.3): PTOs since the last acknowledgment that reset it.
    public internal(set) var ptoCount = 0
    /// Times persistent congestion was established (§7.6), for statistics.
    public internal(set) var persistentCongestionCount = 0

    /// Indexed by PacketNumberSpace.rawValue.
    var ledgers = DroppablePerSpace<SentPacketLedger>()
    /// first_rtt_sample (§A.3): when the first RTT sample was taken.
    var firstRTTSampleTime: Instant?
    /// A client's "has received Handshake ACK" (§A.8 PeerCompletedAddressValidation).
    var handshakeAckReceived = false
    var discardedSpaces = PerSpace(repeating: false)
    /// The most bytes in flight since the last ACK processed (§7.8).
    var peakBytesInFlight = 0
    /// The largest in-flight packet sent: the gap that still counts as a full window.
    var largestPacketSize = 1_200
    /// When the timer was last (re)set: the client's anti-deadlock PTO runs from it (§A.8).
    var timerSetTime: Instant
    /// When the peer's address last changed (RFC 9000 §9.4): packets sent
    /// before it went on the old path and feed neither the RTT estimate nor
    /// the congestion controller (LossRecovery+PathChange.swift).
    var pathStartTime: Instant?

    /// A server's loss recovery (peregrine is a server).
    public init(controller: Controller, maxAckDelay: Int64 /* ns, peer's max_ack_delay */, now: Instant) {
        self.init(controller: controller, maxAckDelay: maxAckDelay, now: now, role: .server)
    }

    /// `role`: a client also arms the anti-deadlock PTO (§6.2.2.1) and keeps
    /// its backoff until the server validated its address (§6.2.1).
    public init(controller: Controller, maxAckDelay: Int64, now: Instant, role: EndpointRole) {
        rtt = RTTEstimator()
        self.controller = controller
        self.maxAckDelay = maxAckDelay
        self.role = role
        timerSetTime = now
    }

    public var bytesInFlight: Int {
        ledgers[0].bytesInFlight + ledgers[1].bytesInFlight + ledgers[2].bytesInFlight
    }

    /// Bytes the congestion window allows now (0 when full). Probes ignore it.
    public var sendAllowance: Int { max(0, controller.congestionWindow - bytesInFlight) }

    /// nil when the pacer lets an in-flight packet leave at `now` (§7.7);
    /// otherwise when it will. ACK-only packets and PTO probes do not ask.
    public func pacingReleaseTime(now: Instant) -> Instant? {
        rtt.hasSample ? pacer.releaseTime(now: now) : nil
    }

    /// §7.8: the window is underutilized when bytes in flight stayed more than
    /// one packet below it since the previous ACK.
    public var isApplicationLimited: Bool {
        peakBytesInFlight + largestPacketSize < controller.congestionWindow
    }

    public func largestSent(space: PacketNumberSpace) -> UInt64? { ledgers[space.rawValue].largestSent }

    public func largestAcked(space: PacketNumberSpace) -> UInt64? { ledgers[space.rawValue].largestAcked }

    /// For the connection's RFC 9000 §13.1 check: an ACK of a packet never
    /// sent is a PROTOCOL_VIOLATION.
    public func wasSent(space: PacketNumberSpace, packetNumber: UInt64) -> Bool {
        ledgers[space.rawValue].wasSent(packetNumber)
    }

    /// The packets of a space still remembered (tests, diagnostics).
    public func ledger(space: PacketNumberSpace) -> SentPacketLedger { ledgers[space.rawValue] }

    /// §A.5 OnPacketSent. Every packet sent, in packet-number order per space.
    /// `inFlight`: counts toward bytesInFlight (ack-eliciting or padding-only;
    /// ACK-only packets are not in flight).
    public mutating func onPacketSent(space: PacketNumberSpace, packetNumber: UInt64, bytes: Int,
                                      ackEliciting: Bool, inFlight: Bool, now: Instant) {
        ledgers[space.rawValue].append(SentPacket(packetNumber: packetNumber, timeSent: now, bytes: bytes,
                                                  ackEliciting: ackEliciting, inFlight: inFlight, state: .outstanding))
        guard inFlight else { return }
        controller.onPacketSent(bytes: bytes, now: now)
        // §7.7: paced from the first RTT sample on (before it the rate is unknown).
        if rtt.hasSample {
            pacer.onPacketSent(bytes: bytes, congestionWindow: controller.congestionWindow, smoothedRTT: rtt.smoothedRTT,
                               maxDatagramSize: largestPacketSize, now: now)
        }
        peakBytesInFlight = max(peakBytesInFlight, bytesInFlight)
        largestPacketSize = max(largestPacketSize, bytes)
        timerSetTime = now
    }

    /// §A.7 OnAckReceived. `ranges` largest first (as QUIC.AckRanges yields
    /// them); `ackDelay` decoded to nanoseconds. Calls `acked` once per newly
    /// acknowledged packet and `lost` once per packet newly declared lost, both
    /// in `space`. Numbers never sent are skipped (the connection checks them
    /// first with `wasSent`). `congestionExperienced`, asked after every
    /// `acked` call (§A.7 "Process ECN information if present", before loss
    /// detection and the controller see the ACK): true when the frame's
    /// ECN-CE count grew validly, which is a congestion event dated by the
    /// largest acknowledged packet's send time (§7.1, B.7), so CE marks on
    /// packets sent before the current recovery period reduce nothing more.
    public mutating func onAckReceived(space: PacketNumberSpace, ranges: some Sequence<ClosedRange<UInt64>>,
                                       ackDelay: Int64, handshakeConfirmed: Bool, now: Instant,
                                       acked: (UInt64) -> Void, lost: (UInt64) -> Void,
                                       congestionExperienced: () -> Bool = { false }) {
        let s = space.rawValue
        var largestInFrame: UInt64?
        var largestNewlyAcked: SentPacket?
        var includesAckEliciting = false
        var ackedInFlightBytes = 0
        var largestInFlightAckedSentTime: Instant?
        for range in ranges {
            if largestInFrame == nil { largestInFrame = range.upperBound }
            var position = ledgers[s].firstPosition(atLeast: range.lowerBound)
            while position < ledgers[s].count, ledgers[s][position].packetNumber <= range.upperBound {
                switch ledgers[s][position].state {
                case .outstanding:
                    let packet = ledgers[s].settle(at: position, as: .acknowledged)
                    acked(packet.packetNumber)
                    if largestNewlyAcked.map({ $0.packetNumber < packet.packetNumber }) ?? true {
                        largestNewlyAcked = packet
                    }
                    includesAckEliciting = includesAckEliciting || packet.ackEliciting
                    if packet.inFlight && isOnCurrentPath(packet) {
                        ackedInFlightBytes += packet.bytes
                        largestInFlightAckedSentTime = max(largestInFlightAckedSentTime ?? packet.timeSent, packet.timeSent)
                    }
                case .lost:
                    ledgers[s].markLostAsAcknowledged(at: position)
                case .acknowledged:
                    break
                }
                position += 1
            }
        }
        guard let largest = largestInFrame else { return }
        ledgers[s].noteAcknowledged(largest: largest)
        if space == .handshake { handshakeAckReceived = true }
        // §A.7: "Nothing to do if there are no newly acked packets."
        guard let newest = largestNewlyAcked else { return }

        // §5.1: a sample only when the largest acknowledged is newly acknowledged
        // and at least one newly acknowledged packet is ack-eliciting.
        if newest.packetNumber == largest, includesAckEliciting, isOnCurrentPath(newest) {
            if firstRTTSampleTime == nil { firstRTTSampleTime = now }
            // §5.3: "MAY ignore the acknowledgment delay for Initial packets".
            rtt.update(latest: now.nanoseconds - newest.timeSent.nanoseconds,
                       ackDelay: space == .initial ? 0 : ackDelay,
                       maxAckDelay: maxAckDelay, handshakeConfirmed: handshakeConfirmed)
        }

        // §B.7: sent_packets[ack.largest_acked].time_sent — here when the
        // largest acknowledged is newly acknowledged (a CE increase in an
        // ACK that does not raise it is not validated, RFC 9000 §13.4.2.1).
        if congestionExperienced(), newest.packetNumber == largest {
            controller.onCongestionEvent(sentTime: newest.timeSent, now: now)
        }
        let appLimited = isApplicationLimited
        let losses = detectAndRemoveLostPackets(space: space, now: now, lost: lost)
        onPacketsLost(losses, now: now)
        if ackedInFlightBytes > 0, let sentTime = largestInFlightAckedSentTime {
            controller.onPacketsAcked(bytes: ackedInFlightBytes, largestAckedSentTime: sentTime, rtt: rtt, now: now,
                                      appLimited: appLimited)
        }
        // §6.2.1: the backoff resets on an acknowledgment, except at a client
        // not yet sure the server validated its address.
        if peerCompletedAddressValidation(handshakeConfirmed: handshakeConfirmed) { ptoCount = 0 }
        ledgers[s].dropSettledPrefix()
        peakBytesInFlight = bytesInFlight
        timerSetTime = now
    }

    /// Key discard (RFC 9001 §4.9; RFC 9002 §6.4, A.11): forget the space's
    /// packets, remove their bytes from flight, reset the PTO backoff.
    public mutating func discard(space: PacketNumberSpace) {
        if space == .application || ledgers.holdsEarlySpaces {
            let removed = ledgers[space.rawValue].removeAll()
            if removed > 0 { controller.onPacketsDiscarded(bytes: removed) }
        }
        discardedSpaces[space.rawValue] = true
        ptoCount = 0
        // Both early spaces gone: their ledgers go too (DroppablePerSpace).
        if discardedSpaces[PacketNumberSpace.initial.rawValue] && discardedSpaces[PacketNumberSpace.handshake.rawValue] {
            ledgers.dropEarlySpaces()
        }
    }

    /// §A.8 PeerCompletedAddressValidation.
    func peerCompletedAddressValidation(handshakeConfirmed: Bool) -> Bool {
        role == .server || handshakeAckReceived || handshakeConfirmed
    }
}
