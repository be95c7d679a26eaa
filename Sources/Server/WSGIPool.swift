import CSys
import Core
import Gateway
import PyBridge

/// A worker's pool of WSGI application threads (--wsgi-threads N > 1), from
/// the loop thread's side.
///
/// Theory of operation. The worker's loop thread keeps owning every
/// connection, socket, buffer, timer and HTTP/2 session; the N pool threads
/// (`WSGIPoolThread`) only run Python. A complete request goes to a free
/// thread (`serve`); while the application runs, each transport operation
/// it needs (a body read, a block of response, a file, the end) comes back
/// to the loop thread as a hand-off:
///
///     pool thread                         loop thread
///     operation = op; push(number) ──────▶ doorbell (eventfd, in the poller)
///     wait(signal)  [GIL released]         pop → PooledRequest.perform
///                                          ... transport events (bodyReady,
///                                              outputDrained, exchangeEnded) ...
///     ◀──────────────────────────────────── answer; post(signal)
///
/// Each thread has at most one operation pending, so the queue is bounded
/// by N, and an operation waits on the loop thread only for its own
/// transport (a parked read or write), never blocking the loop.
///
/// Admission and backpressure are `PoolAdmission`'s: at most N requests in
/// flight; then connections wait for a thread in arrival order (an HTTP/1.1
/// connection with its head unread in its buffer and its socket no longer
/// read; an HTTP/2 session with its new streams held, see H2Session); with
/// N waiting as well, the worker stops accepting (`holdsAccepting`), so
/// further clients wait in the kernel.
final class WSGIPool {
    unowned(unsafe) let worker: Worker
    let threads: [WSGIPoolThread]
    private var admission: PoolAdmission
    let doorbell: Int32
    private let queue: OpaquePointer
    /// A thread set aside for the waiter being resumed (see `resumeWaiters`).
    private var reserved: Int?
    private var started = false

    init(worker: Worker, gateways: [WSGIGateway], fieldCapacity: Int, maxConnections: Int) throws(SystemError) {
        self.worker = worker
        let bell = csys_doorbell_open()
        guard bell >= 0 else { throw SystemError(call: "eventfd", errno: csys_errno()) }
        doorbell = bell
        queue = csys_handoff_queue_create(Int32(gateways.count), bell)!
        var made: [WSGIPoolThread] = []
        for (i, g) in gateways.enumerated() {
            made.append(WSGIPoolThread(number: i, gateway: g, queue: queue, fieldCapacity: fieldCapacity))
        }
        threads = made
        admission = PoolAdmission(threads: gateways.count, waitListLimit: gateways.count, maxWaiters: maxConnections + 1)
    }

    /// Starts the threads (once, from the loop thread, holding the GIL).
    /// False if one could not start: a request handed to it would wait for
    /// ever, so the worker must not serve (a later call is false too).
    func start() -> Bool {
        guard !started else { return startedAll }
        started = true
        for t in threads where !t.start() {
            Log.error("cannot start WSGI application thread \(t.number)")
            startedAll = false
        }
        return startedAll
    }
    private var startedAll = true

    // MARK: - Admission

    /// A thread for a request that arrived now, or nil: it must wait.
    func takeThread() -> Int? {
        if let r = reserved {
            reserved = nil
            return r
        }
        return admission.takeThread()
    }

    /// A thread taken for a request that was refused before reaching the
    /// application.
    func giveBack(_ thread: Int) {
        admission.release(thread)
        resumeWaiters()
    }

    /// `token`'s connection has a request waiting for a thread; it is told
    /// (`WorkerConnection.poolThreadFree`) when one is free for it. A
    /// connection waits at most once at a time.
    func wait(_ token: UInt64) {
        if !admission.wait(token) { Log.error("WSGI pool wait list overflow (a connection waited twice)") }
        if admission.holdsAccepting { worker.holdAccepting() }
    }

    /// Every thread busy and the wait list full: accepting stops.
    var holdsAccepting: Bool { admission.holdsAccepting }

    // MARK: - Requests

    /// Runs `request` on `thread` (from `takeThread`). The transport's
    /// events go to the request's `PooledRequest` from now on.
    func serve(_ request: GatewayRequest, transport: some ExchangeTransport, thread number: Int) {
        let t = threads[number]
        // The connection's TLS variables are a dict made on first use and
        // kept: made here, so concurrent streams of one connection on
        // several threads only read it.
        if let tls = request.peer.tls { _ = tls.wsgiVariables() }
        let r = PooledRequest(thread: t, transport: transport)
        transport.attach(r)
        t.request = r
        t.startedAt = worker.now
        t.reportedStuck = false
        t.job = .serve(t.adopt(request), token: worker.nextRequestToken())
        csys_slot_signal_post(t.signal)
    }

    /// The doorbell rang: performs every operation the threads handed over.
    func onDoorbell() {
        _ = csys_doorbell_clear(doorbell)
        while true {
            let n = Int(csys_handoff_pop(queue))
            guard n >= 0 else { break }
            let t = threads[n]
            guard let r = t.request else {
                // Not a request's operation: cannot happen (a thread hands
                // over only while it runs one). Answer so it never hangs.
                t.answer = .sent(false)
                csys_slot_signal_post(t.signal)
                continue
            }
            if case .done = t.operation {
                t.request = nil
                r.pythonFinished()
                admission.release(n)
                resumeWaiters()
            } else {
                r.perform()
            }
        }
    }

    /// Gives free threads to waiting connections, oldest first.
    private func resumeWaiters() {
        while let token = admission.nextWaiter() {
            reserved = admission.takeThreadForWaiter()
            worker.poolThreadFree(for: token)
            if let unused = reserved {
                // Closed meanwhile, or its request was refused: next.
                reserved = nil
                admission.release(unused)
            }
        }
        if !admission.holdsAccepting { worker.releaseAccepting() }
    }

    // MARK: - Health and stop

    /// Logs, once per request, a thread whose request has run past
    /// `milliseconds`; true when every thread is in that state (the worker
    /// cannot serve anything new: its heartbeat stops, as an inline
    /// worker's does during a call that long, and the supervisor replaces
    /// it).
    func allStuck(now: Instant, milliseconds: Int) -> Bool {
        guard milliseconds > 0 else { return false }
        var stuck = 0
        for t in threads where t.request != nil && now.milliseconds(since: t.startedAt) >= milliseconds {
            stuck += 1
            if !t.reportedStuck {
                t.reportedStuck = true
                Log.warning("WSGI pool thread \(t.number) has run one request for over \(milliseconds / 1000) s")
            }
        }
        return stuck == threads.count
    }

    /// The loop has ended (every connection is closed, so every request's
    /// exchange has ended): answers what the threads still hand over (each
    /// fails at once) until each has finished its request and left, for up
    /// to `milliseconds`.
    func shutdown(milliseconds: Int) {
        guard started else { return }
        var naps = max(milliseconds, 0) / 5 + 1
        var told = Set<Int>()
        while true {
            onDoorbell()
            for t in threads where t.request == nil && !told.contains(t.number) {
                told.insert(t.number)
                t.job = .exit
                csys_slot_signal_post(t.signal)
            }
            if threads.allSatisfy({ $0.exited }) { return }
            naps -= 1
            if naps <= 0 {
                Log.warning("WSGI pool threads still running after the graceful timeout: exiting")
                return
            }
            GIL.released { csys_sleep_milliseconds(5) }
        }
    }
}
