// ECN on the connection's path (RFC 9000 §13.4; RFC 9002 §7.1): the glue
// between ECNValidation (the counts and the validation state) and the
// connection's receive, send and ACK paths. Receiving counts each packet
// processed by its datagram's ECN field (+Receive.swift), sending marks
// each datagram with `ecn.marking` (+Send.swift, read by the endpoint as
// `lastDatagramECN`), and ACK frames carry our counts (+SendFrames.swift).

import Core

extension QUICConnection {
    /// The path's ECN validation state (RFC 9000 Appendix A.4).
    public var ecnState: ECNValidation.State { ecn.state }
    /// The ECN counts and validation state, for tests and statistics.
    public var ecnValidation: ECNValidation { ecn }

    /// Loss recovery matched an ACK frame of `space` to our packets (the
    /// newly acknowledged in `ackedScratch`): validate its ECN counts
    /// (§13.4.2.1); true when CE grew, which loss recovery turns into a
    /// congestion event before the controller sees the acknowledged bytes
    /// (RFC 9002 §A.7, B.7). `previousLargest`: the largest acknowledged
    /// before this frame. Touches no loss-recovery state (it runs inside
    /// its `onAckReceived`).
    func ecnAckReceived(_ f: AckFrame, space: PacketNumberSpace, previousLargest: UInt64?) -> Bool {
        let raised = previousLargest.map { f.largestAcknowledged > $0 } ?? true
        let before = ecn.state
        let congestion = ecn.ackReceived(space: space, counts: f.ecn, newlyAcknowledged: ackedScratch, raisedLargest: raised)
        if congestion { context.ecnCongestionSignals += 1 }
        if before != .failed && ecn.state == .failed { context.ecnValidationFailures += 1 }
        return congestion
    }
}
