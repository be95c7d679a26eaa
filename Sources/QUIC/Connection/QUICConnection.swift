// A QUIC connection, server side (RFC 9000, 9001), sans-I/O.
//
// Theory of operation. The endpoint hands the connection each datagram
// routed to it (`receive`, QUICConnection+Receive.swift), asks it for
// datagrams to send (`writeDatagram`, +Send.swift) and fires its timers
// (`expire`, +Timers.swift). Everything the connection learns that the
// application must know becomes a `QUICEvent` in the endpoint's queue; the
// application acts through the stream calls below. Nothing here reads a
// clock or touches a socket.
//
// Lifecycle (§10):
//
//   open ──(error / close())──> closing ──(3×PTO)──> terminated
//     │                            (resends CONNECTION_CLOSE when packets arrive, §10.2.1)
//     ├──(peer CONNECTION_CLOSE / stateless reset)──> draining ──(3×PTO)──> terminated
//     └──(idle timeout, §10.1)──> terminated
//
// `.closed` is posted once, when the connection leaves `open`; after it the
// application's calls do nothing. A terminated connection is unrouted and
// leaves the endpoint.
//
// Packet number spaces, keys and CRYPTO streams are per space
// (PacketSpaceState); 1-RTT key updates are in KeyPhase. Loss detection and
// congestion control are Sources/QUIC/Recovery (RFC 9002); what each packet
// carried is in the spaces' SentPacketLog so losses re-queue frames, never
// packets (§13.3).
//
// Paths (RFC 9000 §9, QUICConnection+Migration.swift): the connection sends
// on one path to the peer (`path`) and keeps a few others it heard from;
// once the handshake is confirmed the peer may move (a NAT rebinding or an
// active migration) and the connection follows, validating the new path.

import Core

public final class QUICConnection {
    enum Lifecycle {
        case open
        /// We sent CONNECTION_CLOSE; it is resent (rate-limited) until `until`.
        case closing(until: Instant)
        /// The peer closed (or reset): send nothing until `until`.
        case draining(until: Instant)
        case terminated
    }

    /// The CONNECTION_CLOSE we send while closing.
    struct CloseFrame {
        var errorCode: UInt64
        var frameType: UInt64
        var application: Bool
        var reason: [UInt8]
    }

    let context: EndpointContext
    /// The endpoint's (not a copy per connection).
    var configuration: QUICConfiguration { context.configuration }
    /// The version in use: the client's first, or the one compatible
    /// version negotiation moved to (RFC 9368, +VersionNegotiation.swift).
    var version: QUICVersion
    /// The version of the client's first Initial (RFC 9368 §2: "original").
    let originalVersion: QUICVersion
    /// After a switch: the original version's Initial read keys, kept until
    /// a Handshake packet is processed (RFC 9369 §4).
    var originalInitialReadKeys: PacketKeys?
    /// The client's hello was read and the version settled.
    var versionDecided = false
    /// Our transport parameters, re-encoded if the version changes (RFC
    /// 9368): kept out of line until the version is decided.
    var localParametersBox: Boxed<TransportParameters>?
    /// The path in use (§9): where our packets go. It changes when the
    /// peer migrates (a `.peerAddressChanged` event says so).
    public var path: DatagramPath { current.path }
    var current: PeerPath
    /// Other paths the peer used or probed, most recent last (bounded by
    /// `maxOtherPaths`): the one we left, candidates being probed.
    var others: [PeerPath] = []
    static let maxOtherPaths = 4
    /// The last validated path we left: where the connection returns if the
    /// path it moved to fails validation (§9.3.2). Out of line, like its
    /// congestion state: most connections never migrate.
    var fallback: DatagramPath? {
        get { fallbackBox?.value }
        set { fallbackBox = newValue.map { Boxed($0) } }
    }
    var fallbackBox: Boxed<DatagramPath>?
    /// The congestion state of `fallback`, when moving reset it (§9.4).
    var fallbackRecovery: LossRecovery<CongestionControl>.PathState? {
        get { fallbackRecoveryBox?.value }
        set { fallbackRecoveryBox = newValue.map { Boxed($0) } }
    }
    /// Out of line: most connections never migrate.
    var fallbackRecoveryBox: Boxed<LossRecovery<CongestionControl>.PathState>?
    /// The path of the datagram being processed.
    var receivingPath: DatagramPath
    /// The datagram being written carries PATH_CHALLENGE or PATH_RESPONSE
    /// (it is padded to 1200 bytes, §8.2.1).
    var carriesPathFrame = false
    /// The Destination Connection ID of the client's first Initial (§7.3):
    /// before a Retry, as the Retry token recorded it.
    let originalDestinationID: ConnectionID
    /// The Destination Connection ID of the Initial that made this
    /// connection: its Initial keys come from it (RFC 9001 §5.2) and it
    /// routes to us until the handshake is confirmed. After a Retry it is
    /// the Retry's Source Connection ID (§7.3 retry_source_connection_id).
    let initialDestinationID: ConnectionID
    /// The Source Connection ID of the client's first Initial (§7.3).
    let peerInitialSourceID: ConnectionID
    let handshake: any CryptoHandshake
    /// The TLS handshake, for what the worker reports of it (suite, resumption).
    public var cryptoHandshake: any CryptoHandshake { handshake }
    public var applicationContext: AnyObject?

    var lifecycle = Lifecycle.open
    var closeFrame: CloseFrame?
    var closeFramePending = false
    var datagramsWhileClosing = 0

    let spaces = PacketSpaces()
    var keyPhase: KeyPhase?
    /// qlog events of this connection (`--quic-log`); nil: none, for the
    /// cost of a nil check per hook (+QLog.swift).
    var qlog: QLogTrace?
    /// Received packets that failed authentication (RFC 9001 §6.6).
    var failedDecryptions: UInt64 = 0
    var recovery: LossRecovery<CongestionControl>
    /// The pacer held back data (RFC 9002 §7.7) until this time: the
    /// connection's deadline wakes it then. nil: not pacing-blocked.
    var pacedUntil: Instant?
    /// Scratch lists of acknowledged / lost packet numbers and their frames
    /// (reused, so an ACK allocates nothing): the endpoint's, shared by its
    /// connections, so an idle connection holds none.
    var ackedScratch: [UInt64] {
        get { context.ackedScratch }
        _modify { yield &context.ackedScratch }
    }
    var lostScratch: [(PacketNumberSpace, UInt64)] {
        get { context.lostScratch }
        _modify { yield &context.lostScratch }
    }
    var frameScratch: [SentFrame] {
        get { context.frameScratch }
        _modify { yield &context.frameScratch }
    }
    /// The client's transport parameters still consulted (nil: not yet received).
    var peerParameters: PeerTransportLimits?
    /// The packet being processed carried IMMEDIATE_ACK (draft-ietf-quic-ack-frequency §5).
    var immediateAckRequested = false
    public internal(set) var isHandshakeComplete = false
    var handshakeDonePending = false
    /// A packet carrying HANDSHAKE_DONE was acknowledged: the client knows
    /// the handshake is confirmed (RFC 9001 §4.1.2), probes need not repeat it.
    var handshakeDoneAcknowledged = false
    var peerAckDelayExponent: UInt64 = 3
    var peerMaxUDPPayloadSize = 65527

    /// §8.1: until the client's address is validated, we send at most three
    /// times what we received (on the path in use; PeerPath).
    var addressValidated: Bool {
        get { current.validated }
        set { current.validated = newValue }
    }

    var streams: StreamMap
    var sendQueue: [QUICStream] = []

    // Connection flow control (§4.1). Receive: the limit we advertised, the
    // sum of the highest offsets received on every stream, and what the
    // application consumed. Send: the peer's limit and the new bytes sent.
    var receiveLimit: UInt64
    var receivedTotal: UInt64 = 0
    var consumedTotal: UInt64 = 0
    var sendLimit: UInt64 = 0
    var sentTotal: UInt64 = 0
    var dataBlockedPending: UInt64?
    var dataBlockedSentAt: UInt64?
    // (Flags are declared after an optional where they can be: they fill
    // its padding, and an idle connection is that much smaller.)
    var maxDataPending = false

    var localIDs = LocalConnectionIDs()
    var peerIDs: PeerConnectionIDs
    /// ECN counts and validation on the path (QUICConnection+ECN.swift).
    var ecn = ECNValidation()
    /// Path MTU discovery (QUICConnection+PMTU.swift); the datagram being
    /// built is a probe.
    var pmtu = PathMTUDiscovery(maximum: PathMTUDiscovery.base)
    var sendingPMTUProbe = false
    /// The ECN field of the datagram being processed / built.
    var receivingECN = ECNCodepoint.notECT
    var sendingECN = ECNCodepoint.notECT
    /// RFC 9221 datagrams (QUICConnection+Datagrams.swift).
    var incomingDatagrams: DatagramQueue
    var outgoingDatagrams: DatagramQueue

    /// §10.1: the idle timeout in force (the smaller of both, 0 = none).
    var idleTimeout: Int64
    var idleDeadline: Instant?
    var ackElicitingSentSinceReceive = false

    /// The latest time the endpoint gave us (for `close()`, which takes none).
    var lastSeen: Instant
    /// `lastSeen` when the idle release last ran (QUICConnection+IdleMemory).
    var idleReleasedAt = Instant(nanoseconds: .min)

    // Endpoint bookkeeping.
    var timerGeneration: UInt64 = 0
    var armedDeadline: Instant?
    var queuedForOutput = false
    /// Counted among the endpoint's half-open connections (not yet
    /// handshake-complete, not terminated), created at `createdAt`.
    var isHalfOpen = false
    let createdAt: Instant

    /// §8.1.3: the NEW_TOKEN token sent after the handshake, kept until
    /// acknowledged (a lost frame carries it again, §13.3).
    var newToken: [UInt8]?
    var newTokenPending = false

    /// Makes the connection for a client's first Initial (or the first after
    /// our Retry, with `retrySourceID`), or nil when the handshake cannot be
    /// made. `addressValidated`: the Initial carried a valid token (§8.1).
    init?(context: EndpointContext, version: QUICVersion, originalDestinationID: ConnectionID,
          initialDestinationID: ConnectionID? = nil, retrySourceID: ConnectionID? = nil, addressValidated: Bool = false,
          peerSourceID: ConnectionID, path: DatagramPath, now: Instant,
          makeHandshake: ([UInt8]) -> (any CryptoHandshake)?) {
        let configuration = context.configuration
        let localID = context.connectionIDs.newConnectionID()
        let token = context.connectionIDs.resetToken(for: localID)
        var parameters = configuration.transportParameters
        // §7.3: the client checks both against what it saw on the wire.
        parameters.originalDestinationConnectionID = originalDestinationID
        parameters.retrySourceConnectionID = retrySourceID
        parameters.initialSourceConnectionID = localID
        parameters.statelessResetToken = token
        // RFC 9369 §4 / RFC 9368 §3: the version in use and those we speak.
        parameters.versionInformation = VersionInformation(chosenVersion: version, availableVersions: configuration.supportedVersions)
        var encoded = [UInt8](repeating: 0, count: parameters.encodedSize())
        encoded.withUnsafeMutableBytes { _ = parameters.encode(into: $0) }
        guard let handshake = makeHandshake(encoded) else { return nil }

        self.context = context
        self.version = version
        originalVersion = version
        localParametersBox = Boxed(parameters)
        current = PeerPath(path: path, validated: addressValidated)
        receivingPath = path
        self.originalDestinationID = originalDestinationID
        let initialDestinationID = initialDestinationID ?? originalDestinationID
        self.initialDestinationID = initialDestinationID
        createdAt = now
        self.peerInitialSourceID = peerSourceID
        self.handshake = handshake
        // The controller's max_datagram_size stays BASE_PLPMTU (the initial
        // and minimum windows of RFC 9002 §7.2 in 1200-byte units) whatever
        // size path MTU discovery reaches.
        recovery = LossRecovery(controller: CongestionControl(configuration.congestionControl,
                                                                   maxDatagramSize: PathMTUDiscovery.base),
                                maxAckDelay: 25_000_000, now: now)
        pmtu = PathMTUDiscovery(maximum: configuration.maxUDPPayloadSize)
        streams = StreamMap(maxBidi: configuration.initialMaxStreamsBidi, maxUni: configuration.initialMaxStreamsUni)
        receiveLimit = configuration.initialMaxData
        peerIDs = PeerConnectionIDs(initial: peerSourceID)
        incomingDatagrams = DatagramQueue(maxCount: configuration.maxQueuedDatagrams, maxBytes: configuration.maxQueuedDatagramBytes)
        outgoingDatagrams = DatagramQueue(maxCount: configuration.maxQueuedDatagrams, maxBytes: configuration.maxQueuedDatagramBytes)
        idleTimeout = configuration.maxIdleTimeout
        lastSeen = now
        localIDs.issue(localID, token: token, announce: false)

        // The Initial keys go with the Initial space (AllocationZone).
        let zone = AllocationZone.handshake.enter()
        let keys = InitialKeys.derive(destinationID: initialDestinationID, version: version)
        AllocationZone.restore(zone)
        spaces[0].readKeys = keys.client
        spaces[0].writeKeys = keys.server
        context.routes[localID] = self
        context.routes[initialDestinationID] = self
        restartIdleTimer(now: now)
        qlog = context.makeQLogTrace?(originalDestinationID, now)
    }

    /// Our current Source Connection ID (sequence 0).
    var localID: ConnectionID { localIDs.active.first?.id ?? .empty }

    var isOpen: Bool { if case .open = lifecycle { true } else { false } }
    /// Streams' received bytes can be read while open and while draining:
    /// what the peer sent before its CONNECTION_CLOSE (in the same packet,
    /// or read in the same batch of datagrams) is still the application's,
    /// a WebTransport session's close capsule say. A draining connection
    /// sends nothing (§10.2.2), so the credit reading returns goes nowhere.
    var mayReadStreams: Bool {
        switch lifecycle {
        case .open, .draining: true
        case .closing, .terminated: false
        }
    }
    var handshakeConfirmed: Bool { isHandshakeComplete }  // server: confirmed at completion (RFC 9001 §4.1.2)

    public var negotiatedProtocol: [UInt8]? { handshake.negotiatedProtocol }

    /// Asks the endpoint to serve this connection and re-arms its deadline;
    /// called after everything that may create output or move a timer.
    func scheduleUpdate() {
        if case .terminated = lifecycle { return }
        context.wantsToSend(self)
        context.deadlines.arm(self, at: nextDeadline)
    }

    func post(_ event: QUICEvent) { context.post(event, from: self) }
}

// MARK: - streams (the application's side)

extension QUICConnection {
    /// Calls `body` with the stream's readable bytes (in order) and whether
    /// the FIN follows them; `body` says how many it consumed. nil when the
    /// stream has no receive side (unknown, closed, reset, or ours), or the
    /// connection is closing or gone (see `mayReadStreams`).
    /// Consuming returns flow-control credit (§4.2).
    public func withReadableBytes<R>(stream id: UInt64,
                                     _ body: (UnsafeRawBufferPointer, _ finAfter: Bool) -> (consumed: Int, result: R)) -> R? {
        guard mayReadStreams, let s = streams[id], s.receive != nil, !s.receive!.abandoned else { return nil }
        switch s.receive!.state {
        case .receiving, .sizeKnown, .dataReceived: break
        default: return nil
        }
        let fin = s.receive!.finAfterReadable
        // `body` reads through a copy of the receive side's buffer (it may
        // act on the stream meanwhile: STOP_SENDING, a reset), and the copy
        // is gone before the side is consumed in place (StreamReceiveSide).
        let (consumed, result): (Int, R) = s.receive!.withReadableBytes { body($0, fin) }
        // What `body` did may have abandoned the side (its bytes are gone
        // already) or closed the stream.
        guard streams[id] === s, s.receive != nil, !s.receive!.abandoned else {
            scheduleUpdate()
            return result
        }
        _ = s.receive!.consume(consumed)
        if fin && s.receive!.buffer.contiguousCount == 0 { s.receive!.finRead() }
        // A RESET_STREAM_AT whose reliable bytes are now all read takes
        // effect (draft-ietf-quic-reliable-stream-reset §5).
        if let code = s.receive!.completeReliableReset() {
            post(.streamReset(id, errorCode: code))
            s.receive!.resetRead()
        }
        returnCredit(stream: s)
        closeIfDone(s)
        scheduleUpdate()
        return result
    }

    /// Queues up to `bytes.count` bytes (and the FIN if all were taken and
    /// `fin`); returns how many were accepted. Taking fewer arms a
    /// `.streamWritable` event for when space frees.
    public func write(stream id: UInt64, _ bytes: UnsafeRawBufferPointer, fin: Bool) -> Int {
        guard isOpen, let s = streams[id], let send = s.send else { return 0 }
        let n = send.write(bytes, limit: configuration.maxSendBufferPerStream)
        if fin && n == bytes.count { send.finish() }
        queueForSend(s)
        scheduleUpdate()
        return n
    }

    /// Ends the stream with no more bytes.
    public func finish(stream id: UInt64) {
        guard isOpen, let s = streams[id], s.send != nil else { return }
        s.send!.finish()
        queueForSend(s)
        scheduleUpdate()
    }

    public func sendBufferSpace(stream id: UInt64) -> Int {
        guard isOpen, let s = streams[id], let send = s.send else { return 0 }
        return send.space(limit: configuration.maxSendBufferPerStream)
    }

    /// Opens a server-initiated unidirectional stream, or nil at the peer's
    /// limit (a STREAMS_BLOCKED is then sent, §4.6).
    public func openUnidirectionalStream() -> UInt64? {
        guard isOpen else { return nil }
        let peerLimit = peerParameters?.initialMaxStreamDataUni ?? 0
        let s = streams.openLocalUni { QUICStream(id: $0, receive: nil, send: StreamSendSide(peerMaxData: peerLimit)) }
        if s == nil { scheduleUpdate() }
        return s?.id
    }

    /// Whether `openUnidirectionalStream` / `openBidirectionalStream` would
    /// open a stream now (the peer's stream limits allow one more).
    public var canOpenUnidirectionalStream: Bool { isOpen && streams.localUniOpened < streams.localUniLimit }
    public var canOpenBidirectionalStream: Bool { isOpen && streams.localBidiOpened < streams.localBidiLimit }

    /// Opens a server-initiated bidirectional stream, or nil at the peer's
    /// limit (a STREAMS_BLOCKED is then sent, §4.6). Its receive window is
    /// `initialMaxStreamDataBidiLocal`; its send limit the peer's
    /// initial_max_stream_data_bidi_remote (§18.2).
    public func openBidirectionalStream() -> UInt64? {
        guard isOpen else { return nil }
        let peerLimit = peerParameters?.initialMaxStreamDataBidiRemote ?? 0
        let window = configuration.initialMaxStreamDataBidiLocal
        let s = streams.openLocalBidi {
            QUICStream(id: $0, receive: StreamReceiveSide(window: window), send: StreamSendSide(peerMaxData: peerLimit))
        }
        if s == nil { scheduleUpdate() }
        return s?.id
    }

    /// Abandons the send side with RESET_STREAM (§3.1, §19.4) — or, with a
    /// `reliableSize` above 0 (or the stream's `setReliableResetSize`) and a
    /// peer that sent reset_stream_at, with RESET_STREAM_AT (draft-ietf-quic-
    /// reliable-stream-reset §4, §5): the first `reliableSize` bytes written
    /// (capped by what was written and by flow control) are still
    /// delivered, the rest dropped.
    public func resetStream(_ id: UInt64, errorCode: UInt64, reliableSize: UInt64 = 0) {
        guard isOpen, let s = streams[id], s.send != nil else { return }
        if resetSendSide(s, errorCode: errorCode, reliableSize: reliableSize) {
            queueForSend(s)
            scheduleUpdate()
        }
    }

    /// Every later reset of the stream's send side — by `resetStream` or in
    /// answer to STOP_SENDING (§3.5) — keeps its first `size` bytes, as
    /// RESET_STREAM_AT when the peer accepts it: for a header that names
    /// what the stream belongs to (WebTransport's).
    public func setReliableResetSize(stream id: UInt64, _ size: UInt64) {
        streams[id]?.reliableResetSize = size
    }

    /// Resets `s`'s send side; false when it was reset or done already.
    func resetSendSide(_ s: QUICStream, errorCode: UInt64, reliableSize: UInt64) -> Bool {
        let reliable = max(reliableSize, s.reliableResetSize)
        if reliable > 0 && peerAcceptsResetStreamAt {
            guard let reserved = s.send!.resetStream(errorCode: errorCode, reliableSize: reliable,
                                                     connectionCredit: sendLimit - sentTotal) else { return false }
            sentTotal += reserved
            return true
        }
        return s.send!.resetStream(errorCode: errorCode)
    }

    /// Whether the peer sent the reset_stream_at transport parameter
    /// (draft-ietf-quic-reliable-stream-reset §3): `resetStream` with a
    /// reliable size then sends RESET_STREAM_AT.
    public var peerAcceptsResetStreamAt: Bool { peerParameters?.resetStreamAt == true }

    /// Asks the peer to stop sending (§3.5, §19.5); the receive side is
    /// abandoned: late data is discarded and its credit still returned.
    public func stopSending(_ id: UInt64, errorCode: UInt64) {
        guard isOpen, let s = streams[id], s.receive != nil else { return }
        let wasTerminal = s.receive!.isTerminal
        s.receive!.abandon()
        if !wasTerminal && s.receive!.state != .dataRead && s.receive!.state != .resetRead {
            s.requestStopSending(errorCode)
        }
        returnCredit(stream: s)
        queueForSend(s)
        closeIfDone(s)
        scheduleUpdate()
    }

    /// Closes the connection: CONNECTION_CLOSE of type 0x1d (application) or
    /// 0x1c (transport), then the closing state (§10.2.1).
    public func close(errorCode: UInt64, reason: [UInt8], application: Bool) {
        guard isOpen else { return }
        enterClosing(CloseFrame(errorCode: errorCode, frameType: 0, application: application, reason: reason),
                     reason: .local(errorCode: errorCode, application: application), now: nil)
        scheduleUpdate()
    }

    /// Application-read bytes become credit (§4.2): the stream's and the
    /// connection's limits move up once half a window was consumed (a parked
    /// stream's bytes count for the connection as they arrive).
    func returnCredit(stream s: QUICStream) {
        guard s.receive != nil else { return }
        let bytes = s.takeConnectionCredit()
        if s.receive!.limitUpdate != nil && !s.maxStreamDataPending {
            s.maxStreamDataPending = true
            queueForSend(s)
        }
        guard bytes > 0 else { return }
        consumedTotal += bytes
        if connectionLimitUpdate != nil { maxDataPending = true }
    }

    /// The application stops reading `stream` for a while (`parked`), or
    /// reads it again: while parked, what the peer sends on it no longer
    /// holds the connection's window (StreamReceiveSide), only the stream's.
    public func setReadingParked(stream id: UInt64, _ parked: Bool) {
        guard isOpen, let s = streams[id], s.receive != nil, s.readingParked != parked else { return }
        s.readingParked = parked
        returnCredit(stream: s)
        scheduleUpdate()
    }

    /// The MAX_DATA limit to send, when half the window was consumed.
    var connectionLimitUpdate: UInt64? {
        let proposed = consumedTotal + configuration.initialMaxData
        return proposed > receiveLimit && proposed - receiveLimit >= configuration.initialMaxData / 2 ? proposed : nil
    }

    func queueForSend(_ s: QUICStream) {
        guard !s.queuedForSend else { return }
        s.queuedForSend = true
        sendQueue.append(s)
    }

    /// Forgets a stream whose two sides are done (§3.3); a peer stream frees
    /// a slot for MAX_STREAMS.
    func closeIfDone(_ s: QUICStream) {
        guard s.isClosed else { return }
        streams.remove(s.id)
    }
}
