// What a connection keeps of the client's transport parameters (RFC 9000
// §18.2) once they are checked and applied: the few that later frames and
// streams still consult. The rest were applied when they arrived (limits,
// idle timeout, ACK delay exponent) or checked then (§7.3 connection IDs,
// RFC 9368 version information), so an idle connection does not hold the
// whole decoded set (issue 15).

struct PeerTransportLimits {
    /// §18.2: the credit a stream starts with, by who opened it and its type.
    var initialMaxStreamDataBidiLocal: UInt64
    var initialMaxStreamDataBidiRemote: UInt64
    var initialMaxStreamDataUni: UInt64
    /// §18.2: how many of our connection IDs the peer keeps (§5.1.1).
    var activeConnectionIDLimit: UInt64
    /// RFC 9221 §3: the largest DATAGRAM frame the peer takes; nil: none.
    var maxDatagramFrameSize: UInt64?
    /// draft-ietf-quic-reliable-stream-reset §3: RESET_STREAM_AT accepted.
    var resetStreamAt: Bool

    init(_ p: TransportParameters) {
        initialMaxStreamDataBidiLocal = p.initialMaxStreamDataBidiLocal
        initialMaxStreamDataBidiRemote = p.initialMaxStreamDataBidiRemote
        initialMaxStreamDataUni = p.initialMaxStreamDataUni
        activeConnectionIDLimit = p.activeConnectionIDLimit
        maxDatagramFrameSize = p.maxDatagramFrameSize
        resetStreamAt = p.resetStreamAt
    }
}

/// A value held out of line, for a connection's rarely used state: nil costs
/// the connection a pointer instead of the value's whole size.
final class Boxed<Value> {
    var value: Value

    init(_ value: Value) { self.value = value }
}
