// The WebTransport sessions of one HTTP/3 server connection, sans-I/O
// (draft-ietf-webtrans-http3-02 and the current draft, at once).
//
// Theory of operation. `H3Session` (with `H3Limits.webTransport`) advertises
// both drafts, reports CONNECT requests as usual and hands over every stream
// that starts with the WebTransport signal (`H3Event.webTransportStream`).
// The glue tells this registry everything that concerns a session and acts
// on what comes back:
//
//     on H3Event.settings(s):        wt.peerSettingsReceived(s)
//     on a CONNECT with :protocol:   wt.connectReceived(streamID:, draft:)
//     on any other request:          wt.ordinaryRequest(streamID:)
//     on its .data / FIN / reset:    wt.connectStreamData / connectStreamReset
//     on H3Event.webTransportStream: wt.streamOpened(...), then its bytes go
//         to wt.receive(streamID:, bytes, fin:) like H3Session.receive
//     on RESET_STREAM/STOP_SENDING:  wt.peerReset / wt.peerStopSending
//     on a QUIC DATAGRAM:            wt.datagramReceived(bytes)
//     after each call:               while let e = wt.nextEvent() { act(e) }
//     the application's answer:      wt.accept / wt.refuse / wt.close
//     sending:                       wt.openStream, wt.localStreamOpened,
//         wt.sendAllowance/didSend, wt.dataConsumed, wt.streamFinished;
//         capsules from wt.takeOutput(sessionID:) go out in DATA frames.
//
// Session lifecycle (one record per CONNECT stream ID):
//
//   connectReceived ─(no client SETTINGS yet)─▶ awaitingSettings
//        │                                         │ peerSettingsReceived
//        ▼                                         ▼
//   requested ◀───────── classified by SETTINGS + :protocol (else refused)
//        │ accept                         │ refuse / peer ends the stream
//        ▼                                ▼
//   accepted ── close capsule / FIN / reset either way ──▶ gone
//
// A gone session's ID is remembered (bounded) so streams that still arrive
// for it are aborted with WT_SESSION_GONE, and on termination every stream
// of the session is aborted with WT_SESSION_GONE (§6: "MUST reset the send
// side and abort reading on the receive side of all ... streams associated
// with the session ... using the WT_SESSION_GONE error code").
//
// Peer streams name their session in a header; a stream whose session is
// not accepted yet is held (§4.6 "SHOULD buffer streams and datagrams until
// they can be associated with an established session") with its bytes left
// in QUIC — `receive` consumes nothing — up to `maxBufferedStreams`; the
// glue re-offers it on `.streamReleased`. Datagrams are held likewise, up to
// `maxBufferedDatagrams`, the oldest dropped first.
//
// Nothing here reads a clock or does I/O.

import Core

/// The WebTransport sessions of one connection; see the file comment.
public final class WebTransportRegistry {
    /// The server's limits and settings, shared by its connections.
    let template: WebTransportTemplate
    var limits: WebTransportLimits { template.limits }
    /// Our WebTransport settings (what `H3Session` advertised).
    var local: H3WebTransportSettings { template.local }
    /// The client's, once its SETTINGS arrived.
    public private(set) var peer: H3WebTransportSettings?

    var sessions: [UInt64: WebTransportSessionRecord] = [:]
    var gone: ClosedStreamIDs
    /// Sessions whose peer sent a close capsule: more CONNECT-stream data is
    /// H3_MESSAGE_ERROR (§6).
    var closeReceived: ClosedStreamIDs

    enum PeerStream {
        /// Reading the Session ID; `read` bytes of the stream so far.
        case header(H3UniStreamPreamble, bidirectional: Bool, read: Int)
        /// Waiting for session `session` to be accepted; `headerLength`
        /// bytes of the stream were its header.
        case held(session: UInt64, bidirectional: Bool, headerLength: Int)
    }

    /// Peer streams not yet attached to a session.
    var pending: [UInt64: PeerStream] = [:]
    var heldCount = 0
    /// Every attached stream (ours and the peer's) → its session.
    var attached: [UInt64: UInt64] = [:]
    /// Attached peer streams: their header length and body bytes counted
    /// (for credit when they finish, and a reset's final size, §5.4).
    var peerStreamBytes: [UInt64: (header: Int, body: UInt64)] = [:]

    var heldDatagrams: [(session: UInt64, payload: [UInt8])] = []
    /// Datagrams dropped: over the bound of those held for sessions not
    /// accepted yet (`heldDatagramsDropped`), or for a session that went or
    /// was refused (`goneDatagramsDropped`) — the server's metrics count
    /// them by reason.
    public internal(set) var heldDatagramsDropped = 0
    public internal(set) var goneDatagramsDropped = 0
    public var droppedDatagrams: Int { heldDatagramsDropped + goneDatagramsDropped }

    var events: [WebTransportEvent] = []
    var eventHead = 0
    /// Sessions with capsules waiting in `takeOutput`.
    public internal(set) var sessionsWithOutput: [UInt64] = []
    var failed = false
    /// `goAway` was called: sessions accepted later drain at once.
    var goingAway = false

    public convenience init(limits: WebTransportLimits) {
        self.init(template: WebTransportTemplate(limits: limits))
    }

    /// A registry of a server whose connections share `template`.
    public init(template: WebTransportTemplate) {
        self.template = template
        gone = ClosedStreamIDs(capacity: template.limits.closedSessionMemory)
        closeReceived = ClosedStreamIDs(capacity: template.limits.closedSessionMemory)
    }

    // MARK: events and output

    /// The next thing to act on, in order; nil when there is none.
    public func nextEvent() -> WebTransportEvent? {
        guard eventHead < events.count else { return nil }
        let e = events[eventHead]
        eventHead += 1
        if eventHead == events.count {
            events.removeAll(keepingCapacity: true)
            eventHead = 0
        }
        return e
    }

    func emit(_ e: WebTransportEvent) { events.append(e) }

    /// Capsules to send on session `id`'s CONNECT stream, in DATA frames.
    public func takeOutput(sessionID id: UInt64) -> [UInt8] {
        sessionsWithOutput.removeAll { $0 == id }
        guard let s = sessions[id] else { return [] }
        defer { s.output.removeAll() }
        return s.output
    }

    func queue(_ capsule: WebTransportCapsule, on s: WebTransportSessionRecord) {
        capsule.append(to: &s.output)
        if !sessionsWithOutput.contains(s.id) { sessionsWithOutput.append(s.id) }
    }

    // MARK: queries

    /// The session stream `streamID` belongs to (attached streams only).
    public func session(ofStream streamID: UInt64) -> UInt64? { attached[streamID] }

    /// The draft of session `id`, once known.
    public func draft(ofSession id: UInt64) -> WebTransportDraft? {
        guard let s = sessions[id], s.state != .awaitingSettings(requested: s.draft) else { return nil }
        return s.draft
    }

    public func isAccepted(sessionID id: UInt64) -> Bool { sessions[id]?.state == .accepted }

    /// Sessions at once (every state).
    public var sessionCount: Int { sessions.count }

    // MARK: settings and CONNECT

    /// The client's SETTINGS: CONNECTs held for them are classified now.
    public func peerSettingsReceived(_ settings: H3Settings) {
        guard peer == nil else { return }
        peer = settings.webTransport
        for id in sessions.keys.sorted() {
            guard let s = sessions[id], case .awaitingSettings(let requested) = s.state else { continue }
            classify(s, requested: requested)
        }
    }

    /// A CONNECT with a WebTransport `:protocol` (`WebTransportDraft.requested`).
    public func connectReceived(streamID id: UInt64, draft requested: WebTransportDraft) {
        guard !failed, sessions[id] == nil else { return }
        guard sessions.count < limits.maxSessions else {
            emit(.sessionRefused(sessionID: id, code: .requestRejected))
            forgetSession(id, refused: true)
            return
        }
        let s = WebTransportSessionRecord(id: id, state: .awaitingSettings(requested: requested), draft: requested)
        sessions[id] = s
        if peer != nil { classify(s, requested: requested) }
    }

    /// Picks the session's draft from the client's SETTINGS and its `:protocol`.
    private func classify(_ s: WebTransportSessionRecord, requested: WebTransportDraft) {
        guard let peer else { return }
        // Current draft §3.1: "If the server receives SETTINGS that do not
        // have correct values for every required setting ... the server MUST
        // treat all established and newly incoming WebTransport sessions as
        // malformed" (RFC 9114 §4.1.2: a stream error H3_MESSAGE_ERROR);
        // draft-02 §3.1 requires SETTINGS_ENABLE_WEBTRANSPORT = 1 likewise.
        let supported = peer.h3Datagram && (requested == .draft02 ? peer.enableWebTransportDraft02 : peer.wtEnabled)
        guard supported else {
            emit(.sessionRefused(sessionID: s.id, code: .messageError))
            forgetSession(s.id, refused: true)
            return
        }
        if requested == .h3 {
            if local.offersFlowControl && peer.offersFlowControl {
                s.flow = WebTransportFlowControl(local: local, peer: peer)
            } else if sessions.values.contains(where: { $0 !== s && $0.draft == .h3 && $0.state != .awaitingSettings(requested: .h3) }) {
                // §5.1: "A server that receives more than one session on an
                // underlying transport connection when flow control is not
                // enabled MUST reset the excessive CONNECT streams with a
                // H3_REQUEST_REJECTED status".
                emit(.sessionRefused(sessionID: s.id, code: .requestRejected))
                forgetSession(s.id, refused: true)
                return
            }
        }
        s.draft = requested
        s.state = .requested
        emit(.sessionRequested(sessionID: s.id, draft: requested))
    }

    /// Not a session: an ordinary request (or a CONNECT that is not
    /// WebTransport) on stream `id`. Streams and datagrams held for it go.
    public func ordinaryRequest(streamID id: UInt64) {
        guard sessions[id] == nil else { return }
        forgetSession(id, refused: true)
    }

    /// The application accepted session `id` (the glue sent the 2xx):
    /// held streams are released, early capsules and datagrams delivered.
    public func accept(sessionID id: UInt64) {
        guard let s = sessions[id], s.state == .requested else { return }
        s.state = .accepted
        for (stream, p) in pending.sorted(by: { $0.key < $1.key }) {
            if case .held(let session, _, _) = p, session == id { emit(.streamReleased(streamID: stream)) }
        }
        var kept: [(session: UInt64, payload: [UInt8])] = []
        for d in heldDatagrams {
            if d.session == id { emit(.datagram(sessionID: id, payload: d.payload)) } else { kept.append(d) }
        }
        heldDatagrams = kept
        let early = s.early
        let fin = s.earlyFin
        s.early = []
        if goingAway { drain(s) }
        if !early.isEmpty || fin { early.withUnsafeBytes { readCapsules(s, $0, fin: fin) } }
    }

    /// The application refused session `id` (the glue sent a 4xx/5xx and
    /// ended the stream): held streams are aborted.
    public func refuse(sessionID id: UInt64) {
        guard let s = sessions[id], s.state != .accepted else { return }
        forgetSession(id, refused: true)
    }

    /// Closes session `id` from our side. - Returns: the capsules to send on
    /// its CONNECT stream (what was queued, then WT_CLOSE_SESSION with `code`
    /// and `message`, cut to 1024 bytes at a UTF-8 boundary); the glue sends
    /// them and FIN (§6: "MUST immediately send a FIN"). Every stream of the
    /// session is aborted (events).
    public func close(sessionID id: UInt64, code: UInt32, message: [UInt8]) -> [UInt8] {
        guard let s = sessions[id], s.state == .accepted else { return [] }
        var out = s.output
        WebTransportCapsule.closeSession(code: code, message: message).append(to: &out)
        terminate(s)
        return out
    }

    /// We are going away (HTTP/3 GOAWAY): every accepted session is asked to
    /// drain — WT_DRAIN_SESSION for the current draft (§4.7), and an event
    /// for the application in both; so is every session accepted later.
    public func goAway() {
        goingAway = true
        for id in sessions.keys.sorted() {
            guard let s = sessions[id], s.state == .accepted else { continue }
            drain(s)
        }
    }

    private func drain(_ s: WebTransportSessionRecord) {
        guard !s.drainSent else { return }
        s.drainSent = true
        if s.draft == .h3 { queue(.drainSession, on: s) }
        emit(.sessionDraining(sessionID: s.id))
    }

    // MARK: ending sessions

    /// The session is over: its streams are aborted with WT_SESSION_GONE,
    /// its ID remembered.
    func terminate(_ s: WebTransportSessionRecord) {
        for stream in s.streams.sorted() {
            emit(.abortStream(streamID: stream, code: WebTransportErrorCode.sessionGone))
            attached[stream] = nil
            peerStreamBytes[stream] = nil
        }
        s.streams.removeAll()
        forgetSession(s.id, refused: false)
    }

    /// Drops session `id` (if any) and what was held for it.
    func forgetSession(_ id: UInt64, refused: Bool) {
        sessions[id] = nil
        sessionsWithOutput.removeAll { $0 == id }
        gone.remember(id)
        let code = refused ? WebTransportErrorCode.bufferedStreamRejected : WebTransportErrorCode.sessionGone
        for (stream, p) in pending.sorted(by: { $0.key < $1.key }) {
            guard case .held(let session, _, _) = p, session == id else { continue }
            pending[stream] = nil
            heldCount -= 1
            emit(.abortStream(streamID: stream, code: code))
        }
        let before = heldDatagrams.count
        heldDatagrams.removeAll { $0.session == id }
        goneDatagramsDropped += before - heldDatagrams.count
    }

    func failConnection(_ code: H3ErrorCode, _ reason: StaticString) {
        guard !failed else { return }
        failed = true
        emit(.connectionError(code: code, reason: reason))
    }
}

/// The limits (clamped) and advertised settings every `WebTransportRegistry`
/// of a server shares, built once (`H3SessionTemplate.webTransport`) so a
/// connection does not carry its own copy.
public final class WebTransportTemplate {
    let limits: WebTransportLimits
    let local: H3WebTransportSettings

    public init(limits: WebTransportLimits) {
        let l = limits.clamped
        self.limits = l
        local = l.advertised
    }
}
