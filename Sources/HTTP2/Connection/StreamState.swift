// Stream states of RFC 9113 §5.1, for a server that never pushes.
//
//                          +--------+
//                          |  idle  |
//                          +--------+
//                              |
//                              | recv H (opens the stream)
//               recv ES        v        send ES
//            +--------------+--------+--------------+
//            |              |  open  |              |
//            v              +--------+              v
//     +------------+            |           +------------+
//     | half-closed|            | send R /  | half-closed|
//     |  (remote)  |            | recv R    |  (local)   |
//     +------------+            |           +------------+
//            |                  v                  |
//            | send ES /   +--------+   recv ES /  |
//            | send R /    | closed |   send R /   |
//            +-----------> |        | <------------+
//                          +--------+   recv R
//
//   H: HEADERS, ES: END_STREAM flag, R: RST_STREAM.
//
// "reserved (local)" and "reserved (remote)" exist only with server push,
// which we never do (SETTINGS_ENABLE_PUSH=0 is ours to send, and a client
// cannot push, §8.4). "idle" and "closed" are not stored in a stream record:
// idle is every client id above the highest one seen, closed is every other
// id that has no record (`ClosedStreams` remembers how the recent ones
// closed). So `StreamState` holds only the three live states, and every
// transition is one of the functions below; they return the next state, or
// nil for "closed" (the caller removes the record).

/// A live stream's state.
enum StreamState: Equatable {
    case open
    case halfClosedLocal
    case halfClosedRemote

    /// Opened by the peer's HEADERS.
    static func opened(endStream: Bool) -> StreamState {
        endStream ? .halfClosedRemote : .open
    }

    /// The peer may still send DATA or trailers.
    var peerMaySend: Bool { self != .halfClosedRemote }

    /// We may still send HEADERS or DATA.
    var mayWeSend: Bool { self != .halfClosedLocal }

    /// The peer's END_STREAM arrived (on DATA or trailers).
    func receiveEndStream() -> StreamState? {
        switch self {
        case .open: .halfClosedRemote
        case .halfClosedLocal: nil
        case .halfClosedRemote: preconditionFailure("END_STREAM received twice; callers check peerMaySend")
        }
    }

    /// We sent END_STREAM.
    func sendEndStream() -> StreamState? {
        switch self {
        case .open: .halfClosedLocal
        case .halfClosedRemote: nil
        case .halfClosedLocal: preconditionFailure("END_STREAM sent twice; callers check mayWeSend")
        }
    }
}

/// What a server-side response has sent so far on a stream.
enum ResponsePhase: Equatable {
    /// Nothing, or only 1xx informational heads.
    case awaitingHeaders
    /// The final head; DATA and trailers may follow.
    case headersSent
}
