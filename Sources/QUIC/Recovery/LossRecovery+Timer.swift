// The loss detection timer (RFC 9002 §6.2, A.8, A.9): time-threshold loss
// first, else the probe timeout.

import Core

extension LossRecovery {
    /// When the loss detection timer (loss time or PTO, §6.2.1/A.8) fires next, or nil.
    /// `amplificationBlocked`: a server that may send nothing more before the
    /// client's address is validated does not arm the PTO (§6.2.2.1); the
    /// connection knows and says so.
    public func lossDetectionDeadline(handshakeConfirmed: Bool, amplificationBlocked: Bool) -> Instant? {
        // §6.2.1: "The PTO timer MUST NOT be set if a timer is set for time
        // threshold loss detection."
        if let (time, _) = earliestLossTime() { return time }
        if amplificationBlocked { return nil }
        return probeTimeoutAndSpace(handshakeConfirmed: handshakeConfirmed)?.time
    }

    /// §A.9 OnLossDetectionTimeout. Called when `now` >= the deadline (earlier
    /// calls return `.none`). `lost(space, pn)` for each packet declared lost.
    public mutating func onLossDetectionTimeout(handshakeConfirmed: Bool, now: Instant,
                                                lost: (PacketNumberSpace, UInt64) -> Void) -> LossTimerAction {
        if let (time, space) = earliestLossTime() {
            guard now >= time else { return .none }
            let losses = detectAndRemoveLostPackets(space: space, now: now) { lost(space, $0) }
            onPacketsLost(losses, now: now)
            ledgers[space.rawValue].dropSettledPrefix()
            timerSetTime = now
            return .lossDetected
        }
        guard let (time, space) = probeTimeoutAndSpace(handshakeConfirmed: handshakeConfirmed), now >= time else {
            return .none
        }
        // §6.2: a PTO "MUST NOT cause prior unacknowledged packets to be marked
        // as lost"; it only sends probes. §6.2.1: "the PTO backoff MUST be increased".
        let anyAckElicitingInFlight = ledgers.contains { $0.ackElicitingInFlight > 0 }
        ptoCount += 1
        timerSetTime = now
        // §6.2.2.1 anti-deadlock (client): one Handshake packet if it has the
        // keys, else one padded Initial. Otherwise up to two probes (§6.2.4).
        return .probe(space: space, count: anyAckElicitingInFlight ? 2 : 1)
    }

    /// 3 × PTO with max_ack_delay (for closing/draining periods, RFC 9000 §10.2):
    /// "at least three times the current Probe Timeout". Without backoff.
    public func probeTimeout(includingMaxAckDelay: Bool) -> Int64 {
        3 * rtt.probeTimeout(maxAckDelay: includingMaxAckDelay ? maxAckDelay : 0)
    }

    /// §A.8 GetLossTimeAndSpace: the earliest loss time of the three spaces.
    func earliestLossTime() -> (time: Instant, space: PacketNumberSpace)? {
        var earliest: (time: Instant, space: PacketNumberSpace)?
        // Raw values, not `allCases`: that builds an array on every query.
        for raw in 0..<3 {
            guard let time = ledgers[raw].lossTime else { continue }
            if earliest.map({ time < $0.time }) ?? true { earliest = (time, PacketNumberSpace(rawValue: raw)!) }
        }
        return earliest
    }

    /// §A.8 GetPtoTimeAndSpace, plus SetLossDetectionTimer's "nothing to
    /// detect" case as nil.
    func probeTimeoutAndSpace(handshakeConfirmed: Bool) -> (time: Instant, space: PacketNumberSpace)? {
        // §6.2.1: "the PTO period being set to twice its current value" per
        // expiry. The shift is capped (past 2^30 the idle timeout has long won)
        // and the products saturate, so a peer inflating the RTT cannot make
        // the arithmetic trap.
        let backoff = Int64(1) << Int64(min(ptoCount, 30))
        var duration = saturatingProduct(rtt.probeTimeout(maxAckDelay: 0), backoff)
        var anyInFlight = false  // an index loop: no element copies (see QUICConnection.writeOpen)
        for i in ledgers.indices where ledgers[i].ackElicitingInFlight > 0 { anyInFlight = true }
        if !anyInFlight {
            // §6.2.2.1: "the client MUST set the PTO timer if the client has not
            // received an acknowledgment for any of its Handshake packets and the
            // handshake is not confirmed ..., even if there are no packets in flight."
            if peerCompletedAddressValidation(handshakeConfirmed: handshakeConfirmed) { return nil }
            let hasHandshakeKeys = discardedSpaces[PacketNumberSpace.initial.rawValue]
                || ledgers[PacketNumberSpace.handshake.rawValue].largestSent != nil
            return (Instant(nanoseconds: saturatingSum(timerSetTime.nanoseconds, duration)),
                    hasHandshakeKeys ? .handshake : .initial)
        }
        var earliest: (time: Instant, space: PacketNumberSpace)?
        for raw in 0..<3 {
            let space = PacketNumberSpace(rawValue: raw)!
            guard ledgers[raw].ackElicitingInFlight > 0, let last = ledgers[raw].timeOfLastAckEliciting else { continue }
            if space == .application {
                // §6.2.1: "An endpoint MUST NOT set its PTO timer for the
                // Application Data packet number space until the handshake is confirmed."
                guard handshakeConfirmed else { break }
                // §6.2.1: max_ack_delay counts only for Application Data (0 for
                // Initial and Handshake, which the peer does not delay).
                duration = saturatingSum(duration, saturatingProduct(maxAckDelay, backoff))
            }
            let time = Instant(nanoseconds: saturatingSum(last.nanoseconds, duration))
            if earliest.map({ time < $0.time }) ?? true { earliest = (time, space) }
        }
        return earliest
    }
}

private func saturatingProduct(_ a: Int64, _ b: Int64) -> Int64 {
    let (value, overflow) = a.multipliedReportingOverflow(by: b)
    return overflow ? .max : value
}

private func saturatingSum(_ a: Int64, _ b: Int64) -> Int64 {
    let (value, overflow) = a.addingReportingOverflow(b)
    return overflow ? .max : value
}
