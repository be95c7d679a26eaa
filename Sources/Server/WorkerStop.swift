import CSys
import Core
import Options

/// How this worker's life ends: the stop and drain signals it reads, the
/// stop they begin and its --graceful-timeout deadline, and the request to
/// be replaced after --max-requests.
///
/// Separate from Worker because these are one decision with its own state
/// (which signal means what, a second signal while stopping, when the
/// deadline passes, whether the recycle was already asked for), while what
/// a stop does to the listener and the connections stays the worker's.
///
/// SIGTERM/SIGINT: stop — no new connections, idle ones closed, in-flight
/// requests get --graceful-timeout. SIGUSR1 (from the supervisor, once a
/// replacement is ready): drain — the same, except that idle keep-alive
/// connections are not cut (a client may be sending on one right now):
/// each is answered once more with `Connection: close`, or closes at its
/// keep-alive timeout. SIGUSR2 is no stop: it asks for one stats line
/// (`takeStatsRequest`, see WorkerStats).
struct WorkerStop {
    private let signalFD: Int32
    /// Signals arrive through the signal thread's pipe (WSGI, see Entry),
    /// not a signalfd.
    private let fromSignalThread: Bool
    private(set) var stopping = false
    /// SIGTERM/SIGINT (not a drain): idle connections are closed.
    private(set) var hardStopping = false
    private var gracefulDeadline: Instant?
    /// --drain-delay: a stop was asked for and begins at this moment;
    /// until then the worker accepts and serves, draining (see `delaying`).
    private var delayedUntil: Instant?
    /// --max-requests plus this worker's jitter (0: never recycle).
    private let recycleLimit: Int
    private var recycleAsked = false
    /// SIGUSR2 came since the last `takeStatsRequest`.
    private var statsAsked = false

    init(config: Config, signalFD: Int32, fromSignalThread: Bool) {
        self.signalFD = signalFD
        self.fromSignalThread = fromSignalThread
        recycleLimit = config.maxRequests > 0
            ? config.maxRequests + (config.maxRequestsJitter > 0 ? Int(csys_random() % UInt32(config.maxRequestsJitter + 1)) : 0)
            : 0
    }

    /// Stopping, or told to stop while an inline WSGI call held the loop.
    var stopRequested: Bool { stopping || delaying || (fromSignalThread && csys_signal_thread_seen() != 0) }

    /// Inside --drain-delay: still accepting and serving, but the health
    /// path answers 503 and every response closes its connection.
    var delaying: Bool { delayedUntil != nil }

    /// A stop signal came and --drain-delay is set: the stop begins at
    /// `now` + `milliseconds`.
    mutating func beginDelay(now: Instant, milliseconds: Int) {
        delayedUntil = now.adding(milliseconds: milliseconds)
    }

    /// True once, when the delay is over (or `force`: a second signal cut
    /// it short); the stop begins.
    mutating func delayEnded(now: Instant, force: Bool = false) -> Bool {
        guard let until = delayedUntil, force || now >= until else { return false }
        delayedUntil = nil
        return true
    }

    /// Reads the pending signals up to the first that begins a stop: its
    /// `closeIdle` (false: a drain), or nil when none is left. A second
    /// stop signal while stopping exits the process at once.
    mutating func nextStop() -> Bool? {
        if fromSignalThread {
            // The signal thread took it (see Entry): drain its pipe.
            var b: UInt8 = 0
            while csys_read(signalFD, &b, 1) > 0 {}
            if csys_signal_thread_take_stats() != 0 { statsAsked = true }
            let sig = csys_signal_thread_take()
            if sig == 0 { return nil }
            Log.info(sig == csys_sig_usr1() ? "draining (replaced)" : "signal \(sig): stopping")
            return stopping ? nil : sig != csys_sig_usr1()
        }
        while true {
            let sig = csys_signalfd_read(signalFD)
            guard sig != 0 else { return nil }
            if sig == csys_sig_hup() { continue }
            if sig == csys_sig_usr2() {
                statsAsked = true
                continue
            }
            let soft = sig == csys_sig_usr1()
            if stopping {
                if soft { continue }
                Log.info("second signal: exiting now")
                csys_exit(0)
            }
            Log.info(soft ? "draining (replaced)" : "signal \(sig): stopping")
            return !soft
        }
    }

    /// True once per SIGUSR2 read by `nextStop` (several pending: once).
    mutating func takeStatsRequest() -> Bool {
        defer { statsAsked = false }
        return statsAsked
    }

    /// The stop begins at `now`: what is still open at the deadline is cut.
    mutating func begin(closeIdle: Bool, now: Instant, gracefulTimeoutMilliseconds: Int) {
        stopping = true
        hardStopping = closeIdle
        gracefulDeadline = now.adding(milliseconds: gracefulTimeoutMilliseconds)
    }

    /// True once, when `now` is past --graceful-timeout of a stop.
    mutating func deadlinePassed(now: Instant) -> Bool {
        guard stopping, let deadline = gracefulDeadline, now >= deadline else { return false }
        gracefulDeadline = nil
        return true
    }

    /// Time left until the graceful deadline (0 once it passed, or when
    /// not stopping).
    func millisecondsLeft(now: Instant) -> Int {
        guard let deadline = gracefulDeadline, deadline > now else { return 0 }
        return deadline.milliseconds(since: now)
    }

    /// True once, when `requestsServed` reaches --max-requests (plus jitter),
    /// or another worker thread of the process asks (`othersAsk`), before
    /// any stop: time to ask the supervisor for a replacement.
    mutating func recycleDue(requestsServed: Int, othersAsk: Bool = false) -> Bool {
        let reached = recycleLimit > 0 && requestsServed >= recycleLimit
        guard (reached || othersAsk) && !recycleAsked && !stopping else { return false }
        recycleAsked = true
        return true
    }
}
