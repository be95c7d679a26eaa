// What the registry keeps per WebTransport session.

/// One session (its ID is its CONNECT stream's). A class, mutated in place
/// through the registry's dictionary.
final class WebTransportSessionRecord {
    enum State: Equatable {
        /// A CONNECT that came before the client's SETTINGS: its draft is
        /// unknown (draft-02 §3.1, current draft §3.1: "the server MUST NOT
        /// process any incoming WebTransport requests until the client's
        /// SETTINGS have been received"). `requested` is what `:protocol` said.
        case awaitingSettings(requested: WebTransportDraft)
        /// Given to the application, not yet accepted.
        case requested
        case accepted
    }

    let id: UInt64
    var state: State
    var draft: WebTransportDraft
    var capsules = CapsuleReader(delivers: CapsuleType.isWebTransport)
    /// CONNECT-stream bytes that came before `accept`, and whether the FIN did.
    var early: [UInt8] = []
    var earlyFin = false
    /// Streams of the session, attached (header read, session accepted).
    var streams: Set<UInt64> = []
    /// nil: no flow control (draft-02, or the client offered none).
    var flow: WebTransportFlowControl?
    /// Capsules for the glue to send on the CONNECT stream (in DATA frames).
    var output: [UInt8] = []
    var drainSent = false

    init(id: UInt64, state: State, draft: WebTransportDraft) {
        self.id = id
        self.state = state
        self.draft = draft
    }
}
