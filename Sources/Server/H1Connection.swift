import CSys
import Core
import Gateway
import HTTP1
import TLS

/// One TCP connection (plain or TLS; the worker's `WorkerConnection` of that
/// kind) and the HTTP/1.1 it speaks until it switches to HTTP/2 or
/// WebSocket: reads and parses request heads, hands each request to the
/// gateway, writes the response, and keeps or closes the connection. What
/// to write and whether the connection lives on are decided in HTTP1
/// (`H1ResponseFraming`, `H1ConnectionReuse`); this class acts on the
/// answers.
///
/// Phases:
///
///     head ──complete──▶ WSGI: application runs inline ─────────┐
///       │          ├───▶ ASGI: request (application is a task) ─┤
///       │          └───▶ WSGI pool: [queued ─▶] request ─────────┤
///       │                                                       ├─▶ head (keep-alive)
///       │                                                       ├─▶ discarding ─▶ head
///       │                                                       └─▶ closed
///       └──bad request──▶ lingering ──quiet/EOF──▶ closed
///
/// `head`: waiting for or parsing a request head. The timer is the
/// keep-alive idle timeout until the first byte of a request arrives, then
/// the request timeout counted from that byte (a slow sender gets 408).
/// `request`: an ASGI application is answering; the socket is read only when
/// the application asks for body (so the kernel's window, not our memory,
/// holds a fast uploader back), and the next pipelined request waits.
/// `queued` (--wsgi-threads): the head is complete but every pool thread
/// is busy; it stays unconsumed in the input, the socket is not read, and
/// the head is parsed again when a thread is free (the worker's header
/// table has served other heads meanwhile). A pooled request then runs in
/// the `request` phase exactly as an ASGI one does.
/// `discarding`: the application answered without reading the whole body;
/// the rest is read and dropped (bounded) so the connection can be reused.
/// `lingering`: an error response was sent and our side shut down; what the
/// client still sends is drained briefly so closing does not reset the
/// connection before the client reads the response (RFC 9112 §9.6).
///
/// The class is split by concern: this file (events and request dispatch),
/// +Input (reading and body decoding), +Output (framing, writing, closing),
/// +ExchangeTransport (what the exchange of its current request asks of
/// it; `Exchange` and `AsyncExchange` come from Exchanges), +TLS, +HTTP2,
/// +WebSocket (the hand-offs).
///
/// Stored state: the byte stream's (descriptor, interest, input, peer,
/// phase, failure flags, `PendingOutput`), the HTTP/1.1 request's
/// (`H1Request`, its `HTTPExchange`, and for ASGI `H1AsyncRequest`); every
/// other protocol's is a type of its own held here (`ConnectionTLS`,
/// `H2HandOff`, `H1WebSocket`, `LingeringClose`).
final class H1Connection: WorkerConnection {
    enum Phase { case proxyHeader, head, queued, request, websocket, http2, discarding, lingering, closed }

    // The worker owns every connection and outlives it.
    unowned(unsafe) let worker: Worker
    /// Its slab entry and the entry's generation while open (see
    /// WorkerConnection); the object is reused by a later accept.
    private(set) var index = 0
    private(set) var generation: UInt32 = 0
    var fd: Int32 = -1
    var phase: Phase = .closed
    var peer: PeerInfo!
    var interest: IOEvents = []
    var input = ByteBuffer()
    var inputPooled = false
    /// Held while a request arrives or is served, and after it until the
    /// worker's idle pass (nil when idle past it; see +RequestState).
    var parsing: H1RequestParsing?
    /// The per-request state (request, exchange, output, ASGI and pool
    /// thread), taken at a request's first byte and kept while the
    /// connection is busy; the worker's once-a-second pass takes it back
    /// from a connection it finds idle: see H1RequestState and
    /// H1Connection+RequestState.
    var requestState: H1RequestState?
    /// On the worker's list of connections that went idle holding their
    /// parsing or request state (`Worker.wentIdle`), until its next pass.
    var idleListed = false
    /// It has gone idle after a request before: a client that came back
    /// (see `becomeIdle`).
    var cameBack = false
    /// A request's first byte has arrived (the timer is the request
    /// timeout, not the keep-alive one).
    var bytesSeen = false
    /// ASGI: bytes nobody asked for arrived while a request is served, so
    /// reading is paused (see updateInterest).
    var readPaused = false
    /// ASGI: the response's last bytes wait in the worker's CoalescedOutput
    /// (not in this connection's output) until the loop round ends.
    var outputHeld = false
    var aborted = false
    var writeFailed = false

    // What this TCP connection carries besides HTTP/1.1, each in a type of
    // its own.
    /// WebSocket (ASGI) after a valid opening handshake; see +WebSocket.
    var webSocket: H1WebSocket?
    /// HTTP/2 after the client preface or ALPN h2; see +HTTP2.
    var h2HandOff = H2HandOff.prefaceMayCome
    var h2: H2Session? { h2HandOff.session }
    /// Set while lingering; see +Output.
    var lingering: LingeringClose?
    /// nil on a plain connection; see +TLS.
    var tls: ConnectionTLS?
    /// --max-connection-age: past this the next response closes (nil: never).
    var ageDeadline: Instant?

    init(worker: Worker) {
        self.worker = worker
    }

    func open(fd: Int32, peer: PeerInfo, tls session: TLSSession?, index: Int, generation: UInt32) {
        self.fd = fd
        self.peer = peer
        tls = session.map(ConnectionTLS.init)
        self.index = index
        self.generation = generation
        phase = .head
        // What updateInterest wants in the head phase (the handshake sets its own).
        interest = tls == nil ? .readableOrPeerClosed : .readable
        readPaused = false
        bytesSeen = false
        outputHeld = false
        aborted = false
        writeFailed = false
        idleListed = false  // a token on the list from before the close is stale
        cameBack = false
        h2HandOff = .prefaceMayCome
        ageDeadline = worker.admission.connectionDeadline(now: worker.now)
        worker.metrics.connectionOpened(.tcp)
        if let allowed = worker.proxyPeers, allowed.contains(peer.address) {
            beginProxyHeader()  // TLS or HTTP start after it (+ProxyHeader)
            return
        }
        startConnection()
    }

    /// The byte stream begins: TLS, or HTTP at once.
    func startConnection() {
        phase = .head
        if tls != nil {
            beginHandshake()  // HTTP starts after it (+TLS)
            return
        }
        worker.arm(self, milliseconds: worker.config.requestTimeoutMilliseconds)
        updateInterest()
    }

    // MARK: - Events

    /// The events, then a check for decrypted input the poller will not
    /// report (+TLS).
    func onEvents(_ events: IOEvents) {
        dispatch(events)
        deferReadIfBuffered()
    }

    func dispatch(_ events: IOEvents) {
        if phase == .proxyHeader { readProxyHeader(); return }
        if tls?.handshaking == true { continueHandshake(); return }
        if phase == .http2, let h2 {
            if events.contains(.writable) { h2.onWritable() }
            if phase == .http2 && !events.intersection(.anyInput).isEmpty { h2.onReadable() }
            return
        }
        if events.contains(.writable) {
            onWritable()
            if phase == .closed { return }
        }
        if events.contains(.readable) || events.contains(.error) || events.contains(.peerClosed) {
            onReadable(events)
        }
    }

    private func onReadable(_ events: IOEvents) {
        switch phase {
        case .closed:
            return
        case .proxyHeader:
            readProxyHeader()
        case .lingering:
            drainForLinger()
        case .queued:
            // Not reading while it waits for a thread; a client that is
            // gone leaves nobody to answer.
            if events.contains(.peerClosed) || events.contains(.error) { clientGone() }
        case .request:
            if perRequest.asyncRequest.bodyWanted {
                readForBody()
            } else if events.contains(.peerClosed) || events.contains(.error) {
                // Not reading, but the peer is gone: nobody to answer.
                clientGone()
            } else {
                // Bytes the application has not asked for (body, or the
                // next pipelined request): stop watching until it does.
                readPaused = true
                updateInterest()
            }
        case .websocket:
            webSocketReadable(events)
        case .http2:
            h2?.onReadable()
        case .head, .discarding:
            switch fill() {
            case .data:
                process()
            case .again:
                return
            case .eof, .error:
                close()
            }
        }
    }

    func onTimeout() {
        switch phase {
        case .head where bytesSeen || input.readableCount > 0:
            // RFC 9110 §15.5.9: the head did not arrive in time.
            sendErrorAndLinger(408)
        case .request where perRequest.asyncRequest.bodyWanted:
            perRequest.asyncRequest.bodyWanted = false
            perRequest.exchange.failBody(status: 408)
            updateInterest()
            perRequest.asyncRequest.delegate?.bodyReady()
        case .websocket:
            webSocketTimeout()
        case .http2:
            h2?.onTimeout()
        case .request:
            // Output has not drained within the write-stall timeout.
            clientGone()
        case .lingering:
            // The timer runs from the last bytes drained: the client has
            // been quiet for the linger period (or the linger deadline came).
            close()
        default:
            close()
        }
    }

    func beginStopping(closeIdle: Bool) {
        switch phase {
        case .websocket: closeWebSocketGoingAway()
        case .http2: h2?.beginShutdown()
        case .lingering: close()
        case .head where closeIdle: close()
        case .proxyHeader where closeIdle: close()
        default: break
        }
    }

    func announceGoingAway() {
        if phase == .http2 { h2?.goAway() }
    }

    func cut() {
        aborted = true
        close()
    }

    /// Parses and serves as many buffered requests as are complete
    /// (pipelining: responses go out strictly in request order, since each
    /// is finished before the next head is looked at).
    func process() {
        let w = worker  // one retain for the call, not one per use
        while phase == .head || phase == .discarding {
            if phase == .discarding {
                guard discardBody() else { return }
                continue
            }
            if input.isEmpty { becomeIdle(); return }
            if case .prefaceMayCome = h2HandOff, phase == .head, w.config.http2, detectHTTP2Preface() { return }
            if !bytesSeen {
                bytesSeen = true
                perRequest.request.start = w.now
                w.arm(self, milliseconds: w.config.requestTimeoutMilliseconds)
            }
            if parsing == nil { parsing = w.takeParsing() }
            if requestState == nil { requestState = w.takeRequestState() }
            switch parsing!.head.parse(input.readable, headers: w.headerTable) {
            case .incomplete:
                if input.writableCount == 0 && input.readerIndex == 0 {
                    // The head fills the buffer: move to a larger one (the
                    // parser answers 431 before it can outgrow that).
                    growInput()
                }
                return
            case .failed(let error):
                if refusesUnlistedProxyHeader() { return }
                Log.debug("bad perRequest.request from \(peer.remoteAddress): \(error.status) \(error.reason)")
                sendErrorAndLinger(Int(error.status))
                return
            case .complete(let head):
                if let pool = w.wsgiPool {
                    guard let thread = pool.takeThread() else { waitForPoolThread(); return }
                    perRequest.poolThread = thread
                    serve(head)
                    // Refused before reaching the application: the thread
                    // goes back.
                    if let unused = perRequest.poolThread {
                        perRequest.poolThread = nil
                        pool.giveBack(unused)
                    }
                } else {
                    serve(head)
                }
            }
        }
    }

    private func serve(_ head: H1RequestHead) {
        let w = worker  // one retain for the call, not one per use
        h2HandOff = .http1
        if w.config.http2Only {
            // A backstop: under --http2-only every connection's first bytes
            // go to HTTP/2 (detectHTTP2Preface), so no HTTP/1.1 request
            // should get here; if one does, it is refused (RFC 9110 §15.6.6).
            sendErrorAndLinger(505)
            return
        }
        w.disarm(self)
        let base = UnsafeRawPointer(input.readable.baseAddress!)
        input.readerIndex += head.headLength
        guard beginRequest(head) else { return }
        // One reference for the call, not a retain per use: the state is
        // the connection's until an idle pass, which cannot come meanwhile.
        let rs = perRequest
        let path = UnsafeRawBufferPointer(start: base + head.path.start, count: head.path.count)
        switch w.admission.admit(path: path, counted: !(head.upgrade && w.asgi != nil)) {
        case .health:
            respondItself(status: w.draining ? 503 : 200)
            afterResponse()
            return
        case .overLimit:
            respondItself(status: 503, field: Admission.retryAfter)
            w.metrics.rejected(status: 503)
            if w.accessLog.enabled { w.accessLog.recordRejected(status: 503, peer: peer) }
            afterResponse()
            return
        case .application:
            rs.request.counted = !(head.upgrade && w.asgi != nil)
        }
        let table = w.headerTable
        let spans = w.fieldSpans
        for i in 0..<table.count {
            spans[i] = FieldSpans(name: table.name(i), value: table.value(i))
        }
        var gatewayRequest = GatewayRequest(
            base: base, method: head.methodSpan, target: head.target, path: head.path, query: head.query,
            httpVersion: rs.request.version == .http10 ? "HTTP/1.0" : "HTTP/1.1", isHead: rs.exchange.isHead,
            fieldCount: table.count, fields: UnsafePointer(spans), peer: peer)
        if let resolver = w.forwardedResolver { gatewayRequest.resolveForwarded(resolver) }
        if let ids = w.requestIDs {
            gatewayRequest.requestID = ids.assign(gatewayRequest)
            rs.request.requestID = gatewayRequest.requestID
        }
        rs.request.accessLine = w.accessLog.requestLine(gatewayRequest)
        w.requestsServed += 1
        if head.upgrade, w.asgi != nil, let verdict = webSocketVerdict(head) {
            meterBegin(.websocket)
            if w.config.websockets {
                startWebSocket(verdict, request: gatewayRequest)
            } else {
                sendErrorAndLinger(501)
            }
            return
        }
        meterBegin(.http11)
        if let asgi = w.asgi {
            phase = .request
            rs.asyncRequest.bodyWanted = false
            updateInterest()
            asgi.start(gatewayRequest, exchange: self)
        } else if let thread = rs.poolThread {
            // Served like an ASGI request, by a pool thread (see WSGIPool).
            rs.poolThread = nil
            phase = .request
            rs.asyncRequest.bodyWanted = false
            updateInterest()
            w.wsgiPool!.serve(gatewayRequest, transport: self, thread: thread)
        } else {
            // While the application runs inline this worker cannot accept:
            // siblings must not leave connections to it meanwhile.
            w.publishBusy()
            w.wsgi!.serve(gatewayRequest, exchange: self, token: w.nextRequestToken())
            w.publishLoad()
            afterResponse()
        }
    }

    /// Every WSGI pool thread is busy: the complete head waits in the input
    /// (see `queued`) until the pool offers a thread (`poolThreadFree`).
    private func waitForPoolThread() {
        phase = .queued
        worker.disarm(self)
        updateInterest()
        worker.wsgiPool?.wait(token)
    }

    func poolThreadFree() {
        switch phase {
        case .queued:
            phase = .head
            parsing?.head.reset()
            updateInterest()
            process()
        case .http2:
            h2?.poolThreadFree()
        default:
            break  // closed meanwhile: the thread goes to the next waiter
        }
    }

    /// Sets up body and response state for a parsed head; false if the
    /// request was refused (413, bad chunked framing) without reaching the
    /// application.
    private func beginRequest(_ head: H1RequestHead) -> Bool {
        let rs = perRequest  // one reference for the call, not a retain per use
        rs.request.version = head.version
        rs.request.body = H1RequestBody(framing: head.framing)
        var declared: Int64?
        if case .contentLength(let n) = head.framing { declared = n }
        rs.exchange = HTTPExchange(isHead: head.method == .head, declaredBodyLength: declared,
                                maxBody: worker.config.maxBody, start: rs.request.start,
                                expectsContinue: head.expectContinue, minBodyRate: worker.config.minBodyRate)
        switch head.framing {
        case .none:
            break
        case .contentLength:
            if let status = rs.exchange.refusal {
                // Decided from the declared length, before reading any of it.
                sendErrorAndLinger(status)
                return false
            }
        case .chunked:
            parsing!.chunked = H1ChunkedDecoder(limits: worker.limits)
            // Bad framing in the part of the body already here is refused
            // before the application runs, like a bad head.
            if let error = prevalidateChunkedBody() {
                sendErrorAndLinger(Int(error.status))
                return false
            }
        }
        aborted = false
        rs.request.framing = nil
        rs.request.keepAlive = head.keepAlive
        return true
    }

    /// The response is complete (and, for ASGI, flushed): log it, then keep
    /// the connection for the next request or close it.
    func afterResponse() {
        endCounted()
        if let line = perRequest.request.accessLine {
            worker.accessLog.record(line, perRequest.exchange, peer: peer, now: worker.now)
            perRequest.request.accessLine = nil
        }
        perRequest.request.requestID = nil
        bytesSeen = false
        parsing?.head.reset()
        if aborted || writeFailed || !perRequest.exchange.headSent {
            close()
            return
        }
        switch H1ConnectionReuse(keepAlive: requestKeepAlive, hardStopping: worker.hardStopping,
                                 requestBodyComplete: perRequest.request.body.complete, continuePending: perRequest.exchange.continuePending) {
        case .close:
            close()
        case .lingerThenClose:
            lingerAfterResponse()
        case .readNextRequest:
            phase = .head
            updateInterest()
        case .discardBodyThenReadNext:
            phase = .head
            updateInterest()
            perRequest.request.body.discardBudget = 1 << 20
            phase = .discarding
            worker.arm(self, milliseconds: worker.config.requestTimeoutMilliseconds)
        }
    }

    /// No request in progress and nothing buffered: give the buffer back and
    /// wait (keep-alive timeout). After its first request a connection gives
    /// the parsing and request state back at once: many clients ask once and
    /// idle (a pool's spare connections, memory.py's), and states freed
    /// later, after other connections' objects were allocated beside them,
    /// leave holes the process's RSS keeps (1,000 such connections: 1,020
    /// bytes each instead of 246). A client that came back for another
    /// request keeps them until the worker's next pass (if busy again by
    /// then, it keeps them on: no take and give per request).
    private func becomeIdle() {
        releaseInput()
        if cameBack {
            if !idleListed { keepRequestMemoryUntilPass() }
        } else if parsing != nil {  // a request was parsed (a reused object's old state is no sign)
            cameBack = true
            releaseParsing()
            releaseRequestState()
        }
        worker.arm(self, milliseconds: worker.config.keepAliveMilliseconds)
    }

    /// Registers the events this connection needs now.
    func updateInterest() {
        var want: IOEvents
        switch phase {
        case .request:
            // Reading stays armed from the head phase (no epoll_ctl per
            // request) until bytes arrive that nobody asked for.
            want = .peerClosed
            if perRequest.asyncRequest.bodyWanted || !readPaused { want.insert(.readable) }
            if hasPendingOutput { want.insert(.writable) }
        case .queued:
            want = .peerClosed
            if hasPendingOutput { want.insert(.writable) }
        case .websocket:
            want = .peerClosed
            if webSocket?.conversation.wantsInput == true { want.insert(.readable) }
            if hasPendingOutput { want.insert(.writable) }
        case .http2:
            want = .readable
            if h2?.wantsWrite == true { want.insert(.writable) }
        case .proxyHeader, .head, .discarding, .lingering:
            // peerClosed too, so that starting a request changes nothing.
            want = .readableOrPeerClosed
            readPaused = false
            if hasPendingOutput { want.insert(.writable) }
        case .closed:
            return
        }
        if want != interest {
            interest = want
            worker.setInterest(self, fd: fd, want)
        }
        if tls != nil { deferReadIfBuffered() }
    }
}
