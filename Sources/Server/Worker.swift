import CSys
import Core
import Gateway
import HTTP1
import Options
import PyBridge
import HTTP3
import TLS

/// One worker: one thread, one epoll, its own connections, buffers, timers
/// and gateway. Nothing here is shared with another worker.
///
/// WSGI: the worker's own loop waits in epoll with the GIL released,
/// accepts, reads, and runs the application inline for each complete
/// request. ASGI: the asyncio (or uvloop) loop runs the thread; the epoll
/// descriptor is one of its readers, and `poll` handles what is ready
/// without blocking. Timers are a wheel with one deadline per connection.
///
/// The clock: this class is the only reader of the monotonic clock (through
/// its `WorkerClock`). It takes one reading when its loop wakes (epoll
/// returned, or the asyncio loop called in) and every connection, session,
/// stream and protocol core uses `now`. Where application code may run
/// between two uses — inside an inline WSGI call, in ASGI tasks between the
/// loop's calls — a reading could be seconds old, so there `now` reads the
/// clock at each use instead.
///
/// The worker dispatches; the state of each concern is a type of its own,
/// held inline: `WorkerClock`, `WorkerConnections` (the slab and the
/// connections to visit after a round), `TCPAcceptor` (listener,
/// --max-connections, spare objects), `WorkerStop` (signals, graceful
/// deadline, recycling), `SupervisorLink` (status pipe, load board),
/// `WorkerPools` (buffers, parsing state) and `TaskOutput` (ASGI output
/// written after the tasks). What a connection reads on every request
/// (`out`, `date`, `config`, the header table) stays stored here.
final class Worker {
    let config: Config
    let wsgi: WSGIGateway?
    let asgi: ASGIGateway?
    /// --wsgi-threads N > 1: the application runs on these threads, not
    /// inline (see WSGIPool).
    private(set) var wsgiPool: WSGIPool?
    /// This worker's asyncio loop (ASGI; unused under WSGI).
    let loopDriver = EventLoopDriver()
    /// ASGI: the events one loop iteration takes (see PollBudget).
    private var pollBudget = PollBudget(ceiling: Poller.batch)
    let headerTable: H1HeaderTable
    let fieldSpans: UnsafeMutablePointer<FieldSpans>
    let accessLog: AccessLog
    /// `--request-id-header` (nil: off, so a request costs one branch).
    let requestIDs: RequestIDGenerator?
    /// This thread's block of the supervisor's metrics region (RequestMetering).
    let metrics: WorkerMetrics
    /// `--forwarded-allow-ips`: nil when no peer is trusted, so a request
    /// costs one branch.
    let forwardedResolver: ForwardedResolver?
    /// `--proxy-protocol`: the peers whose connections begin with a PROXY
    /// header (nil: off), and its decoder.
    let proxyPeers: TrustedPeers?
    let proxyHeaderReader = ProxyHeaderReader()
    /// --health-path, --limit-concurrency, --max-connection-age.
    var admission: Admission
    var out = OutputBuffer()
    var date = DateCache()
    /// `--header`/`--server-header` (nil: none, so a response pays one
    /// branch), and whether the server adds `date` (`--no-date-header`).
    let defaultFields: DefaultResponseFields?
    let sendsDate: Bool
    var requestsServed = 0
    private var requestTokens: UInt64
    private var clock: WorkerClock
    private var poller: Poller
    private var timers: TimerWheel
    private var connections = WorkerConnections()
    private var acceptor: TCPAcceptor
    private var stop: WorkerStop
    private var supervisor: SupervisorLink
    private var pools: WorkerPools
    private var taskOutput = TaskOutput()
    /// `--http3`: this worker context's UDP socket (see DatagramEndpoint).
    let datagrams: DatagramEndpoint?
    /// `--http3`: QUIC and HTTP/3 behind that socket (see QUICService).
    private(set) var quic: QUICService?
    /// An ASGI stream queued HTTP/3 output: datagrams go after the tasks.
    private var quicFlushWanted = false
    /// `--http3`: the `alt-svc` value TLS responses carry (nil: none).
    let altSvc: AltSvcAdvert?
    /// The other worker threads of this process, if any, and this worker's
    /// number among them (0: the one the supervisor knows).
    let group: WorkerGroup?
    let context: Int
    /// The supervisor's number for this worker process (0 ..< --workers;
    /// a replacement keeps it), for the stats line; set by Main.serve.
    var slot = 0
    /// Worker 0 under `--lifespan-scope process`: the process's one
    /// lifespan runs on its loop, so after its own connections are done the
    /// loop runs on until every other worker thread has drained (or
    /// `othersDeadline` passed), and only then the lifespan shutdown.
    var outlivesOthers = false
    /// Set when a stop begins: --graceful-timeout plus a second, as long as
    /// the process waits for its threads (see Main.serve).
    private var othersDeadline: Instant?
    /// The wait for the others ran out (see `othersStillDraining`).
    private(set) var gaveUpOnOthers = false

    /// Listener `i`'s token: the first is 1 << 63, the others above the
    /// small tokens below.
    private static func listenerToken(_ i: Int) -> UInt64 { 1 << 63 | UInt64(i) << 8 }
    private static func listenerIndex(_ token: UInt64) -> Int? {
        token & (1 << 63 | 0xFF) == 1 << 63 ? Int(truncatingIfNeeded: (token >> 8) & 0xFFFF) : nil
    }
    private static let signalToken: UInt64 = 1 << 63 | 1
    private static let groupStopToken: UInt64 = 1 << 63 | 2
    private static let poolDoorbellToken: UInt64 = 1 << 63 | 3
    private static let datagramToken: UInt64 = 1 << 63 | 4
    /// What the WSGI pool's wait list knows HTTP/3 requests by.
    static let quicPoolToken: UInt64 = 1 << 63 | 5

    /// `context` numbers the worker contexts of one process (0 for the
    /// first; see `nextRequestToken`).
    /// `poolGateways`: one gateway per WSGI pool thread (--wsgi-threads
    /// N > 1), made on the main thread like `wsgi`; empty: inline.
    init(config: Config, listeners: [Listener], wsgi: WSGIGateway?, asgi: ASGIGateway?, signalFD: Int32,
         group: WorkerGroup? = nil, context: Int = 0, poolGateways: [WSGIGateway] = [],
         datagramSocket: UDPSocket? = nil) throws(SystemError) {
        self.config = config
        self.group = group
        self.context = context
        requestTokens = UInt64(context) << 48
        self.wsgi = wsgi
        self.asgi = asgi
        var l = H1Limits()
        l.maxHeadBytes = config.maxHeaderSize
        pools = WorkerPools(limits: l)
        headerTable = H1HeaderTable(capacity: l.maxHeaderCount)
        fieldSpans = .allocate(capacity: l.maxHeaderCount)
        accessLog = try AccessLog(config: config)
        requestIDs = config.requestIDHeader.map { RequestIDGenerator(name: $0) }
        metrics = Worker.metrics(config, context: context)
        forwardedResolver = config.forwardedAllowIPs.isEmpty ? nil : ForwardedResolver(trusted: config.forwardedAllowIPs)
        proxyPeers = config.proxyProtocol ? config.proxyAllowIPs : nil
        admission = Admission(config: config)
        acceptor = TCPAcceptor(listeners: listeners, maxConnections: config.maxConnections)
        stop = WorkerStop(config: config, signalFD: signalFD, fromSignalThread: wsgi != nil)
        supervisor = SupervisorLink(config: config)
        let start = Instant.now()
        clock = WorkerClock(reading: start, applicationRunsFirst: asgi != nil)  // until the loop calls in
        poller = try Poller()
        // Up to maxConnections active plus as many lingering (see beginLinger).
        timers = TimerWheel(capacity: 2 * config.maxConnections, tickMilliseconds: 50, slotCount: 1024, now: start)
        for i in listeners.indices { try poller.add(listeners[i].fd, token: Worker.listenerToken(i), interest: .readable) }
        datagrams = datagramSocket.map { DatagramEndpoint(socket: $0, handler: DroppingDatagramHandler()) }
        let defaults = DefaultResponseFields(config.defaultResponseFields)
        defaultFields = defaults.isEmpty ? nil : defaults
        sendsDate = config.dateHeader
        // An operator's own `--header alt-svc:...` replaces the advert.
        altSvc = defaults.contains(name: "alt-svc") ? nil : datagramSocket.map { AltSvcAdvert(port: $0.port) }
        if let datagramSocket { try poller.add(datagramSocket.fd, token: Worker.datagramToken, interest: .readable) }
        if signalFD >= 0 { try poller.add(signalFD, token: Worker.signalToken, interest: .readable) }
        if let group, context > 0 {
            try poller.add(group.stopDescriptor(context), token: Worker.groupStopToken, interest: .readable)
        }
        if poolGateways.count > 1 {
            let pool = try WSGIPool(worker: self, gateways: poolGateways, fieldCapacity: l.maxHeaderCount,
                                    maxConnections: config.maxConnections)
            try poller.add(pool.doorbell, token: Worker.poolDoorbellToken, interest: .readable)
            wsgiPool = pool
        }
    }

    // MARK: - State the connections read

    /// The present moment, as far as anything in this worker is concerned.
    var now: Instant { clock.now }

    var blockSize: Int { pools.blockSize }
    var limits: H1Limits { pools.limits }

    /// Serves HTTP/3 on this worker's UDP socket (set up by Main.serve, with
    /// the QUIC TLS context).
    func enableHTTP3(tls: QUICTLSContext, statelessSecret: [UInt8]) {
        guard let datagrams, quic == nil else { return }
        var limits = H3Limits()
        limits.maxConcurrentStreams = config.http3MaxStreams
        limits.maxFieldSectionSize = max(config.maxHeaderSize, 4096)
        // RFC 9220 §3: WebSockets over HTTP/3, for ASGI applications only
        // (as over HTTP/2); without it `:protocol` makes a request malformed.
        limits.enableConnectProtocol = asgi != nil && config.websockets
        // WebTransport (H3Connection+WebTransport): sessions for ASGI
        // applications; a WSGI application has no interface for one, and its
        // clients' sessions are refused with 501 (so it is offered to both:
        // a client that asks gets an answer, not a malformed request).
        // Setting it also turns on extended CONNECT (H3Limits), which answers
        // a WebSocket CONNECT to a WSGI application with 501 too.
        let webTransport = config.webTransport
        if webTransport { limits.webTransport = WebTransportLimits() }
        let service = QUICService(worker: self, socket: datagrams.socket, tls: tls, statelessSecret: statelessSecret,
                                  configuration: QUICService.configuration(config, webTransport: webTransport), limits: limits)
        datagrams.handler = service
        quic = service
    }

    /// The TLS configuration (nil: plain connections); set by Main.serve.
    var tlsContext: TLSContext? {
        get { acceptor.tlsContext }
        set { acceptor.tlsContext = newValue }
    }

    var stopping: Bool { stop.stopping }
    /// SIGTERM/SIGINT (not a drain): idle connections are closed.
    var hardStopping: Bool { stop.hardStopping }
    /// Stopping, or told to stop while an inline WSGI call held the loop:
    /// responses from now on close their connection.
    var stopRequested: Bool { stop.stopRequested }

    /// Reading a file for a transport that cannot sendfile (HTTP/2, TLS).
    var fileScratch: UnsafeMutableRawBufferPointer { pools.fileScratch }

    /// Unique in the process, not only in this worker: the worker context's
    /// number in the high 16 bits, this worker's count below, so an object
    /// kept from one request can never match another request, whichever
    /// worker context serves it.
    func nextRequestToken() -> UInt64 {
        requestTokens &+= 1
        return requestTokens
    }

    // MARK: - Output after the ASGI tasks

    /// `session`'s ASGI streams queued frames: written once, after this
    /// loop iteration's tasks, instead of once per `send()`.
    func flushAfterTasks(_ session: H2Session) {
        taskOutput.flushAfterTasks(session)
        loopDriver.requestDeferred()
    }

    /// HTTP/3 streams queued output from ASGI tasks: the datagrams are
    /// built once, after this loop iteration's tasks.
    func flushQUICAfterTasks() {
        quicFlushWanted = true
        loopDriver.requestDeferred()
    }

    private func flushDeferredSessions() {
        let taken = taskOutput.takeSessions()
        for i in taken.indices { taken[i].deferredFlush() }
        taskOutput.giveBack(taken)
        if quicFlushWanted {
            quicFlushWanted = false
            quic?.deferredFlush()
        }
    }

    /// The earliest HTTP/3 deadline may have moved earlier (ASGI: the loop's
    /// timer follows; WSGI: the loop reads it each round).
    func quicDeadlineChanged() {
        if asgi != nil { scheduleTimer() }
    }

    /// Milliseconds until the QUIC deadline, rounded up, or nil.
    private func quicWait(now: Instant) -> Int? {
        guard let deadline = quic?.nextDeadline else { return nil }
        guard deadline > now else { return 0 }
        return Int((deadline.nanoseconds - now.nanoseconds + 999_999) / 1_000_000)
    }

    /// A small complete HTTP/1.1 ASGI response, held for the rest of this
    /// loop iteration (see CoalescedOutput).
    func hold(_ c: H1Connection, _ staged: UnsafeRawBufferPointer, _ extra: UnsafeRawBufferPointer) {
        let t = now
        switch taskOutput.hold(c, staged, extra, now: t) {
        case .flushNow: flushHeld()
        case .first: loopDriver.requestDeferred()
        case .waiting: break
        }
    }

    func flushHeld() {
        taskOutput.flushHeld()
    }

    // MARK: - Loop

    /// The WSGI loop: blocks in epoll (GIL released) until stopped.
    /// Starts the --wsgi-threads pool, if there is one; false if one of
    /// its threads could not start.
    func startPool() -> Bool { wsgiPool?.start() ?? true }

    func run() {
        storeLoad()
        // Worker 0 started its pool before it reported ready (Main.serve);
        // another worker thread whose pool cannot start ends here, and its
        // process is replaced (WorkerGroup).
        guard startPool() else { return }
        while !finished {
            var timeout = timers.millisecondsUntilNextTick(now: now).map { Int32(min($0, 60_000)) } ?? -1
            if let q = quicWait(now: now) { timeout = timeout < 0 ? Int32(min(q, 60_000)) : min(timeout, Int32(min(q, 60_000))) }
            if let r = acceptor.millisecondsUntilRetry(now: now) { timeout = timeout < 0 ? Int32(r) : min(timeout, Int32(r)) }
            if beats { timeout = timeout < 0 ? 1000 : min(timeout, 1000) }  // heartbeats
            let wait = stop.stopping || stop.delaying ? min(timeout < 0 ? 100 : timeout, 100) : timeout
            let n = GIL.released { poller.wait(timeoutMilliseconds: connections.hasDeferredReads ? 0 : wait) }
            handle(n)
            if wsgiPool != nil {
                // Pooled requests use the transports' non-blocking side:
                // what it left for after the round is written now.
                flushDeferredSessions()
                flushHeld()
            }
        }
        // Every connection is closed: the threads finish what they run.
        wsgiPool?.shutdown(milliseconds: stop.millisecondsLeft(now: now) + 1000)
    }

    /// The ASGI loop: runs the event loop until stopped; throws if the
    /// lifespan startup fails. `lifespan`: run the lifespan on this loop;
    /// `sharedState`: the state of the lifespan another worker ran for the
    /// process (`--lifespan-scope process`), copied into this worker's
    /// scopes instead.
    func runAsync(app: PyRef, lifespan: Bool, sharedState: PyRef? = nil, uvloop: Bool,
                  onStarted: @escaping (String) -> Void) throws(StartupError) {
        loopDriver.attached = { [unowned self] loop, state, name in
            asgi!.attach(loop: loop, state: state ?? sharedState)
            storeLoad()
            onStarted(name)
            scheduleTimer()
        }
        loopDriver.deferred = { [unowned self] in
            // Called in after this iteration's tasks: a reading taken on
            // first use serves the whole call.
            clock.forgetReading(applicationMayRun: false)
            flushDeferredSessions()
            flushHeld()
            clock.forgetReading(applicationMayRun: true)
        }
        loopDriver.poll = { [unowned self] in
            if pollBudget.wantsReading { pollBudget.reading(csys_thread_cpu_ns()) }
            let n = poller.wait(timeoutMilliseconds: 0, maxEvents: pollBudget.maxEvents)
            pollBudget.took(n)
            handle(n)
            if finished { loopDriver.stop() } else { scheduleTimer() }
            // Tasks run next, at times of their own.
            clock.forgetReading(applicationMayRun: true)
        }
        try loopDriver.run(app: app, fd: poller.fd, lifespan: lifespan, uvloop: uvloop)
    }

    private var finished: Bool {
        stop.stopping && acceptor.isIdle && (quic?.isIdle ?? true) && !othersStillDraining()
    }

    /// See `outlivesOthers`. Past the deadline the wait is given up (one
    /// warning; the process exits without waiting again, see Main.serve).
    private func othersStillDraining() -> Bool {
        guard outlivesOthers, !gaveUpOnOthers, let group, let deadline = othersDeadline else { return false }
        guard group.othersBusy else { return false }
        if now < deadline { return true }
        Log.warning("worker threads still busy after the graceful timeout: running the lifespan shutdown")
        gaveUpOnOthers = true
        return false
    }

    /// Worker 0 ran the process's lifespan startup, but another worker
    /// thread could not start: it stops as on SIGTERM before it ever
    /// reported ready, so the shutdown that mirrors the startup still runs,
    /// after the threads that did start have ended.
    func abandonStart() {
        beginStopping(closeIdle: true)
    }

    /// The loop wakes at least once a second: for the supervisor's
    /// heartbeat, or for the group's (see WorkerGroup).
    private var beats: Bool { supervisor.reportsStatus || group != nil }

    private func scheduleTimer() { scheduleTimer(now: now) }

    private func scheduleTimer(now: Instant) {
        var ms = timers.millisecondsUntilNextTick(now: now)
        if let q = quicWait(now: now) { ms = min(ms ?? q, q) }
        if let r = acceptor.millisecondsUntilRetry(now: now) { ms = min(ms ?? r, r) }
        if beats { ms = min(ms ?? 1000, 1000) }  // heartbeats
        if stop.stopping || stop.delaying { ms = min(ms ?? 100, 100) }
        if connections.hasDeferredReads { ms = 0 }
        loopDriver.schedule(at: ms.map { now.adding(milliseconds: $0) }, now: now)
    }

    /// Dispatches `n` ready events, then fires expired timers.
    private func handle(_ n: Int) {
        clock.takeReading()
        date.refresh()
        accessLog.sink?.reopenIfAsked()
        for i in 0..<n {
            let (token, events) = poller.event(at: i)
            if let i = Worker.listenerIndex(token), i < acceptor.listeners.count {
                acceptConnections(from: acceptor.listeners[i])
            } else if token == Worker.signalToken {
                handleSignal()
            } else if token == Worker.datagramToken {
                datagrams?.onEvents(events, now: now)
            } else if token == Worker.poolDoorbellToken {
                wsgiPool?.onDoorbell()
            } else if token == Worker.groupStopToken {
                // Worker 0 began a stop, a drain or a drain delay (see WorkerGroup).
                if let told = group?.takeStop(context) {
                    if told.stats { logStats() }
                    if told.delay && !stop.stopping && !stop.delaying { beginDrainDelay() }
                    if let closeIdle = told.stop, !stop.stopping { beginStopping(closeIdle: closeIdle) }
                }
            } else {
                connections.connection(for: token)?.onEvents(events)
            }
        }
        runDeferredReads()
        if stop.delayEnded(now: now) { beginStopping(closeIdle: true) }
        for index in connections.expire(&timers, now: now) {
            connections[index]?.onTimeout()
        }
        quic?.expireIfDue(now: now)
        if acceptor.retryDue(now: now) { retryAccepting() }
        if wsgi != nil { quic?.serveWaiting() }
        enforceGracefulDeadline()
        reportToSupervisor()
        if pools.trimDue(now: now) { idlePass() }
    }

    /// Once a second: connections that went idle since the previous pass
    /// and are idle still give back what they need only while busy (an
    /// HTTP/1.1 connection's parsing and request state), then the pools
    /// trim. O(connections gone idle), not O(open connections).
    private func idlePass() {
        for token in connections.takeWentIdle() {
            connections.connection(for: token)?.idlePassed()
        }
        pools.trim()
    }

    private func acceptConnections(from listener: Listener) {
        // With several workers on one socket, each takes one connection per
        // wake-up, so a burst of connections spreads across them instead of
        // going to whichever woke first.
        var budget = config.workers == 1 ? 128 : 1
        while budget > 0 && acceptor.accepting {
            budget -= 1
            guard !acceptor.isFull && !(wsgiPool?.holdsAccepting ?? false) else {
                // Leave further connections in the kernel's queue until a
                // slot frees (see connectionClosed).
                if acceptor.pause() { removeListeners() }
                return
            }
            if supervisor.siblingShouldTake(openCount: acceptor.openCount, stopping: stop.stopping, now: now) { return }
            let fd: Int32, peer: PeerInfo
            switch acceptor.accept(from: listener, now: now) {
            case .connection(let f, let p): (fd, peer) = (f, p)
            case .waitForReadiness: return
            case .acceptNext: continue
            case .pause:
                // Out of descriptors or memory: the client stays queued and
                // the level-triggered listener would wake us at once, again
                // and again. Out of the poller until the back-off ends or a
                // connection closes (see AcceptBackoff).
                // (ASGI: `poll` reschedules the loop's timer after `handle`.)
                if acceptor.pause() { removeListeners() }
                return
            case .listenerShutDown:
                // The supervisor is stopping the server; SIGTERM follows.
                Log.debug("the listening socket was shut down: no more connections are accepted")
                if acceptor.pause() { removeListeners() }
                return
            }
            let c = acceptor.takeSpare() ?? H1Connection(worker: self)
            let (index, generation) = connections.insert(c)
            acceptor.opened()
            storeLoad()
            let session = tlsContext?.makeSession(fd: fd)
            c.open(fd: fd, peer: peer, tls: session, index: index, generation: generation)
            do {
                try poller.add(fd, token: c.token, interest: c.interest)
            } catch {
                c.close()
            }
            if tlsContext != nil && session == nil { c.close() }
            // Bytes may already be waiting (a client that sends at once):
            // the level-triggered poller reports them on the next round.
        }
    }

    /// A connection entering its lingering close stops counting towards
    /// --max-connections; at most as many again may linger (beyond that the
    /// connection is closed at once). False: close now.
    func beginLinger() -> Bool {
        guard acceptor.beginLinger() else { return false }
        storeLoad()
        resumeAcceptingIfPaused()
        return true
    }

    /// This worker's open-connection count on the load board.
    private func storeLoad() {
        supervisor.publishLoad(openCount: acceptor.openCount, stopping: stop.stopping)
    }

    /// An inline WSGI call begins: "in a call since now" on the board (so
    /// siblings take new connections if it lasts; see SupervisorLink), and
    /// until it returns (`publishLoad`) `now` reads the clock at each use,
    /// since the call may take seconds.
    func publishBusy() {
        supervisor.publishBusy(openCount: acceptor.openCount, stopping: stop.stopping, now: now)
        clock.forgetReading(applicationMayRun: true)
    }

    /// An inline WSGI call returned (see `publishBusy`): the board shows the
    /// load again, and the loop takes a new reading, the call having held
    /// it for any length of time.
    func publishLoad() {
        storeLoad()
        clock.takeReading()
    }

    /// A TCP connection closed (before its descriptor is): out of the
    /// poller and the slab, its object kept for the next accept.
    func connectionClosed(_ c: H1Connection, wasLingering: Bool) {
        poller.remove(c.fd)
        connections.release(c.index)
        // Out of descriptors before: the retry is due now, made on the
        // loop's next round, once this one is really closed.
        if acceptor.closed(c, wasLingering: wasLingering, now: now), asgi != nil { scheduleTimer() }
        storeLoad()
        resumeAcceptingIfPaused()
    }

    private func resumeAcceptingIfPaused() {
        if acceptor.resumeIfPaused(stopping: stop.stopping || (wsgiPool?.holdsAccepting ?? false)) {
            for i in acceptor.listeners.indices {
                try? poller.add(acceptor.listeners[i].fd, token: Worker.listenerToken(i), interest: .readable)
            }
        }
    }

    /// A pause for a shortage at accept ended (see AcceptBackoff): the
    /// listeners return to the poller, and accept(2) is tried at once, since
    /// even with nobody queued its answer tells whether the shortage is over.
    private func retryAccepting() {
        resumeAcceptingIfPaused()
        for listener in acceptor.listeners where acceptor.accepting { acceptConnections(from: listener) }
    }

    private func removeListeners() {
        for listener in acceptor.listeners { poller.remove(listener.fd) }
    }

    // MARK: - The WSGI pool's requests

    /// The pool's threads and wait list are full: new connections wait in
    /// the kernel (and siblings see this worker as not accepting).
    func holdAccepting() {
        if acceptor.pause() { removeListeners() }
        supervisor.publishNotAccepting()
    }

    /// The pool has room again.
    func releaseAccepting() {
        guard !acceptor.accepting else { return }
        storeLoad()
        resumeAcceptingIfPaused()
    }

    /// A pool thread is free for the connection that waited for one.
    func poolThreadFree(for token: UInt64) {
        if token == Worker.quicPoolToken {
            quic?.poolThreadFree()
            return
        }
        connections.connection(for: token)?.poolThreadFree()
    }

    /// A stop or drain signal (see WorkerStop) begins the stop; a second
    /// one while stopping exits.
    private func handleSignal() {
        while let closeIdle = stop.nextStop() {
            if closeIdle && config.drainDelayMilliseconds > 0 && !stop.stopping {
                // The first stop signal begins the delay; a second one ends it.
                if !stop.delaying {
                    beginDrainDelay()
                    continue
                }
                _ = stop.delayEnded(now: now, force: true)
            }
            beginStopping(closeIdle: closeIdle)
        }
        if stop.takeStatsRequest() {
            logStats()
            if context == 0 { group?.askOthersForStats() }
        }
    }

    /// SIGUSR2 (to the process, or relayed by worker 0): one JSON line of
    /// what this worker holds (WorkerStats).
    private func logStats() {
        var stats = WorkerStats()
        for c in connections.openConnections {
            if let h1 = c as? H1Connection { stats.count(h1) }
        }
        if let counts = quic?.openCounts {
            stats.h3 = counts.h3
            stats.quicHandshaking = max(counts.quic - counts.h3, 0)
            stats.h3HoldingTLS = counts.h3HoldingTLS
        }
        stats.requestsInFlight = admission.inFlight
        stats.pool = pools.bufferUsage
        Log.writeAll(2, stats.line(pid: csys_getpid(), worker: slot, thread: context, rss: csys_rss_bytes()))
    }

    /// --drain-delay: the load balancer is to notice first (its health
    /// checks get 503) and send nothing new, while whatever still comes is
    /// served; responses close their connections, HTTP/2 ones get a
    /// GOAWAY. The stop begins when the delay ends (`handle`).
    private func beginDrainDelay() {
        stop.beginDelay(now: now, milliseconds: config.drainDelayMilliseconds)
        if context == 0 {
            Log.info("draining: serving \(config.drainDelayMilliseconds) ms more (--drain-delay) before stopping")
        }
        for c in connections.openConnections { c.announceGoingAway() }
        quic?.announceGoingAway()
        if context == 0 { group?.delayOthers() }
        if asgi != nil { scheduleTimer() }
    }

    /// Not serving as usual any more: stopping, replaced, or inside
    /// --drain-delay (what --health-path reports as 503).
    var draining: Bool { stop.stopRequested }

    private func beginStopping(closeIdle: Bool) {
        stop.begin(closeIdle: closeIdle, now: now, gracefulTimeoutMilliseconds: config.gracefulTimeoutMilliseconds)
        storeLoad()
        if acceptor.pause() { removeListeners() }
        // Our copy of the shared socket goes; once the supervisor's and every
        // stopping worker's copy are closed the kernel refuses new
        // connections (while a replacement holds one, it takes them).
        for listener in acceptor.listeners { _ = csys_close(listener.fd) }

        for c in connections.openConnections { c.beginStopping(closeIdle: closeIdle) }
        quic?.beginStopping()
        if asgi != nil { scheduleTimer() }
        if context == 0 { group?.stopOthers(closeIdle: closeIdle) }
        if outlivesOthers { othersDeadline = now.adding(milliseconds: config.gracefulTimeoutMilliseconds + 1000) }
    }

    /// Past --graceful-timeout: what is still open is cut.
    private func enforceGracefulDeadline() {
        guard stop.deadlinePassed(now: now) else { return }
        let open = connections.openConnections
        if !open.isEmpty { Log.warning("graceful timeout: aborting \(open.count) connection(s)") }
        for c in open { c.cut() }
        quic?.cut()
    }

    /// Heartbeat and --max-requests report to the supervisor. In a group,
    /// every worker stamps its round and worker 0 speaks for all: its
    /// heartbeat goes out only while the others' stamps are recent, and a
    /// recycle any of them asks for (or a worker thread that ended) has the
    /// process replaced.
    ///
    /// With a WSGI pool the loop never waits for the application, so a
    /// busy pool does not silence it; but when every pool thread has run
    /// one request past --worker-timeout the worker can serve nothing new,
    /// and it falls silent as an inline worker does in a call that long.
    private func reportToSupervisor() {
        let poolStuck = wsgiPool?.allStuck(now: now, milliseconds: config.workerTimeoutMilliseconds) ?? false
        if !poolStuck { group?.stamp(context, now: now) }
        guard supervisor.reportsStatus else {
            if let group, stop.recycleDue(requestsServed: requestsServed) { group.requestRecycle() }
            return
        }
        if !poolStuck && (group?.othersAlive(now: now) ?? true) { supervisor.beatIfDue(now: now) }
        var othersAsk = false
        if let group, !stop.stopping {
            othersAsk = group.recycleRequested
            if group.someoneEnded && !othersAsk {
                othersAsk = true
                group.requestRecycle()
                Log.error("a worker thread ended: replacing this worker process")
            }
        }
        if stop.recycleDue(requestsServed: requestsServed, othersAsk: othersAsk) {
            writeStatus(UInt8(ascii: "Q"))
        }
    }

    func writeStatus(_ byte: UInt8) {
        supervisor.writeStatus(byte)
    }

    // MARK: - Services for connections

    /// The datagram handler wants (or no longer wants) to hear when the UDP
    /// socket has room for what a send left (DatagramHandler).
    func datagramsWantWritable(_ on: Bool) {
        guard let datagrams, let interest = datagrams.setWantsWritable(on) else { return }
        poller.modify(datagrams.socket.fd, token: Worker.datagramToken, interest: interest)
    }

    /// `fd` is `c`'s own descriptor, registered under `c.token` (a kind
    /// without one, behind a shared descriptor, asks its owner instead).
    func setInterest(_ c: some WorkerConnection, fd: Int32, _ interest: IOEvents) {
        poller.modify(fd, token: c.token, interest: interest)
    }

    /// Arms `c`'s deadline `milliseconds` from `now` (which is the present
    /// moment even after an application ran; see the class comment). Under
    /// ASGI this may happen from a task, outside `poll`, so the loop's timer
    /// is moved if the new deadline is the earliest.
    func arm(_ c: some WorkerConnection, milliseconds: Int) {
        let now = self.now
        timers.arm(c.index, at: now.adding(milliseconds: milliseconds))
        if asgi != nil { scheduleTimer(now: now) }
    }

    /// `c` has decrypted input waiting: it gets a readable event after
    /// this round (ASGI: the loop is asked to poll again at once).
    func deferRead(_ c: some WorkerConnection) {
        connections.deferRead(c.token)
        if asgi != nil { scheduleTimer() }
    }

    private func runDeferredReads() {
        guard connections.hasDeferredReads else { return }
        for token in connections.takeDeferredReads() {
            connections.connection(for: token)?.onDeferredRead()
        }
    }

    func disarm(_ c: some WorkerConnection) {
        timers.cancel(c.index)
    }

    /// Parsing state for connections with a request under way; idle
    /// connections return theirs (a bounded number is kept for reuse).
    func takeParsing() -> H1RequestParsing { pools.takeParsing() }
    func giveParsing(_ p: H1RequestParsing) { pools.giveParsing(p) }
    func takeRequestState() -> H1RequestState { pools.takeRequestState() }
    func giveRequestState(_ s: H1RequestState) { pools.giveRequestState(s) }
    /// `c` went idle holding its parsing or request state: the next pass
    /// (`idlePass`) takes them back if `c` is idle still.
    func wentIdle(_ c: H1Connection) { connections.noteWentIdle(c.token) }

    func takeBlock() -> UnsafeMutableRawPointer { pools.takeBlock() }
    func giveBlock(_ b: UnsafeMutableRawPointer) { pools.giveBlock(b) }

    /// Waits (GIL released) until `fd` is readable; false on timeout.
    func waitReadable(_ fd: Int32, milliseconds: Int) -> Bool {
        waitFor(fd, readable: true, writable: false, milliseconds: milliseconds)
    }

    func waitWritable(_ fd: Int32, _ milliseconds: Int) -> Bool {
        waitFor(fd, readable: false, writable: true, milliseconds: milliseconds)
    }

    /// Blocks (GIL released) until `fd` is ready for either wanted
    /// direction; false on timeout. Time passed meanwhile: the next use of
    /// `now` reads the clock.
    ///
    /// The wait is cut in slices of at most a second, and between them the
    /// supervisor hears from this worker: blocked on a client (an inline
    /// WSGI response going out to a slow reader, over TCP or QUIC, or a
    /// body coming in), the worker is alive, and each wait is bounded by
    /// --request-timeout. --worker-timeout is for an application that does
    /// not return, not for a client that reads slowly (a 10 MiB HTTP/3
    /// download over a lossy link had its worker killed).
    func waitFor(_ fd: Int32, readable: Bool, writable: Bool, milliseconds: Int) -> Bool {
        let events: Int32 = (readable ? 1 : 0) | (writable ? 2 : 0)
        var left = milliseconds
        while true {
            let slice = min(left, Worker.blockedWaitSliceMilliseconds)
            let ready = GIL.released { csys_poll_one(fd, events, Int32(slice)) }
            clock.timePassed()
            left -= slice
            guard ready == 0, left > 0 else { return ready == 1 }
            beatWhileBlocked()
        }
    }

    static let blockedWaitSliceMilliseconds = 1000

    /// The part of `reportToSupervisor` that says "alive" (no recycling,
    /// no status changes: those wait for the loop).
    private func beatWhileBlocked() {
        group?.stamp(context, now: now)
        guard supervisor.reportsStatus, group?.othersAlive(now: now) ?? true else { return }
        supervisor.beatIfDue(now: now)
    }
}
