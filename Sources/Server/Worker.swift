import CSys
import Core
import Gateway
import HTTP1
import Options
import PyBridge
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
/// The clock: this class is the only reader of the monotonic clock. It takes
/// one reading when its loop wakes (epoll returned, or the asyncio loop
/// called in) and every connection, session, stream and protocol core uses
/// `now`. Where application code may run between two uses — inside an inline
/// WSGI call, in ASGI tasks between the loop's calls — a reading could be
/// seconds old, so there `now` reads the clock at each use instead.
final class Worker {
    let config: Config
    let listener: Listener
    let wsgi: WSGIGateway?
    let asgi: ASGIGateway?
    /// This worker's asyncio loop (ASGI; unused under WSGI).
    let loopDriver = EventLoopDriver()
    let headerTable: H1HeaderTable
    let fieldSpans: UnsafeMutablePointer<FieldSpans>
    let accessLog: AccessLog
    var out = OutputBuffer()
    var date = DateCache()
    private var reading: Instant
    /// `reading` is the present moment for this loop wake-up.
    private var readingIsCurrent: Bool
    /// Application code may run between uses of `now`: a reading taken then
    /// is not kept (see the class comment).
    private var applicationMayRun: Bool
    private var poller: Poller
    private var timers: TimerWheel
    private var pool = BufferPool()
    let blockSize: Int
    let limits: H1Limits
    /// Open connections of every kind (see ConnectionSlab).
    private var slab = ConnectionSlab()
    /// Closed TCP connection objects, reused by the next accepts.
    private var spareTCPConnections: [H1Connection] = []
    private var openCount = 0
    private var lingeringCount = 0
    private var accepting = true
    private let signalFD: Int32
    private(set) var stopping = false
    /// SIGTERM/SIGINT (not a drain): idle connections are closed.
    private(set) var hardStopping = false
    /// Stopping, or told to stop while an inline WSGI call held the loop:
    /// responses from now on close their connection.
    var stopRequested: Bool { stopping || (wsgi != nil && csys_signal_thread_seen() != 0) }
    private var gracefulDeadline: Instant?
    private var lastBeat = Instant(nanoseconds: 0)
    private var lastTrim = Instant(nanoseconds: 0)
    private var recycleAsked = false
    /// --max-requests plus this worker's jitter (0: never recycle).
    private let recycleLimit: Int
    private var requestTokens: UInt64
    var requestsServed = 0
    private var expired: [Int] = []
    private let board: UnsafeMutablePointer<Int64>?
    private var deferringSince: Instant?
    /// The TLS configuration (nil: plain connections); set by Main.serve.
    var tlsContext: TLSContext?
    /// Connections (tokens) with decrypted input the poller will not
    /// report: read after the current round (see H1Connection+TLS).
    private var deferredReads: [UInt64] = []

    private static let listenerToken: UInt64 = 1 << 63
    private static let signalToken: UInt64 = 1 << 63 | 1

    /// `context` numbers the worker contexts of one process (0 for the
    /// first; see `nextRequestToken`).
    init(config: Config, listener: Listener, wsgi: WSGIGateway?, asgi: ASGIGateway?, signalFD: Int32,
         context: Int = 0) throws(SystemError) {
        self.config = config
        requestTokens = UInt64(context) << 48
        self.listener = listener
        self.wsgi = wsgi
        self.asgi = asgi
        self.signalFD = signalFD
        var l = H1Limits()
        l.maxHeadBytes = config.maxHeaderSize
        limits = l
        headerTable = H1HeaderTable(capacity: l.maxHeaderCount)
        fieldSpans = .allocate(capacity: l.maxHeaderCount)
        accessLog = AccessLog(enabled: config.accessLog, format: config.accessLogFormat)
        board = config.boardFD >= 0 ? csys_board_map(config.boardFD, Int32(config.boardSlots)) : nil
        recycleLimit = config.maxRequests > 0
            ? config.maxRequests + (config.maxRequestsJitter > 0 ? Int(csys_random() % UInt32(config.maxRequestsJitter + 1)) : 0)
            : 0
        reading = Instant.now()
        readingIsCurrent = asgi == nil
        applicationMayRun = asgi != nil  // until the loop calls in
        poller = try Poller()
        // Up to maxConnections active plus as many lingering (see beginLinger).
        timers = TimerWheel(capacity: 2 * config.maxConnections, tickMilliseconds: 50, slotCount: 1024, now: reading)
        blockSize = pool.blockSize
        try poller.add(listener.fd, token: Worker.listenerToken, interest: .readable)
        if signalFD >= 0 { try poller.add(signalFD, token: Worker.signalToken, interest: .readable) }
    }

    // MARK: - Clock

    /// The present moment, as far as anything in this worker is concerned.
    var now: Instant {
        if !readingIsCurrent {
            reading = Instant.now()
            readingIsCurrent = !applicationMayRun
        }
        return reading
    }

    /// The loop woke: one reading serves everything until it sleeps again
    /// or hands control to application code.
    private func takeReading() {
        reading = Instant.now()
        readingIsCurrent = true
        applicationMayRun = false
    }

    /// The next use of `now` reads the clock (a blocking wait, or the loop
    /// called in and may not need the time at all); with `applicationMayRun`
    /// every use does.
    private func forgetReading(applicationMayRun: Bool) {
        readingIsCurrent = false
        self.applicationMayRun = applicationMayRun
    }

    /// HTTP/2 sessions whose ASGI streams queued frames in this loop
    /// iteration: written once, after the iteration's tasks (see
    /// EventLoopDriver.requestDeferred), instead of once per `send()`.
    private var sessionsToFlush: [H2Session] = []

    func flushAfterTasks(_ session: H2Session) {
        sessionsToFlush.append(session)
        loopDriver.requestDeferred()
    }

    private func flushDeferredSessions() {
        let sessions = sessionsToFlush
        sessionsToFlush.removeAll(keepingCapacity: true)
        for s in sessions { s.deferredFlush() }
    }

    /// Small complete HTTP/1.1 ASGI responses of this loop iteration (see
    /// CoalescedOutput).
    private var held = CoalescedOutput()

    func hold(_ c: H1Connection, _ staged: UnsafeRawBufferPointer, _ extra: UnsafeRawBufferPointer) {
        let first = held.isEmpty
        let t = now
        if held.hold(c, staged, extra, now: t) {
            flushHeld()
        } else if first {
            loopDriver.requestDeferred()
        }
    }

    func flushHeld() {
        held.flush()
    }

    /// Reading a file for a transport that cannot sendfile (HTTP/2, TLS).
    lazy var fileScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    /// Unique in the process, not only in this worker: the worker context's
    /// number in the high 16 bits, this worker's count below, so an object
    /// kept from one request can never match another request, whichever
    /// worker context serves it.
    func nextRequestToken() -> UInt64 {
        requestTokens &+= 1
        return requestTokens
    }

    // MARK: - Loop

    /// The WSGI loop: blocks in epoll (GIL released) until stopped.
    func run() {
        storeLoad()
        while !finished {
            var timeout = timers.millisecondsUntilNextTick(now: now).map { Int32(min($0, 60_000)) } ?? -1
            if config.statusFD >= 0 { timeout = timeout < 0 ? 1000 : min(timeout, 1000) }  // heartbeats
            let wait = stopping ? min(timeout < 0 ? 100 : timeout, 100) : timeout
            let n = GIL.released { poller.wait(timeoutMilliseconds: deferredReads.isEmpty ? wait : 0) }
            handle(n)
        }
    }

    /// The ASGI loop: runs the event loop until stopped; throws if the
    /// lifespan startup fails.
    func runAsync(app: PyRef, lifespan: Bool, uvloop: Bool, onStarted: @escaping (String) -> Void) throws(StartupError) {
        loopDriver.attached = { [unowned self] loop, state, name in
            asgi!.attach(loop: loop, state: state)
            storeLoad()
            onStarted(name)
            scheduleTimer()
        }
        loopDriver.deferred = { [unowned self] in
            // Called in after this iteration's tasks: a reading taken on
            // first use serves the whole call.
            forgetReading(applicationMayRun: false)
            flushDeferredSessions()
            flushHeld()
            forgetReading(applicationMayRun: true)
        }
        loopDriver.poll = { [unowned self] in
            let n = poller.wait(timeoutMilliseconds: 0)
            handle(n)
            if finished { loopDriver.stop() } else { scheduleTimer() }
            // Tasks run next, at times of their own.
            forgetReading(applicationMayRun: true)
        }
        try loopDriver.run(app: app, fd: poller.fd, lifespan: lifespan, uvloop: uvloop)
    }

    private var finished: Bool { stopping && openCount == 0 && lingeringCount == 0 }

    private func scheduleTimer() { scheduleTimer(now: now) }

    private func scheduleTimer(now: Instant) {
        var ms = timers.millisecondsUntilNextTick(now: now)
        if config.statusFD >= 0 { ms = min(ms ?? 1000, 1000) }  // heartbeats
        if stopping { ms = min(ms ?? 100, 100) }
        if !deferredReads.isEmpty { ms = 0 }
        loopDriver.schedule(at: ms.map { now.adding(milliseconds: $0) }, now: now)
    }

    /// Dispatches `n` ready events, then fires expired timers.
    private func handle(_ n: Int) {
        takeReading()
        date.refresh()
        for i in 0..<n {
            let (token, events) = poller.event(at: i)
            if token == Worker.listenerToken {
                acceptConnections()
            } else if token == Worker.signalToken {
                handleSignal()
            } else {
                slab.connection(for: token)?.onEvents(events)
            }
        }
        runDeferredReads()
        // Collected first: a timeout handler re-arms or cancels timers,
        // which must not happen while the wheel is being walked.
        expired.removeAll(keepingCapacity: true)
        timers.expire(now: now) { expired.append($0) }
        for index in expired {
            slab[index]?.onTimeout()
        }
        enforceGracefulDeadline()
        reportToSupervisor()
        if now.milliseconds(since: lastTrim) >= 1000 {
            lastTrim = now
            pool.trim()
        }
    }

    private func acceptConnections() {
        // With several workers on one socket, each takes one connection per
        // wake-up, so a burst of connections spreads across them instead of
        // going to whichever woke first.
        var budget = config.workers == 1 ? 128 : 1
        var addr = [CChar](repeating: 0, count: 64)
        while budget > 0 && accepting {
            budget -= 1
            guard openCount < config.maxConnections else {
                // Leave further connections in the kernel's queue until a
                // slot frees (see connectionClosed).
                poller.remove(listener.fd)
                accepting = false
                return
            }
            var port: Int32 = 0
            var isUnix: Int32 = 0
            if deferToLessLoadedSibling() { return }
            let fd = csys_accept(listener.fd, &addr, 64, &port, &isUnix)
            if fd < 0 { return }
            let c = spareTCPConnections.popLast() ?? H1Connection(worker: self)
            let (index, generation) = slab.insert(c)
            let remote = String(decoding: addr.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            var local = [CChar](repeating: 0, count: 64)
            var localPort: Int32 = 0
            var serverName = listener.host
            if !listener.isUnix, csys_local_address(fd, &local, 64, &localPort) == 0 {
                serverName = String(decoding: local.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
            let peer = PeerInfo(remoteAddress: remote, remotePort: Int(port), serverName: serverName,
                                serverPort: listener.isUnix ? 0 : Int(localPort), isUnix: isUnix != 0,
                                scheme: tlsContext == nil ? "http" : "https")
            openCount += 1
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
        guard lingeringCount < config.maxConnections else { return false }
        lingeringCount += 1
        openCount -= 1
        storeLoad()
        resumeAcceptingIfPaused()
        return true
    }

    /// With several workers on one socket, every one of them is woken for a
    /// new connection, and the one that runs first would take most of them.
    /// Each worker publishes its open-connection count on the supervisor's
    /// load board; a worker holding more than one connection above the
    /// least loaded sibling lets that sibling take the connection — for at
    /// most 2 ms, so a sibling stuck in a long WSGI call cannot strand it.
    private func deferToLessLoadedSibling() -> Bool {
        guard let board, !stopping else { return false }
        var least = Int64.max
        for i in 0..<config.boardSlots where i != config.boardSlot {
            least = min(least, csys_board_load(board, Int32(i)))
        }
        guard least != Int64.max, Int64(openCount) > least + 1 else {
            deferringSince = nil
            return false
        }
        let t = now
        if let since = deferringSince {
            if t.milliseconds(since: since) >= 2 {
                deferringSince = nil
                return false
            }
        } else {
            deferringSince = t
        }
        return true
    }

    /// This worker's open-connection count on the load board.
    private func storeLoad() {
        guard let board else { return }
        csys_board_store(board, Int32(config.boardSlot), stopping ? Int64.max : Int64(openCount))
    }

    /// An inline WSGI call begins: "not accepting now" on the board (so
    /// siblings take new connections), and until it returns (`publishLoad`)
    /// `now` reads the clock at each use, since the call may take seconds.
    func publishBusy() {
        forgetReading(applicationMayRun: true)
        guard let board else { return }
        csys_board_store(board, Int32(config.boardSlot), Int64.max)
    }

    /// An inline WSGI call returned (see `publishBusy`): the board shows the
    /// load again, and the loop takes a new reading, the call having held
    /// it for any length of time.
    func publishLoad() {
        storeLoad()
        takeReading()
    }

    /// A TCP connection closed (before its descriptor is): out of the
    /// poller and the slab, its object kept for the next accept.
    func connectionClosed(_ c: H1Connection, wasLingering: Bool) {
        poller.remove(c.fd)
        slab.release(c.index)
        spareTCPConnections.append(c)
        if wasLingering { lingeringCount -= 1 } else { openCount -= 1 }
        storeLoad()
        resumeAcceptingIfPaused()
    }

    private func resumeAcceptingIfPaused() {
        if !accepting && !stopping {
            accepting = true
            try? poller.add(listener.fd, token: Worker.listenerToken, interest: .readable)
        }
    }

    /// SIGTERM/SIGINT: stop — no new connections, idle ones closed, in-flight
    /// requests get --graceful-timeout. SIGUSR1 (from the supervisor, once a
    /// replacement is ready): drain — the same, except that idle keep-alive
    /// connections are not cut (a client may be sending on one right now):
    /// each is answered once more with `Connection: close`, or closes at its
    /// keep-alive timeout.
    private func handleSignal() {
        while true {
            let sig: Int32
            if wsgi != nil {
                // The signal thread took it (see Entry): drain its pipe.
                var b: UInt8 = 0
                while csys_read(signalFD, &b, 1) > 0 {}
                sig = csys_signal_thread_take()
                if sig == 0 { return }
                Log.info(sig == csys_sig_usr1() ? "draining (replaced)" : "signal \(sig): stopping")
                if !stopping { beginStopping(closeIdle: sig != csys_sig_usr1()) }
                return
            }
            sig = csys_signalfd_read(signalFD)
            guard sig != 0 else { return }
            if sig == csys_sig_hup() { continue }
            let soft = sig == csys_sig_usr1()
            if stopping {
                if soft { continue }
                Log.info("second signal: exiting now")
                csys_exit(0)
            }
            Log.info(soft ? "draining (replaced)" : "signal \(sig): stopping")
            beginStopping(closeIdle: !soft)
        }
    }

    private func beginStopping(closeIdle: Bool) {
        stopping = true
        storeLoad()
        hardStopping = closeIdle
        gracefulDeadline = now.adding(milliseconds: config.gracefulTimeoutMilliseconds)
        if accepting { poller.remove(listener.fd) }
        accepting = false
        // Our copy of the shared socket goes; once the supervisor's and every
        // stopping worker's copy are closed the kernel refuses new
        // connections (while a replacement holds one, it takes them).
        _ = csys_close(listener.fd)

        for c in slab.openConnections { c.beginStopping(closeIdle: closeIdle) }
        if asgi != nil { scheduleTimer() }
    }

    /// Past --graceful-timeout: what is still open is cut.
    private func enforceGracefulDeadline() {
        guard stopping, let deadline = gracefulDeadline, now >= deadline else { return }
        gracefulDeadline = nil
        let open = slab.openConnections
        if !open.isEmpty { Log.warning("graceful timeout: aborting \(open.count) connection(s)") }
        for c in open { c.cut() }
    }

    /// Heartbeat and --max-requests report to the supervisor.
    private func reportToSupervisor() {
        guard config.statusFD >= 0 else { return }
        if now.milliseconds(since: lastBeat) >= 1000 {
            lastBeat = now
            writeStatus(UInt8(ascii: "H"))
        }
        if recycleLimit > 0 && requestsServed >= recycleLimit && !recycleAsked && !stopping {
            recycleAsked = true
            writeStatus(UInt8(ascii: "Q"))
        }
    }

    func writeStatus(_ byte: UInt8) {
        var b = byte
        _ = csys_write_plain(config.statusFD, &b, 1)
    }

    // MARK: - Services for connections

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
        deferredReads.append(c.token)
        if asgi != nil { scheduleTimer() }
    }

    private func runDeferredReads() {
        guard !deferredReads.isEmpty else { return }
        let due = deferredReads
        deferredReads.removeAll(keepingCapacity: true)
        for token in due {
            slab.connection(for: token)?.onDeferredRead()
        }
    }

    func disarm(_ c: some WorkerConnection) {
        timers.cancel(c.index)
    }

    /// Parsing state for connections with a request under way; idle
    /// connections return theirs (a bounded number is kept for reuse).
    private var parsingPool: [H1RequestParsing] = []

    func takeParsing() -> H1RequestParsing {
        parsingPool.popLast() ?? H1RequestParsing(limits: limits)
    }

    func giveParsing(_ p: H1RequestParsing) {
        guard parsingPool.count < 256 else { return }
        p.head.reset()
        parsingPool.append(p)
    }

    func takeBlock() -> UnsafeMutableRawPointer { pool.take() }
    func giveBlock(_ b: UnsafeMutableRawPointer) { pool.give(b) }

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
    func waitFor(_ fd: Int32, readable: Bool, writable: Bool, milliseconds: Int) -> Bool {
        let events: Int32 = (readable ? 1 : 0) | (writable ? 2 : 0)
        let ready = GIL.released { csys_poll_one(fd, events, Int32(milliseconds)) }
        readingIsCurrent = false
        return ready == 1
    }
}
