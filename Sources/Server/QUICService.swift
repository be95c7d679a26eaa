import CSys
import Core
import Gateway
import HTTP3
import Options
import QUIC
import TLS

/// HTTP/3 in one worker: the sans-I/O `QUICEndpoint` behind the worker's UDP
/// socket, and an `H3Connection` for each QUIC connection that completed
/// its handshake.
///
/// Input: the socket's readiness brings a batch of datagrams (`recvmmsg`,
/// DatagramEndpoint); each goes to the endpoint, which finds its connection
/// by connection ID and decrypts it in place. The endpoint's events are then
/// handed to the connections, queued WSGI requests run, and what the
/// connections have to send leaves in batches (`sendmmsg`), each run of
/// consecutive datagrams to one peer as one message where the kernel has
/// UDP GSO (`DatagramBatch.usesSegmentation`; a device that refuses it
/// turns it off for good, and the batch goes out unsegmented). Receives
/// may be coalesced (UDP GRO, DatagramEndpoint) and are cut apart here.
///
/// Output: an application's response bytes go into QUIC stream buffers (the
/// one copy); the datagrams are built when this service flushes: after each
/// batch of input or timer, after an ASGI loop iteration's tasks
/// (`scheduleFlush`), and at once inside a blocking WSGI call. When the
/// socket takes less than a batch, the rest waits for writability.
///
/// Timers: the endpoint keeps every connection's deadline (ACK delay, loss
/// detection, idle, closing); the worker's loop wakes for the earliest
/// (`nextDeadline`) and calls `expire`.
///
/// WSGI runs inline, one request at a time for the whole worker, as for
/// HTTP/2 within a connection: requests that arrive while an application
/// runs (the socket is still read while a call waits for body or for flow
/// control) queue in arrival order and run after it, never nested. The
/// queue is bounded by the streams each connection may open.
final class QUICService: DatagramHandler {
    unowned(unsafe) let worker: Worker
    let endpoint: QUICEndpoint
    let socket: UDPSocket
    private var out: DatagramBatch
    /// Datagrams built per send: 64 of 1500 bytes, 96 KiB per worker. With
    /// UDP GSO a run of one connection's datagrams (up to 54 of 1200 bytes,
    /// the kernel's 64 KiB) leaves as one message.
    static let sendBatchCapacity = 64
    /// Entries of `out` the socket did not take (it was full).
    private var unsent: Range<Int> = 0..<0
    private var flushScheduled = false
    /// Events are being handed out: a flush follows, so none is scheduled.
    var handlingInput = false

    // WSGI.
    private var waiting: [H3Stream] = []
    private var waitingHead = 0
    private(set) var inApplication = false

    /// Open HTTP/3 connections (handshake complete, not yet closed).
    private(set) var connections: [ObjectIdentifier: H3Connection] = [:]
    let limits: H3Limits
    /// What every connection's `H3Session` shares (limits, SETTINGS, the
    /// 431 response).
    let sessionTemplate: H3SessionTemplate
    /// The field-section decoding list every connection of this service
    /// (this worker thread) shares.
    let headerScratch = H3HeaderScratch()

    /// `statelessSecret`: the secret all workers of this supervisor
    /// generation share; address-validation tokens and stateless reset
    /// tokens derive from it, so either minted by one worker is good on
    /// every other.
    init(worker: Worker, socket: UDPSocket, tls: QUICTLSContext, statelessSecret: [UInt8], configuration: QUICConfiguration,
         limits: H3Limits) {
        self.worker = worker
        self.socket = socket
        self.limits = limits
        sessionTemplate = H3SessionTemplate(limits: limits)
        out = DatagramBatch(capacity: QUICService.sendBatchCapacity, slotSize: max(1500, configuration.maxUDPPayloadSize))!
        out.usesSegmentation = socket.supportsSegmentation
        endpoint = QUICEndpoint(configuration: configuration,
                                connectionIDs: ServerConnectionIDs(socketIndex: socket.index, secret: statelessSecret),
                                tokenSecret: statelessSecret, makeHandshake: { parameters in tls.makeSession(transportParameters: parameters) })
        if let directory = worker.config.quicLogDirectory { endpoint.makeQLogTrace = QLogFiles.factory(directory: directory) }
    }

    /// The QUIC settings the options ask for.
    static func configuration(_ config: Config, webTransport: Bool = false) -> QUICConfiguration {
        var c = QUICConfiguration()
        if webTransport {
            // RFC 9297 §2.1 / RFC 9221 §3: HTTP Datagrams need DATAGRAM
            // frames; WebTransport's unidirectional streams come beside
            // HTTP/3's three (control, QPACK encoder and decoder).
            c.maxDatagramFrameSize = 65535
            c.initialMaxStreamsUni = 3 + 100
            // Server-opened bidirectional streams (webtransport.stream.open).
            c.initialMaxStreamDataBidiLocal = UInt64(config.quicStreamWindow)
            // The current draft §3.1 requires reset_stream_at of both sides
            // (draft-ietf-quic-reliable-stream-reset): our resets keep our
            // streams' headers (H3Connection+WebTransport.swift).
            c.reliableStreamReset = true
        }
        c.maxIdleTimeout = Int64(config.quicIdleTimeoutMilliseconds) * 1_000_000
        c.initialMaxStreamsBidi = UInt64(config.http3MaxStreams)
        c.initialMaxStreamDataBidiRemote = UInt64(config.quicStreamWindow)
        c.initialMaxData = UInt64(config.quicConnectionWindow)
        c.congestionControl = config.quicCongestion
        c.keyUpdateInterval = UInt64(config.quicKeyUpdateInterval)
        c.alwaysRetry = config.quicRetry
        c.retryThreshold = config.quicRetryThreshold
        c.allowsActiveMigration = !config.quicNoMigration
        c.maxConnections = config.maxConnections
        c.maxUDPPayloadSize = config.quicMaxDatagramSize
        return c
    }

    // MARK: - Input

    func datagramsReceived(_ batch: borrowing DatagramBatch, count: Int, on socket: UDPSocket, now: Instant) {
        for i in 0..<count where !batch.isTruncated(i) {
            let path = batch.path(i)
            let ecn = batch.ecn(i)  // with UDP GRO, of every datagram coalesced in the entry
            for datagram in batch.datagrams(i) {
                worker.metrics.received(.quic, bytes: datagram.count)
                endpoint.receive(UnsafeMutableRawBufferPointer(mutating: datagram), path: path, ecn: ecn, now: now)
            }
        }
        armIdleRelease(now: now)
        afterInput()
    }

    /// The earliest QUIC, body-wait or shutdown deadline, for the worker's
    /// loop.
    var nextDeadline: Instant? {
        var earliest = endpoint.nextDeadline
        for d in [bodyDeadline, shutdownDeadline, webSocketDeadline, idleReleaseDeadline] {
            if let d { earliest = earliest.map { min($0, d) } ?? d }
        }
        return earliest
    }

    /// The loop woke at or after `nextDeadline`.
    func expireIfDue(now: Instant) {
        if let release = idleReleaseDeadline, release <= now { releaseIdleMemory(now: now) }
        if let body = bodyDeadline, body <= now { expireBodyWaits(now: now) }
        if let ws = webSocketDeadline, ws <= now { fireWebSocketTimers(now: now) }
        if let deadline = endpoint.nextDeadline, deadline <= now {
            endpoint.expire(now: now)
            armIdleRelease(now: now)
            afterInput()
        } else if let deadline = shutdownDeadline, deadline <= now {
            advanceShutdowns()
            flush()
        }
    }

    // MARK: idle memory (issue 15: an idle connection in a few KiB)

    /// How long a connection stays quiet before its buffers' spare capacity
    /// goes back (QUICConnection+IdleMemory.swift): longer than a request's
    /// round trips, so a busy connection keeps its buffers grown.
    static let idleReleaseQuiet: Int64 = 2_000_000_000
    /// Handshakes completed and connections given back their spare memory
    /// since the heap was last trimmed: the trim runs once this many are
    /// counted and no handshake is under way (a burst is over).
    static let heapTrimAfter = 32
    /// When to look for quiet connections; nil: nothing happened since the
    /// last look.
    private var idleReleaseDeadline: Instant?
    private var freedSinceHeapTrim = 0

    /// Something happened at `now`: connections may be quiet from
    /// `idleReleaseQuiet` later.
    private func armIdleRelease(now: Instant) {
        if idleReleaseDeadline == nil {
            idleReleaseDeadline = Instant(nanoseconds: now.nanoseconds + Self.idleReleaseQuiet)
        }
    }

    /// Gives back the spare capacity of connections quiet long enough (QUIC's
    /// buffers and this glue's), and, once a burst of handshakes is over or
    /// many connections have gone quiet, the pages of glibc's heap that what
    /// they freed leaves empty (`malloc_trim`: glibc keeps them otherwise).
    /// What connections keep is not there (AllocationZone: the connection
    /// zone of CTLS's handshake heap), so those pages are whole; nor is what
    /// OpenSSL's handshakes allocate, whose chunks go back as they empty
    /// (TRANSPORT.md, "What an idle HTTP/3 connection holds").
    private func releaseIdleMemory(now: Instant) {
        idleReleaseDeadline = endpoint.releaseIdleMemory(now: now, quietFor: Self.idleReleaseQuiet) { quic in
            freedSinceHeapTrim += 1
            if let context = quic.applicationContext { unsafeDowncast(context, to: H3Connection.self).releaseIdleMemory() }
        }
        if freedSinceHeapTrim >= Self.heapTrimAfter && endpoint.halfOpenConnectionCount == 0 {
            freedSinceHeapTrim = 0
            _ = QUICHandshakeSession.trimHeap()
        }
    }

    /// The endpoint's path event counts already added to the worker's
    /// metrics, by QUICPathEvent.
    private var reportedPathEvents = [Int](repeating: 0, count: QUICPathEvent.count)

    /// Moves the endpoint's new ECN and path MTU events into the worker's metrics.
    private func reportPathEvents() {
        report(.ecnCongestion, endpoint.ecnCongestionSignals)
        report(.ecnValidationFailed, endpoint.ecnValidationFailures)
        report(.pmtuRaised, endpoint.pmtuRaises)
        report(.pmtuBlackHole, endpoint.pmtuBlackHoles)
    }

    private func report(_ event: QUICPathEvent, _ total: Int) {
        let i = event.rawValue
        guard total > reportedPathEvents[i] else { return }
        worker.metrics.quicPathEvents(event, count: total - reportedPathEvents[i])
        reportedPathEvents[i] = total
    }

    /// Hands out the endpoint's events and sends what is ready. Queued WSGI
    /// requests run later, from the worker's loop (`serveWaiting`): never
    /// inside the receive, whose batch a call's own waits receive into.
    private func afterInput() {
        reportPathEvents()
        handlingInput = true
        dispatchEvents()
        offerPending()
        advanceShutdowns()
        handlingInput = false
        flush()
    }

    /// Connections with response bytes waiting for QUIC send room.
    private var offering: [H3Connection] = []

    func offerLater(_ h3: H3Connection) {
        offering.append(h3)
    }

    /// Acknowledgements may have freed send room: each waiting connection's
    /// streams take what they can.
    private func offerPending() {
        guard !offering.isEmpty else { return }
        let list = offering
        offering.removeAll(keepingCapacity: true)
        for h3 in list {
            if h3.offerPending() {
                offering.append(h3)
            } else {
                h3.offerQueued = false
            }
        }
    }

    private func dispatchEvents() {
        while let (quic, event) = endpoint.nextEvent() {
            if case .closed(let reason) = event {
                if let h3 = quic.applicationContext.map({ unsafeDowncast($0, to: H3Connection.self) }) {
                    worker.metrics.connectionClosed(.quic)
                    h3.quicClosed(reason)
                } else {
                    worker.metrics.tlsHandshake(.quic, .failed)  // closed before its handshake completed
                }
                quic.applicationContext = nil
                continue
            }
            guard let h3 = connection(for: quic) else { continue }
            switch event {
            case .handshakeCompleted: break
            case .streamOpened(let id): h3.peerOpened(id)
            case .streamReadable(let id): h3.readable(id)
            case .streamWritable(let id): h3.writable(id)
            case .streamReset(let id, let code): h3.peerReset(id, code: code)
            case .stopSending(let id, let code): h3.peerStopSending(id, code: code)
            case .peerAddressChanged: h3.peerAddressChanged()
            case .datagramReadable:
                // WebTransport's (H3Connection+WebTransport); dropped without it.
                h3.datagramsReadable()
            case .closed: break
            }
        }
    }

    /// The connection's HTTP/3 side, made when its handshake completes.
    private func connection(for quic: QUICConnection) -> H3Connection? {
        if let context = quic.applicationContext { return unsafeDowncast(context, to: H3Connection.self) }
        guard quic.isHandshakeComplete else { return nil }
        // Kept for the connection's life, with its QUIC state (AllocationZone).
        let zone = AllocationZone.connection.enter()
        let h3 = H3Connection(service: self, quic: quic)
        AllocationZone.restore(zone)
        quic.applicationContext = h3
        worker.metrics.connectionOpened(.quic)
        worker.metrics.tlsHandshake(.quic, quic.cryptoHandshake.isResumed ? .resumed : .full)
        connections[ObjectIdentifier(h3)] = h3
        freedSinceHeapTrim += 1
        h3.start()
        // A handshake that completes while the worker stops: GOAWAY at once,
        // or a client that sends nothing would hold the stop until its idle
        // timeout.
        if worker.stopping { h3.beginShutdown() }
        return h3
    }

    /// An HTTP/3 connection ended (it is gone from the endpoint, or about
    /// to be).
    func connectionEnded(_ h3: H3Connection) {
        connections[ObjectIdentifier(h3)] = nil
    }

    // MARK: - ASGI body waits

    /// ASGI streams whose application waits for body, oldest first: a client
    /// that stalls mid-body past --request-timeout gets 408 (as over
    /// HTTP/1.1 and HTTP/2) and the application sees the request end.
    private var bodyWaiters: [H3Stream] = []

    func waitForBody(_ s: H3Stream) {
        s.bodyWaitSince = worker.now
        bodyWaiters.append(s)
        worker.quicDeadlineChanged()
    }

    /// Body (or the end, or a failure) arrived for `s`: its application is
    /// told, once.
    func wakeReader(_ s: H3Stream) {
        guard s.bodyWaitSince != nil else { return }
        s.bodyWaitSince = nil
        if let i = bodyWaiters.firstIndex(where: { $0 === s }) { bodyWaiters.remove(at: i) }
        s.delegate?.bodyReady()
    }

    private var bodyDeadline: Instant? {
        bodyWaiters.first?.bodyWaitSince?.adding(milliseconds: worker.config.requestTimeoutMilliseconds)
    }

    private func expireBodyWaits(now: Instant) {
        let limit = worker.config.requestTimeoutMilliseconds
        while let s = bodyWaiters.first, let since = s.bodyWaitSince, now.milliseconds(since: since) >= limit {
            s.exchange.failBody(status: 408)
            wakeReader(s)
        }
        bodyWaiters.removeAll { $0.bodyWaitSince == nil }
    }

    // MARK: - WebSocket timers

    /// Streams carrying a WebSocket (RFC 9220), each with at most one
    /// deadline (H3WebSocket.deadline): keepalive, the wait for the peer's
    /// close, the wait for its FIN.
    private var webSockets: [H3Stream] = []

    func webSocketOpened(_ s: H3Stream) {
        webSockets.append(s)
    }

    func webSocketClosed(_ s: H3Stream) {
        if let i = webSockets.firstIndex(where: { $0 === s }) { webSockets.remove(at: i) }
    }

    private var webSocketDeadline: Instant? {
        var earliest: Instant?
        for s in webSockets {
            if let d = s.webSocket?.deadline, earliest == nil || d < earliest! { earliest = d }
        }
        return earliest
    }

    private func fireWebSocketTimers(now: Instant) {
        for s in webSockets {
            guard let deadline = s.webSocket?.deadline, deadline <= now else { continue }
            s.webSocket?.deadline = nil
            s.connection.webSocketTimerFired(s)
        }
        flush()
    }

    // MARK: - WSGI

    /// A WSGI request is ready for the application: it runs after the ones
    /// before it.
    func enqueue(_ s: H3Stream) {
        waiting.append(s)
    }

    /// Runs queued WSGI requests one after another (never nested), from the
    /// worker's loop after each round.
    func serveWaiting() {
        guard !inApplication, waitingHead < waiting.count else { return }
        if let pool = worker.wsgiPool {
            servePooled(pool)
            return
        }
        guard let wsgi = worker.wsgi else { return }
        while waitingHead < waiting.count {
            let s = waiting[waitingHead]
            waitingHead += 1
            if s.reset { continue }
            // The stream's connection reference is unowned: the connection
            // may end (its QUIC connection closed, and `connections` let go
            // of it) while the application runs, so hold it until it returns.
            let owner = s.connection
            inApplication = true
            worker.publishBusy()
            wsgi.serve(s.request, exchange: s, token: worker.nextRequestToken())
            worker.publishLoad()
            inApplication = false
            owner.applicationReturned(s)
            flush()
        }
        waiting.removeAll(keepingCapacity: true)
        waitingHead = 0
    }

    /// With --wsgi-threads: each waiting stream to a free pool thread; the
    /// rest wait until one is free (`poolThreadFree`).
    private func servePooled(_ pool: WSGIPool) {
        while waitingHead < waiting.count {
            let s = waiting[waitingHead]
            if s.reset { waitingHead += 1; continue }
            guard let thread = pool.takeThread() else {
                if !waitsForThread {
                    waitsForThread = true
                    pool.wait(Worker.quicPoolToken)
                }
                if waitingHead >= 64 {
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

    private var waitsForThread = false

    /// A pool thread is free for the oldest held request (`WSGIPool.wait`).
    func poolThreadFree() {
        waitsForThread = false
        serveWaiting()
        flush()
    }

    /// WSGI, inside a call: waits (GIL released) up to `milliseconds` for
    /// datagrams or the next QUIC deadline, and handles them (which may
    /// deliver body, open flow control, or queue other requests). False when
    /// nothing happened in the time.
    func waitForIO(milliseconds: Int) -> Bool {
        flush()
        let now = worker.now
        var wait = milliseconds
        if let deadline = endpoint.nextDeadline {
            wait = min(wait, deadline > now ? max(deadline.milliseconds(since: now), 1) : 0)
        }
        // A deadline already due still polls (without waiting): the ACKs
        // that free send room come in datagrams.
        let ready = worker.waitFor(socket.fd, readable: true, writable: !unsent.isEmpty, milliseconds: max(wait, 0))
        let t = worker.now
        if ready { worker.datagrams?.onEvents([.readable, .writable], now: t) }
        expireIfDue(now: t)
        flush()
        return ready
    }

    // MARK: - Output

    /// Output a stream queued from an ASGI task: sent after the loop
    /// iteration's tasks, so many streams' bytes share datagrams.
    func scheduleFlush() {
        guard !flushScheduled, !handlingInput else { return }
        flushScheduled = true
        worker.flushQUICAfterTasks()
    }

    func deferredFlush() {
        flushScheduled = false
        flush()
    }

    /// Builds and sends datagrams until the endpoint has none or the socket
    /// is full.
    func flush() {
        // Sending arms timers (loss detection, PTO): under ASGI the loop's
        // timer must follow, or a lost tail would wait for the idle timeout.
        defer { worker.quicDeadlineChanged() }
        guard unsent.isEmpty else { return }
        let now = worker.now
        while true {
            var n = 0
            while n < out.capacity, let (length, path) = endpoint.nextDatagram(into: out.slot(n), now: now) {
                out.setOutgoing(n, length: length, path: path, ecn: endpoint.lastDatagramECN,
                                alone: endpoint.lastDatagramIsPMTUProbe)
                worker.metrics.sent(.quic, bytes: length)
                n += 1
            }
            if n == 0 { return }
            guard send(0..<n), n == out.capacity else { return }
        }
    }

    /// Sends `range` of the batch; false if the socket took less (the rest
    /// waits for writability) or failed (the datagrams are lost, as a
    /// network may lose them: QUIC's recovery resends what mattered).
    private func send(_ range: Range<Int>) -> Bool {
        let segmented = out.usesSegmentation
        defer {
            if segmented && !out.usesSegmentation {
                Log.info("UDP socket \(socket.index): the kernel refused UDP GSO; sending without it")
            }
        }
        guard let sent = socket.send(&out, range) else {
            Log.error("UDP socket \(socket.index): \(SystemError(call: "sendmmsg", errno: csys_errno()))")
            return false
        }
        if sent < range.count {
            unsent = (range.lowerBound + sent)..<range.upperBound
            worker.datagramsWantWritable(true)
            return false
        }
        return true
    }

    func datagramSocketWritable(_ socket: UDPSocket, now: Instant) {
        if !unsent.isEmpty {
            let rest = unsent
            unsent = 0..<0
            guard send(rest) else { return }
        }
        worker.datagramsWantWritable(false)
        flush()
    }

    // MARK: - Stopping

    /// Connections in a graceful shutdown (H3Connection+Shutdown), moved on
    /// after each input and at their deadlines.
    private var shuttingDown: [H3Connection] = []

    func watchShutdown(_ h3: H3Connection) {
        if !h3.shutdownWatched {
            h3.shutdownWatched = true
            shuttingDown.append(h3)
        }
        worker.quicDeadlineChanged()
    }

    private func advanceShutdowns() {
        guard !shuttingDown.isEmpty else { return }
        let now = worker.now
        let list = shuttingDown
        shuttingDown.removeAll(keepingCapacity: true)
        for h3 in list {
            if h3.advanceShutdown(now: now) { shuttingDown.append(h3) } else { h3.shutdownWatched = false }
        }
    }

    private var shutdownDeadline: Instant? {
        var earliest: Instant?
        for h3 in shuttingDown {
            if let d = h3.shutdownDeadline { earliest = earliest.map { min($0, d) } ?? d }
        }
        return earliest
    }

    /// --drain-delay began: every connection announces GOAWAY (RFC 9114
    /// §5.2, nothing refused yet); new connections are still served.
    func announceGoingAway() {
        for c in Array(connections.values) { c.announceGoingAway() }
        flush()
    }

    /// SIGTERM or a drain: no new connections; each connection sends
    /// GOAWAY, finishes its requests and closes.
    func beginStopping() {
        endpoint.acceptsNewConnections = false
        for c in Array(connections.values) { c.beginShutdown() }
        flush()
    }

    /// Stopping, and no QUIC connection is open (handshakes included), or
    /// the graceful timeout cut them. Connections in the closing or draining
    /// state (RFC 9000 §10.2) are not waited for: their CONNECTION_CLOSE
    /// went out, and three probe timeouts can be seconds (see
    /// H3Connection.maximumGoAwayGraceMilliseconds on inflated RTTs).
    var isIdle: Bool { wasCut || endpoint.openConnectionCount == 0 }

    /// For the stats line (WorkerStats): QUIC connections open, HTTP/3
    /// ones (handshake complete) among them, and HTTP/3 ones still holding
    /// their TLS state (0 unless a release failed: it is freed once the
    /// handshake is confirmed, QUICHandshakeSession.releaseAfterHandshake).
    var openCounts: (quic: Int, h3: Int, h3HoldingTLS: Int) {
        let holding = connections.values.count { ($0.quic.cryptoHandshake as? QUICHandshakeSession)?.isReleased == false }
        return (endpoint.openConnectionCount, connections.count, holding)
    }
    private var wasCut = false

    /// Past --graceful-timeout: whatever is open is closed now; handshakes
    /// still under way are abandoned (the client tries again elsewhere or
    /// times out).
    func cut() {
        wasCut = true
        for c in Array(connections.values) { c.cut() }
        flush()
    }
}
