// A new path to the peer (RFC 9000 §9.4; RFC 9002 §9.4 refers to it).
//
// "On confirming a peer's ownership of its new address, an endpoint MUST
// immediately reset the congestion controller and round-trip time estimator
// for the new path to initial values ... unless the only change in the
// peer's address is its port number" (§9.4), and "Packets sent on the old
// path MUST NOT contribute to congestion control or RTT estimation for the
// new path." We reset when the connection moves to the new address (a
// stricter start than on confirmation: until then the new path is also held
// to three times what it delivered, §9.3) and remember when: a packet sent
// earlier still leaves flight when acknowledged or lost, but gives no RTT
// sample, grows no window and triggers no congestion event.

import Core

extension LossRecovery {
    /// What a path change resets, kept to put back if the new path fails
    /// validation and the connection returns to the old one (§9.3.2).
    public struct PathState {
        var rtt: RTTEstimator
        var controller: Controller
        var pathStartTime: Instant?
        var firstRTTSampleTime: Instant?
    }

    public var pathState: PathState {
        PathState(rtt: rtt, controller: controller, pathStartTime: pathStartTime, firstRTTSampleTime: firstRTTSampleTime)
    }

    /// Initial RTT estimate (RFC 9002 §6.2.2, kInitialRtt), a fresh
    /// controller, and the old path's packets set aside.
    public mutating func resetForNewPath(controller fresh: Controller, now: Instant) {
        rtt = RTTEstimator()
        controller = fresh
        pacer = Pacer()
        firstRTTSampleTime = nil
        ptoCount = 0
        pathStartTime = now
    }

    /// Back to the old path (its validation never failed): its estimates
    /// return; packets sent meanwhile count for it again.
    public mutating func restore(_ state: PathState) {
        rtt = state.rtt
        controller = state.controller
        pacer = Pacer()
        firstRTTSampleTime = state.firstRTTSampleTime
        pathStartTime = state.pathStartTime
    }

    /// Whether `packet` was sent on the path in use (after the last change).
    func isOnCurrentPath(_ packet: SentPacket) -> Bool {
        guard let start = pathStartTime else { return true }
        return packet.timeSent >= start
    }
}
