import CSys
import Core
import Gateway
import HTTP2
import PyBridge

/// HTTP/2 on one connection (RFC 9113). The sans-I/O `H2Connection` does the
/// protocol; this class moves bytes between it and the socket, and between
/// its streams and the gateway.
///
/// ASGI: every request is a task of its own, served concurrently.
/// WSGI: the application runs inline, one stream at a time; requests that
/// arrive meanwhile (the socket is still read while a call waits for body
/// or window) queue in arrival order, bounded by the streams limit.
/// WSGI with a pool (--wsgi-threads): each stream runs on a pool thread as
/// one is free, so streams of one connection are served concurrently; the
/// others are held in arrival order while the session waits in the pool's
/// wait list (see `servePooled`).
///
/// Output: frames accumulate in the core's `output` and are written as the
/// socket takes them. Response data enters the core only while that output
/// is under `highWater`; the rest waits in its stream (`pendingOut`) and
/// makes ASGI `send()` wait, so memory follows the limits, not the peer.
final class H2Session {
    unowned(unsafe) let connection: H1Connection
    var core: H2Connection
    var streams: [UInt32: H2Stream] = [:]
    /// Ended streams kept for reuse (H2Session+StreamPool).
    var spareStreams: [H2Stream] = []
    /// Streams holding response bytes the core has not taken yet.
    private var sendQueue: [H2Stream] = []
    /// Streams whose sender waits for output to drain (see waitForDrain).
    private var drainWaiters: [H2Stream] = []
    /// WSGI requests waiting for the application, in arrival order.
    private var waiting: [H2Stream] = []
    private var waitingHead = 0
    private var inApplication = false
    /// The session is on the WSGI pool's wait list (once at most).
    private var waitsForThread = false
    /// The peer sent GOAWAY, or we did: finish what is open, then close.
    private var goingAway = false
    /// Past --max-connection-age, or opened while draining: the next
    /// completed response brings a GOAWAY.
    private var goAwayAfterResponse = false
    private(set) var closed = false
    /// Streams carrying a WebSocket (RFC 8441), each with a timer of its own.
    var webSockets: [H2Stream] = []
    /// Streams answered in full whose declared body arrived whole, waiting
    /// for the peer's END_STREAM, earliest deadline first (H2Session+PeerEnd).
    var peerEndWaits: [PeerEndWait] = []
    /// Events and timers are being handled: `afterIO` follows, so nothing
    /// needs to schedule a flush.
    private var handlingInput = false
    /// What the connection's one timer is armed for.
    private enum TimerPurpose { case writeStall, windowStall, idle, settingsAck, webSocket, bodyStall, peerEnd }
    /// ASGI streams whose application waits for body, oldest wait first: a
    /// client that stalls mid-body longer than --request-timeout gets 408
    /// (as over HTTP/1.1) and the application sees the request end.
    private var bodyWaiters: [H2Stream] = []
    private var timerPurpose: TimerPurpose?
    /// When response data last moved into the output: streams the peer's
    /// windows hold back longer than the request timeout are given up.
    private var lastSendProgress = Instant(nanoseconds: 0)

    static let highWater = 64 * 1024
    static let lowWater = 16 * 1024

    var worker: Worker { connection.worker }
    /// Bytes of response data the output may still take now.
    var outputRoom: Int { max(0, H2Session.highWater - core.output.readableCount) }

    init(connection: H1Connection) {
        self.connection = connection
        let config = connection.worker.config
        var limits = H2Limits()
        limits.maxConcurrentStreams = config.http2MaxStreams
        limits.maxHeaderListSize = max(config.maxHeaderSize, 4096)
        // RFC 8441: WebSockets over streams, for ASGI applications only.
        limits.enableConnectProtocol = connection.worker.asgi != nil && config.websockets
        core = H2Connection(limits: limits)
    }

    /// The preface is in the input (h2c) or ALPN chose h2: our SETTINGS go
    /// out and whatever the client already sent is processed.
    func start() {
        worker.disarm(connection)
        pump()
        afterIO()
    }

    // MARK: - Input

    func onReadable() {
        guard readSome() else { afterIO(); return }
        pump()
        afterIO()
    }

    /// One read into the connection's input; false if nothing came (or the
    /// connection is gone).
    private func readSome() -> Bool {
        let input = connection.input
        if input.hasStorage && input.writableCount == 0 {
            connection.input.compact()
            // A frame larger than the pool block: a bigger buffer (the core
            // bounds frames at SETTINGS_MAX_FRAME_SIZE, so this ends).
            if connection.input.writableCount == 0 { connection.growInput() }
        }
        switch connection.fill() {
        case .data:
            return true
        case .again:
            return false
        case .eof, .error:
            lost()
            return false
        }
    }

    /// Hands the core what is buffered and acts on its events.
    private func pump() {
        handlingInput = true
        defer { handlingInput = false }
        let now = worker.now  // one reading for what this read brought
        while !closed {
            let (event, used) = core.nextEvent(in: connection.input.readable, now: now)
            connection.input.readerIndex += used
            guard let event else { break }
            handle(event)
        }
        if !closed && connection.input.isEmpty { connection.releaseInput() }
    }

    private func handle(_ event: H2Event) {
        switch event {
        case .request(let id, let head, let endStream):
            worker.metrics.http2StreamOpened()
            open(id, head, endStream: endStream)
        case .data(let id, let bytes, let flowControlled, let end):
            guard let s = streams[id], !s.reset, !s.responseEnded || !s.bodyEnded else {
                core.consumed(streamID: id, flowControlled)
                if end { peerEnded(id) }
                return
            }
            // Padding counts against the window but never reaches the
            // application: its share goes back at once.
            if flowControlled > bytes.count { core.consumed(streamID: id, flowControlled - bytes.count) }
            if s.webSocket?.conversation != nil {
                s.webSocketData(bytes, end: end)
                return
            }
            if s.exchange.receiveBody(count: bytes.count) == .tooLarge {
                // Reads fail with 413 from now on; the bytes are dropped.
                core.consumed(streamID: id, bytes.count)
            } else if s.responseEnded {
                // The response is complete: the rest of the body is not wanted.
                core.consumed(streamID: id, bytes.count)
            } else {
                s.receive(bytes, end: end)
            }
            if end { s.bodyEnded = true }
            wakeReader(s)
            if end { checkDone(s) }
        case .trailers(let id, _):
            guard let s = streams[id] else { peerEnded(id); return }
            if s.webSocket?.conversation != nil {
                s.webSocketData(UnsafeRawBufferPointer(start: nil, count: 0), end: true)
                return
            }
            s.bodyEnded = true
            wakeReader(s)
            checkDone(s)
        case .streamReset(let id, let code):
            worker.metrics.http2Reset(code: code.rawValue)
            guard let s = streams[id] else { peerEnded(id); return }
            dropStream(s, disconnected: true)
        case .windowOpened:
            break  // flush() offers every waiting stream the new window
        case .goAway:
            goingAway = true
        case .connectionError(let code, let reason):
            Log.debug("HTTP/2 connection error from \(connection.peer.remoteAddress): \(code) \(reason)")
            goingAway = true
            for s in Array(streams.values) { dropStream(s, disconnected: true) }
            for s in waiting[waitingHead...] { s.reset = true }
            flush()
            finishConnection()
        }
    }

    /// An ASGI stream's application waits for body (see `bodyWaiters`).
    func waitForBody(_ s: H2Stream) {
        s.bodyWaitSince = worker.now
        bodyWaiters.append(s)
        // The timer is re-armed after this loop iteration (afterIO).
        if !handlingInput { scheduleFlush() }
    }

    private func wakeReader(_ s: H2Stream) {
        guard s.bodyWaitSince != nil else { return }
        s.bodyWaitSince = nil
        if let i = bodyWaiters.firstIndex(where: { $0 === s }) { bodyWaiters.remove(at: i) }
        s.delegate?.bodyReady()
    }

    /// A new request.
    private func open(_ id: UInt32, _ head: H2RequestHead, endStream: Bool) {
        let s = makeStream(id: id, head: head)
        s.bodyEnded = endStream
        // --max-connection-age: this stream is served, and its response
        // is followed by a GOAWAY (see checkDone).
        if !goAwayAfterResponse && connection.pastMaxAge { goAwayAfterResponse = true }
        guard s.prepareRequest(head, peer: connection.peer) else {
            // CONNECT without an extended protocol: nothing here serves it.
            streams[id] = s
            respondDirectly(s, status: 501)
            return
        }
        if let resolver = worker.forwardedResolver { s.request.resolveForwarded(resolver) }
        if head.protocolName.count > 0 {
            // An extended CONNECT (RFC 8441): a WebSocket, or a 501.
            streams[id] = s
            openWebSocket(s, protocolName: head.protocolName)
            return
        }
        if let status = s.exchange.refusal {
            worker.metrics.rejected(status: status)
            streams[id] = s
            respondDirectly(s, status: status)
            return
        }
        switch worker.admission.admit(path: s.request.bytes(s.request.path)) {
        case .health:
            streams[id] = s
            respondDirectly(s, status: worker.draining ? 503 : 200)
            return
        case .overLimit:
            streams[id] = s
            worker.metrics.rejected(status: 503)
            if worker.accessLog.enabled { worker.accessLog.recordRejected(status: 503, peer: connection.peer) }
            respondDirectly(s, status: 503, field: Admission.retryAfter)
            return
        case .application:
            s.counted = true
        }
        streams[id] = s
        if let ids = worker.requestIDs { s.request.requestID = ids.assign(s.request) }
        s.accessLine = worker.accessLog.requestLine(s.request)
        worker.requestsServed += 1
        meterBegin(s, .h2)
        if let asgi = worker.asgi {
            asgi.start(s.request, exchange: s)
        } else {
            waiting.append(s)
        }
    }

    /// A response the server makes itself (the application never sees the
    /// request), with at most one extra field.
    func respondDirectly(_ s: H2Stream, status: Int, field: ResponseField? = nil) {
        let reason = ReasonPhrase.reason(status)
        let body = UnsafeRawBufferPointer(start: reason.utf8Start, count: reason.utf8CodeUnitCount)
        var extra = field ?? ResponseField(name: body, value: body)
        withUnsafePointer(to: &extra) { p in
            let fields = UnsafeBufferPointer<ResponseField>(start: p, count: field == nil ? 0 : 1)
            s.encodeHead(ResponseHead(status: status, reason: body, fields: fields, contentLength: Int64(body.count), close: false),
                         endStream: false)
        }
        _ = s.frame(body, end: true)
        checkDone(s)
    }

    // MARK: - WSGI

    /// Runs queued WSGI requests one after another (never nested: a request
    /// that arrives while an application runs waits its turn).
    private func serveWaiting() {
        if let pool = worker.wsgiPool { servePooled(pool); return }
        guard !inApplication, let wsgi = worker.wsgi else { return }
        while waitingHead < waiting.count && !closed {
            let s = waiting[waitingHead]
            waitingHead += 1
            if s.reset { continue }
            inApplication = true
            worker.publishBusy()
            wsgi.serve(s.request, exchange: s, token: worker.nextRequestToken())
            worker.publishLoad()
            inApplication = false
            if !s.reset && !s.responseEnded { resetStream(s, code: .internalError) }
            checkDone(s)
            flush()
        }
        waiting.removeAll(keepingCapacity: true)
        waitingHead = 0
    }

    /// WSGI with a pool: each waiting stream to a free pool thread; when
    /// none is free the rest are held and the session waits for one.
    ///
    /// Held, not refused and not unread: RFC 9113 lets a server bound its
    /// concurrency only through SETTINGS_MAX_CONCURRENT_STREAMS (§5.1.2;
    /// streams past it are refused by the core with REFUSED_STREAM), and a
    /// held stream's body is bounded by the flow-control window we
    /// advertise (§5.2), so holding costs bounded memory. Stopping to read
    /// the connection instead would also stop the frames its running
    /// streams need (their DATA, WINDOW_UPDATE for their responses, PING,
    /// SETTINGS acknowledgements): a running stream waiting for body on the
    /// same connection would never get it.
    private func servePooled(_ pool: WSGIPool) {
        while waitingHead < waiting.count && !closed {
            let s = waiting[waitingHead]
            if s.reset { waitingHead += 1; continue }
            guard let thread = pool.takeThread() else {
                if !waitsForThread {
                    waitsForThread = true
                    pool.wait(connection.token)
                }
                if waitingHead >= 64 {
                    // Served entries go, so a connection that always has
                    // some waiting does not grow the list.
                    waiting.removeFirst(waitingHead)
                    waitingHead = 0
                }
                return
            }
            waitingHead += 1
            pool.serve(s.request, transport: s, thread: thread)
        }
        waiting.removeAll(keepingCapacity: true)
        waitingHead = 0
    }

    /// A pool thread is free for this session's oldest held stream.
    func poolThreadFree() {
        waitsForThread = false
        guard !closed else { return }
        afterIO()
    }

    /// WSGI: waits (GIL released) until the socket can take output or has
    /// input, and does that I/O. False when `milliseconds` pass first or the
    /// connection is gone.
    func waitForIO(milliseconds: Int) -> Bool {
        guard !closed else { return false }
        let wantWrite = core.output.readableCount > 0
        // Decrypted bytes OpenSSL holds are input the socket will not signal.
        if !connection.io.hasBufferedInput {
            let ready = worker.waitFor(connection.fd, readable: true, writable: wantWrite, milliseconds: milliseconds)
            guard ready else { return false }
        }
        if wantWrite && !flush() { return false }
        if readSome() { pump() }
        return !closed
    }

    // MARK: - Output

    /// Writes what the socket takes of the core's output, refilling it from
    /// streams with pending response bytes as it empties. False if the
    /// connection failed.
    @discardableResult
    func flush() -> Bool {
        guard !closed else { return false }
        while true {
            if !sendQueue.isEmpty && core.output.readableCount < H2Session.highWater { offerPending() }
            guard core.output.readableCount > 0 else { break }
            let out = core.output.readable
            let (written, failed) = connection.writeOut(out)
            if failed {
                lost()
                return false
            }
            core.output.readerIndex += written
            if core.output.isEmpty {
                core.output.readerIndex = 0
                core.output.writerIndex = 0
            }
            if written < out.count { break }  // the socket is full
        }
        notifyDrained()
        return !closed
    }

    /// Gives each stream with pending response bytes its turn at the
    /// windows and the output room.
    private func offerPending() {
        var i = 0
        while i < sendQueue.count && core.output.readableCount < H2Session.highWater {
            let s = sendQueue[i]
            if s.reset {
                sendQueue.remove(at: i)
                continue
            }
            if s.pushPending() { lastSendProgress = worker.now }
            if !s.hasPendingOutput && (s.responseEnded || !s.endAfterPending) {
                sendQueue.remove(at: i)
                checkDone(s)
                continue
            }
            i += 1
        }
    }

    func enqueueForSending(_ s: H2Stream) {
        if sendQueue.isEmpty { lastSendProgress = worker.now }
        if !sendQueue.contains(where: { $0 === s }) { sendQueue.append(s) }
    }

    /// A stream told its sender to wait (backpressure): it hears
    /// `outputDrained` once its own pending bytes and the output are low.
    func waitForDrain(_ s: H2Stream) {
        guard !s.drainWanted else { return }
        s.drainWanted = true
        drainWaiters.append(s)
    }

    private func notifyDrained() {
        guard !drainWaiters.isEmpty, core.output.readableCount < H2Session.lowWater else { return }
        let waiters = drainWaiters
        drainWaiters.removeAll(keepingCapacity: true)
        for s in waiters {
            guard s.drainWanted, !s.reset else { s.drainWanted = false; continue }
            guard s.pendingOutputBytes < H2Session.lowWater else { drainWaiters.append(s); continue }
            s.drainWanted = false
            s.delegate?.outputDrained()
            s.webSocket?.conversation?.outputDrained()
        }
    }

    // MARK: - Stream endings

    /// Ends the stream once its response is framed completely.
    func checkDone(_ s: H2Stream) {
        guard s.responseEnded, !s.hasPendingOutput, streams[s.id] === s else { return }
        if s.webSocket != nil {
            // The peer gets a moment to end its side too (RFC 8441 §5).
            if s.lingerForPeerEnd() { return }
            webSocketEnded(s)
        }
        streams[s.id] = nil
        endCounted(s)
        if goAwayAfterResponse && !goingAway {
            // After the response's last frames, which the flush that
            // follows every completed response writes out with it (a GOAWAY
            // before them would make strict clients drop the response).
            goingAway = true
            core.goAway(code: .noError)
        }
        // RFC 9113 §8.1: a complete response before the whole request may
        // be followed by RST_STREAM(NO_ERROR) so the client stops sending;
        // with the declared body whole, only END_STREAM is missing: wait for
        // it (H2Session+PeerEnd).
        if !s.bodyEnded {
            if let declared = s.exchange.declaredBodyLength, s.exchange.bodyReceived >= declared {
                awaitPeerEnd(s.id)
            } else {
                core.resetStream(streamID: s.id, code: .noError)
                worker.metrics.http2Reset(code: 0)  // NO_ERROR
            }
        }
        s.releaseBody()
        record(s)
        let d = s.delegate
        s.delegate = nil
        d?.exchangeEnded(disconnected: false)
        retire(s)
    }

    /// Resets a stream from our side (an application error, a file that
    /// shrank) and tells its application.
    func resetStream(_ s: H2Stream, code: HTTP2ErrorCode) {
        guard !s.reset else { return }
        core.resetStream(streamID: s.id, code: code)
        worker.metrics.http2Reset(code: code.rawValue)
        dropStream(s, disconnected: true)
    }

    /// The stream is gone (reset either way, or the connection failed).
    private func dropStream(_ s: H2Stream, disconnected: Bool) {
        s.reset = true
        if streams[s.id] === s { streams[s.id] = nil }
        endCounted(s)
        if s.webSocket != nil { webSocketEnded(s) }
        s.releaseBody()
        if let file = s.pendingFile {
            _ = csys_close(file.fd)
            s.pendingFile = nil
        }
        if s.exchange.headSent || s.accessLine != nil { record(s) }
        s.bodyWaitSince = nil
        let d = s.delegate
        s.delegate = nil
        d?.exchangeEnded(disconnected: disconnected)
        retire(s)
    }

    func record(_ s: H2Stream) {
        guard let line = s.accessLine else { return }
        s.accessLine = nil
        worker.accessLog.record(line, s.exchange, peer: connection.peer, now: worker.now)
    }

    // MARK: - Connection

    /// After reading or writing: serve queued WSGI requests, write, and
    /// decide on timers, interest, and whether the connection ends.
    func afterIO() {
        guard !closed else { return }
        serveWaiting()
        // A connection that became HTTP/2 after the worker began stopping
        // (its TLS handshake finished later) missed beginShutdown: it gets
        // its GOAWAY here. Ending it without one, right after our SETTINGS,
        // left the client with requests it could not know were unprocessed
        // (RFC 9113 §6.8: the GOAWAY's last stream ID is what says so).
        if worker.stopping && !goingAway && !core.isClosing {
            goingAway = true
            core.goAway(code: .noError)
        }
        guard flush() else { return }
        if core.isClosing { goingAway = true }
        if goingAway && streams.isEmpty && waitingHead >= waiting.count && !inApplication {
            finishConnection()
            return
        }
        let now = worker.now
        var timeout: Int?
        timerPurpose = nil
        if core.output.readableCount > 0 {
            timeout = worker.config.requestTimeoutMilliseconds
            timerPurpose = .writeStall
        } else if !sendQueue.isEmpty {
            let waited = now.milliseconds(since: lastSendProgress)
            timeout = max(worker.config.requestTimeoutMilliseconds - waited, 0)
            timerPurpose = .windowStall
        } else if streams.isEmpty {
            timeout = worker.config.keepAliveMilliseconds
            timerPurpose = .idle
        }
        // The WebSocket streams' own timers.
        if let deadline = earliestWebSocketDeadline() {
            let left = deadline > now ? deadline.milliseconds(since: now) : 0
            if timeout == nil || left < timeout! {
                timeout = left
                timerPurpose = .webSocket
            }
        }
        bodyWaiters.removeAll { $0.bodyWaitSince == nil || $0.reset }
        if let since = bodyWaiters.first?.bodyWaitSince {
            let left = max(worker.config.requestTimeoutMilliseconds - now.milliseconds(since: since), 0)
            if timeout == nil || left < timeout! {
                timeout = left
                timerPurpose = .bodyStall
            }
        }
        if let deadline = nextPeerEndDeadline {
            let left = deadline > now ? deadline.milliseconds(since: now) : 0
            if timeout == nil || left < timeout! {
                timeout = left
                timerPurpose = .peerEnd
            }
        }
        // The SETTINGS acknowledgement the core waits for (RFC 9113 §6.5.3).
        if let deadline = core.nextDeadline {
            let left = deadline > now ? deadline.milliseconds(since: now) : 0
            if timeout == nil || left < timeout! {
                timeout = left
                timerPurpose = .settingsAck
            }
        }
        if let timeout { worker.arm(connection, milliseconds: max(timeout, 1)) } else { worker.disarm(connection) }
        connection.updateInterest()
    }

    var wantsWrite: Bool { core.output.readableCount > 0 }

    /// ASGI `send()`: frames are written after the loop's current tasks, so
    /// responses of many streams leave in one write; past the high-water
    /// mark they are written at once.
    private var flushScheduled = false

    /// A flush for output a stream queued outside an ASGI `send()` (a
    /// WebSocket's pong, window it gives back): none needed while input or
    /// timers are being handled, since `afterIO` follows.
    func requestFlush() {
        if !handlingInput && !closed { scheduleFlush() }
    }

    func scheduleFlush() {
        if core.output.readableCount >= H2Session.highWater {
            // Written at once, and a write that finds the client gone closes
            // the connection, which releases this session. The caller (an
            // ASGI send(), a pool thread's doorbell, a WebSocket conversation)
            // reaches it through an unowned reference and may use it after
            // this returns: the deferred-flush list holds it until the loop's
            // round ends.
            if !flushScheduled {
                flushScheduled = true
                worker.flushAfterTasks(self)
            }
            afterIO()
            return
        }
        guard !flushScheduled else { return }
        flushScheduled = true
        worker.flushAfterTasks(self)
    }

    func deferredFlush() {
        flushScheduled = false
        guard !closed else { return }
        afterIO()
    }

    func onWritable() {
        guard flush() else { return }
        afterIO()
    }

    /// The connection's timer: output stalled, or idle past keep-alive.
    func onTimeout() {
        handlingInput = true
        defer { handlingInput = false }
        if let event = core.expireDeadlines(now: worker.now) {
            handle(event)
            if !closed { afterIO() }
            return
        }
        switch timerPurpose {
        case .writeStall? where core.output.readableCount > 0:
            lost()
        case .windowStall? where !sendQueue.isEmpty
            && worker.now.milliseconds(since: lastSendProgress) >= worker.config.requestTimeoutMilliseconds:
            // The peer has not opened its windows for the whole timeout: its
            // streams are given up (slow-read defence, RFC 9113 §10.5).
            for s in sendQueue { resetStream(s, code: .cancel) }
            sendQueue.removeAll()
            afterIO()
        case .bodyStall?:
            let limit = worker.config.requestTimeoutMilliseconds
            let now = worker.now
            for s in bodyWaiters {
                guard let since = s.bodyWaitSince, now.milliseconds(since: since) >= limit else { continue }
                s.exchange.failBody(status: 408)
                wakeReader(s)
            }
            if !closed { afterIO() }
        case .webSocket?:
            fireWebSocketTimers()
            if !closed { afterIO() }
        case .peerEnd?:
            expirePeerEndWaits()
            afterIO()
        case .idle? where streams.isEmpty && !inApplication:
            core.goAway(code: .noError)
            flush()
            finishConnection()
        default:
            afterIO()  // early for the SETTINGS deadline, or things changed: re-arm
        }
    }

    /// Stopping (SIGTERM) or draining (replaced): GOAWAY with the last
    /// stream we took; streams in flight finish.
    /// GOAWAY (RFC 9113 §6.8) without closing anything: the open streams
    /// and WebSockets finish, new streams go to another connection
    /// (--drain-delay, --max-connection-age).
    func goAway() {
        guard !closed, !goingAway else { return }
        goingAway = true
        core.goAway(code: .noError)
        afterIO()
    }

    /// A connection that comes while draining (--drain-delay): its first
    /// request is served, and a GOAWAY follows its response. (A GOAWAY
    /// before any stream would refuse them all: its last stream ID is 0.)
    func goAwayAfterFirstResponse() {
        goAwayAfterResponse = true
    }

    /// The stream counted for --limit-concurrency ended.
    private func endCounted(_ s: H2Stream) {
        meterEnd(s)
        guard s.counted else { return }
        s.counted = false
        worker.admission.ended()
    }

    func beginShutdown() {
        guard !closed else { return }
        // WebSockets close with 1001 (going away), as over HTTP/1.1.
        for s in webSockets { s.webSocket?.conversation?.closeGoingAway() }
        guard !goingAway else { afterIO(); return }
        goingAway = true
        core.goAway(code: .noError)
        afterIO()
    }

    /// Closes once our last frames (a GOAWAY) are written; what the client
    /// still sends is drained briefly so it reads them (see lingering).
    private func finishConnection() {
        guard !closed else { return }
        closed = true
        let flushed = core.output.readableCount == 0
        for s in Array(streams.values) { dropStream(s, disconnected: true) }
        if flushed { connection.lingerAfterHTTP2() } else { connection.close() }
    }

    /// The socket failed or the peer closed it.
    private func lost() {
        guard !closed else { return }
        closed = true
        connection.aborted = true
        connection.close()
    }

    /// The connection is closing under us: every stream's application
    /// learns it is disconnected.
    func teardown() {
        closed = true
        for s in Array(streams.values) { dropStream(s, disconnected: true) }
        for s in waiting[waitingHead...] { s.reset = true }
        for s in sendQueue { s.reset = true }
        sendQueue.removeAll()
    }
}
