// The sans-I/O HTTP/2 server connection (RFC 9113).
//
// Theory of operation. The server owns the socket and two buffers; this
// object owns everything else: the frame parser, the HPACK contexts, the
// stream table, both directions of flow control, and the abuse budgets.
//
//     let h2 = H2Connection(limits: H2Limits())    // our SETTINGS are in `output`
//     loop {
//         read into inbuf
//         while true {
//             let (event, n) = h2.nextEvent(in: inbuf.readable, now: loop.now)
//             inbuf.readerIndex += n
//             guard let event else { break }     // need more bytes
//             handle(event)                       // may call h2.beginHeaders/sendData/…
//             if case .connectionError = event { flush; close }
//         }
//         write h2.output.readable; h2.output.readerIndex += written
//         arm the timer for h2.nextDeadline; when it fires, h2.expireDeadlines(now:)
//     }
//
// Pull, not callbacks: `nextEvent` parses until the first thing the server
// must act on and returns it with the bytes it consumed, so the server may
// run an application (even a blocking one) between events and call the send
// methods in between. Control frames — SETTINGS and its ack, PING, PRIORITY,
// WINDOW_UPDATE that opens nothing, frames to ignore — are answered here and
// make no event.
//
// Read modes (STYLE §3, "explicit read mode"): the client preface (the
// parser's), then the first frame, which must be SETTINGS (§3.4), then any
// frame, or — after a HEADERS without END_HEADERS — only CONTINUATION on the
// same stream (§6.10). Header blocks split over CONTINUATION are copied into
// one buffer capped by `maxHeaderBlockBytes`; a block in a single frame is
// decoded in place.
//
// Scope (STYLE §4): a connection error queues GOAWAY(code, reason as debug
// data), returns `.connectionError`, and makes the connection sticky-failed:
// later input is swallowed and send calls do nothing. A stream error queues
// RST_STREAM and, if the server knew the stream, returns `.streamReset`;
// malformed requests are refused before the server ever sees them.
//
// Stream ids (§5.1.1): every odd id above the highest seen is idle, every
// even id is idle (we never push), everything else is closed unless it has a
// live record; `ClosedStreams` remembers how recent ones closed (§5.1).
//
// Nothing here reads a clock (time comes in as an `Instant`), allocates per
// frame, or builds a String. The request head an event carries is lent: its
// arrays are the connection's, rebuilt for the next head, so a steady
// stream of requests allocates nothing (H2AllocationTests).

import Core

/// One HTTP/2 server connection; see the file comment for the usage loop.
public final class H2Connection {
    /// Frames to write. Write from `output.readable` and advance
    /// `output.readerIndex`; do not otherwise touch it. Pointers into it are
    /// valid until the next call into the connection.
    public var output = ByteBuffer()

    let limits: H2Limits
    var parser: FrameParser
    var decoder: HPACKDecoder
    var encoder: HPACKEncoder
    var headerList = HeaderList()
    var validator: RequestValidator
    /// The head `.request` and `.trailers` events lend (H2Event): rebuilt in
    /// place for each, so a request costs no allocation once its arrays are
    /// large enough.
    var lentHead = H2RequestHead()
    var streams: StreamTable
    var closedStreams: ClosedStreams

    // MARK: reading

    enum ReadMode {
        /// The preface is the parser's; then the first frame must be SETTINGS.
        case firstSettings
        case frames
        /// Inside a field block: only CONTINUATION on `pendingBlock.streamID`.
        case continuation
    }

    struct PendingBlock {
        var streamID: UInt32 = 0
        var endStream = false
        var selfDependent = false
        var continuations = 0
    }

    var readMode = ReadMode.firstSettings
    var pendingBlock = PendingBlock()
    var blockBuffer: [UInt8] = []

    /// Highest client stream id seen in HEADERS: every odd id above is idle.
    var highestStreamID: UInt32 = 0
    /// Highest stream handed to the server: the last id of our GOAWAY.
    var lastProcessedStreamID: UInt32 = 0

    // MARK: flow control and settings

    var connectionSend = SendWindow(defaultWindow)
    var connectionReceive: ReceiveWindow
    /// The peer's SETTINGS_INITIAL_WINDOW_SIZE: new streams' send window.
    var peerInitialWindow = defaultWindow
    /// The peer's SETTINGS_MAX_FRAME_SIZE: how we split DATA and field blocks.
    var peerMaxFrameSize = Int(SettingsLimits.minMaxFrameSize)
    /// The peer's SETTINGS_MAX_HEADER_LIST_SIZE (advisory; nil: unlimited).
    public internal(set) var peerMaxHeaderListSize: Int?
    /// Receive window of new streams: ours once acknowledged; before that at
    /// least the default 65535 the peer may still be using (§6.9.2).
    var streamReceiveWindow: Int
    var settingsAckPending = true
    var settingsTimerStarted = false
    var settingsDeadline: Instant?

    // MARK: budgets and output bookkeeping

    var controlQueue: ControlQueue
    var resetBudget: TokenBucket
    var emptyFrameBudget: TokenBucket
    /// Absolute offset (bytes ever queued) of `output`'s storage start.
    var outputBase = 0
    /// The time of the latest call that passed one in.
    var now = Instant(nanoseconds: 0)

    // MARK: shutdown

    /// Last stream id of the GOAWAY we sent (graceful or not).
    var goAwayLastStreamID: UInt32?
    /// Set by the first connection error; sticky.
    var failure: H2Error?

    // MARK: sending

    struct OutgoingBlock {
        var streamID: UInt32
        var informational: Bool
        var trailers: Bool
        /// The stream cannot take it (reset, closed): fields are dropped
        /// before they reach the encoder, so HPACK stays in step.
        var discard: Bool
    }

    var outgoing: OutgoingBlock?
    var sendBlock: [UInt8] = []
    var nameScratch: [UInt8] = []

    /// Queues our SETTINGS and, when `connectionWindow` is above 65535, the
    /// WINDOW_UPDATE that raises the connection window.
    public init(limits: H2Limits) {
        let l = limits.clamped
        self.limits = l
        parser = FrameParser(maxFrameSize: Int(SettingsLimits.minMaxFrameSize), expectPreface: true)
        decoder = HPACKDecoder(maxTableSize: 4096, maxHeaderListSize: l.maxHeaderListSize)
        encoder = HPACKEncoder(maxTableSizeLimit: 4096, peerMaxTableSize: 4096)
        validator = RequestValidator(allowProtocol: l.enableConnectProtocol)
        streams = StreamTable(capacity: l.maxConcurrentStreams)
        closedStreams = ClosedStreams(capacity: l.closedStreamMemory)
        connectionReceive = ReceiveWindow(l.connectionWindow)
        streamReceiveWindow = max(defaultWindow, l.initialStreamWindow)
        controlQueue = ControlQueue(limit: l.maxQueuedControlFrames)
        resetBudget = TokenBucket(burst: l.rapidResetBurst, perSecond: l.rapidResetPerSecond)
        emptyFrameBudget = TokenBucket(burst: l.emptyFrameBurst, perSecond: l.emptyFramesPerSecond)
        headerList = HeaderList(reservingBytes: 1024, fields: 32)
        sendBlock.reserveCapacity(512)
        writeInitialSettings()
    }

    deinit {
        output.detach()?.deallocate()
    }

    // MARK: state for the server

    /// Streams open or half-closed (what SETTINGS_MAX_CONCURRENT_STREAMS counts).
    public var openStreamCount: Int { streams.count }

    /// After a connection error or our GOAWAY.
    public var isClosing: Bool { failure != nil || goAwayLastStreamID != nil }

    /// Nothing more will happen: a connection error, or our GOAWAY and no
    /// stream left. Flush `output` and close.
    public var isFinished: Bool { failure != nil || (goAwayLastStreamID != nil && streams.count == 0) }

    /// The connection error that ended the connection, if any.
    public var connectionFailure: H2Error? { failure }

    /// When `expireDeadlines` wants to run (on the clock the server passes
    /// as `now`); nil: no timer.
    public var nextDeadline: Instant? { settingsDeadline }

    /// Fires expired timers: a SETTINGS ack overdue → GOAWAY(SETTINGS_TIMEOUT).
    public func expireDeadlines(now: Instant) -> H2Event? {
        self.now = now
        guard failure == nil, let deadline = settingsDeadline, now >= deadline else { return nil }
        settingsDeadline = nil
        return fail(.settingsTimeout)
    }

    // MARK: input

    /// Parses `input` up to the first event for the server.
    /// - Returns: the event (nil: the bytes hold no complete event — keep the
    ///   unconsumed rest and call again with more), and how many bytes of
    ///   `input` were used. After a connection error all input is consumed.
    public func nextEvent(in input: UnsafeRawBufferPointer, now: Instant) -> (event: H2Event?, consumed: Int) {
        precondition(outgoing == nil, "nextEvent between beginHeaders and endHeaders")
        self.now = now
        if !settingsTimerStarted {
            settingsTimerStarted = true
            if settingsAckPending { settingsDeadline = now.adding(milliseconds: limits.settingsAckTimeoutMilliseconds) }
        }
        guard failure == nil else { return (nil, input.count) }
        trimOutput()
        var offset = 0
        while true {
            let view = UnsafeRawBufferPointer(rebasing: input[offset...])
            let parsed: FrameParser.Event
            do {
                parsed = try parser.nextEvent(in: view)
            } catch {
                return (fail(H2Error(error)), input.count)
            }
            let event: H2Event?
            switch parsed {
            case .needMoreData:
                return (nil, offset)
            case .prefaceReceived(let n):
                offset += n
                continue
            case .streamError(let e, let n):
                offset += n
                event = receiveStreamError(e, type: FrameHeader.decode(view, at: 0)!.type)
            case .frame(let frame, let n):
                offset += n
                event = receive(frame, in: view)
            }
            if failure != nil { return (event, input.count) }
            if let event { return (event, offset) }
        }
    }

    /// One whole frame; spans in `frame` are relative to `view`.
    private func receive(_ frame: Frame, in view: UnsafeRawBufferPointer) -> H2Event? {
        switch readMode {
        case .firstSettings:
            guard case .settings(let s) = frame, !s.ack else { return fail(.firstFrameNotSettings) }
            readMode = .frames
        case .continuation:
            guard case .continuation(let c) = frame, c.streamID == pendingBlock.streamID else {
                return fail(.expectedContinuation)
            }
        case .frames:
            break
        }
        switch frame {
        case .data(let f): return receiveData(f, in: view)
        case .headers(let f): return receiveHeaders(f, in: view)
        case .continuation(let f): return receiveContinuation(f, in: view)
        case .priority: return nil  // §5.3.2: deprecated; we ignore the signal.
        case .rstStream(let f): return receiveRstStream(f)
        case .settings(let f): return receiveSettings(f, in: view)
        case .pushPromise: return fail(.pushPromiseFromClient)
        case .ping(let f): return receivePing(f)
        case .goAway(let f): return .goAway(lastStreamID: f.lastStreamID, code: f.errorCode)
        case .windowUpdate(let f): return receiveWindowUpdate(f)
        case .unknown: return nil  // §5.5: "MUST ignore and discard".
        }
    }

    /// A frame the frame layer judged a stream error (PRIORITY of the wrong
    /// size or depending on itself, WINDOW_UPDATE of 0 on a stream).
    private func receiveStreamError(_ e: FrameError, type: FrameType) -> H2Event? {
        switch readMode {
        case .firstSettings: return fail(.firstFrameNotSettings)
        case .continuation: return fail(.expectedContinuation)
        case .frames: break
        }
        guard case .stream(let id) = e.scope else { return fail(H2Error(e)) }
        switch lookup(id) {
        case .live(let i):
            return streamError(at: i, H2Error(e))
        case .idle where type != .priority:
            return fail(.frameOnIdleStream)
        case .closed(.resetByUs):
            return nil
        case .idle, .closed:
            // A PRIORITY needs no stream: answer on its id, remember nothing.
            if type == .priority { return refuse(id, H2Error(e), remember: nil) }
            // A zero WINDOW_UPDATE is never valid, even racing our
            // END_STREAM: with no stream left to reset, the connection
            // answers it (§5.4.1 lets any stream error be one).
            return fail(H2Error(e))
        }
    }

    // MARK: stream lookup

    enum Lookup {
        case live(Int)
        case idle
        /// nil: closed but no longer remembered (or never opened).
        case closed(ClosedHow?)
    }

    func lookup(_ id: UInt32) -> Lookup {
        if let i = streams.find(id) { return .live(i) }
        if id > highestStreamID || id & 1 == 0 { return .idle }
        return .closed(closedStreams.lookup(id))
    }
}
