import CSys
import Core
import Options

/// The `peregrine` process: binds the listening socket once, runs the worker
/// processes, and keeps them running.
///
/// Theory of operation. The supervisor never starts Python: it is an
/// executable of its own, without libpython, OpenSSL or the protocol code
/// (SupervisorMain). It creates the listening socket, then starts each
/// worker by executing `peregrine-worker` (beside it) with the same options
/// and `--worker LISTEN:STATUS`: the worker inherits the socket and the
/// write end of a status pipe, imports the application, and reports over the
/// pipe: `R` when it accepts connections, `H` every second from its loop
/// (a heartbeat), `Q` when it has served --max-requests.
///
/// The sockets are the supervisor's for its whole life: bound once at
/// start, or inherited (--fd, systemd socket activation, several at once)
/// and never rebound, not across SIGHUP either: replacements inherit the
/// same descriptors.
///
/// All workers accept from the one shared socket, so a worker that stops
/// accepting leaves queued connections in the kernel's queue for the others;
/// that is what makes replacement lossless (per-worker SO_REUSEPORT queues
/// would lose what was queued on a closing socket).
///
///   start ─▶ starting ─R─▶ ready ─(replaced, recycled)─▶ draining ─exit─▶ gone
///                │            └─(died, silent past --worker-timeout)─▶ replaced
///                └─(died before R, or no R within --worker-timeout: killed)─▶
///                  retried with backoff; the first generation failing ends
///                  the supervisor with its status
///
/// With --http3 it also holds the UDP sockets (DatagramGroup): each worker
/// gets a block of its own (`--worker-udp BASE:FD,...`),
/// and the steering program is re-pointed at the ready workers' blocks
/// whenever a worker becomes ready, starts draining or exits
/// (`steerNewConnections`), so new QUIC connections go to live workers
/// while draining ones keep their connections' datagrams.
///
/// Replacing (SIGHUP, --reload, --max-requests) starts the new worker
/// first; only when it reports `R` is the old one told to drain (SIGUSR1):
/// it stops accepting, answers what is in flight with `Connection: close`,
/// and exits. SIGTERM/SIGINT stop every worker gracefully (SIGTERM to
/// each); a second signal kills them at once.
final class Supervisor {
    enum State { case starting, ready, draining }

    struct WorkerRecord {
        var pid: Int32
        var statusFD: Int32
        var slot: Int
        var state: State
        var started: Instant
        var lastBeat: Instant
        var drainingSince: Instant?
        /// The worker this one replaces, told to drain once this is ready.
        var replaces: Int32?
        var recycleRequested = false
        /// Killed for not becoming ready within --worker-timeout.
        var startTimedOut = false
        /// Its slot on the load board.
        var boardSlot = 0
        /// Its block of UDP sockets (`--http3`; see DatagramGroup).
        var datagramBlock: Int?
        /// Its run of metrics blocks (`--metrics-port`; see FleetMetrics).
        var metricsRun: Int?
        /// Killed for missing heartbeats (--worker-timeout).
        var silenceKilled = false
    }

    private let config: Config
    /// The first is what `--worker` names first; all are served alike.
    private let listeners: [Listener]
    /// `--http3`: the UDP sockets and their steering.
    private let datagrams: DatagramGroup?
    private let arguments: [String]
    private let executable: String
    private let signalFD: Int32
    private var poller: Poller
    private var workers: [Int32: WorkerRecord] = [:]
    private var failures: [Int: Int] = [:]
    private var respawns: [(slot: Int, replaces: Int32?, at: Instant)] = []
    private var everReady = false
    /// Whether the start-up file pages were given back (StartupPages), once
    /// every worker of the first start was ready.
    private var startupPagesReleased = false
    /// A worker was started after that: replacing workers (SIGHUP,
    /// --reload, --max-requests, a crash) runs supervisor code that start-up
    /// alone had run, and fault-around maps 64 KiB around each page it
    /// touches (2.7 MiB of file pages measured after one SIGHUP), so the
    /// pages are given back again once the workers are settled.
    private var pagesTouchedSinceRelease = false
    private var stopping = false
    private var stopDeadline: Instant?
    /// --drain-delay: the listening sockets are shut down at this moment,
    /// the workers having drained (and accepted) until then.
    private var shutdownListenersAt: Instant?
    private var restartQueue: [Int32] = []
    private var restartInFlight: Int32?
    private var reloader: Reloader?
    private var reloadDue: Instant?
    private var reloadBroken = false
    /// SIGHUP with TLS: the `--worker check-reload` process loading the
    /// TLS files before any worker is replaced, and whether another SIGHUP
    /// came meanwhile (the files may have changed again: check again).
    private var tlsCheck: Int32?
    private var tlsCheckAgain = false
    private let workerCount: Int
    /// Load board: two slots per worker slot, so a replacement and the
    /// worker it replaces publish side by side.
    private var boardFD: Int32 = -1
    private var board: UnsafeMutablePointer<Int64>?
    private var boardNext: [Int: Int] = [:]
    /// `--metrics-port`: the counters and the endpoint serving them.
    private var metrics: FleetMetrics?
    private var metricsEndpoint: MetricsEndpoint?

    private static let signalToken: UInt64 = 1 << 62
    private static let inotifyToken: UInt64 = 1 << 62 | 1
    /// Startup failures in a row (per worker slot) before giving up.
    static let maxStartupFailures = 5

    init(config: Config, listeners: [Listener], datagrams: DatagramGroup?, arguments: [String],
         workerExecutable: String) throws(StartupFailure) {
        self.config = config
        self.listeners = listeners
        self.datagrams = datagrams
        self.arguments = arguments
        executable = workerExecutable
        workerCount = config.workerProcesses
        signalFD = csys_signalfd_open(1)
        _ = csys_reopen_block()  // see relayReopen
        if workerCount > 1 {
            boardFD = csys_board_create(Int32(2 * workerCount))
            if boardFD >= 0, let b = csys_board_map(boardFD, Int32(2 * workerCount)) {
                board = b
                for i in 0..<(2 * workerCount) { csys_board_store(b, Int32(i), Int64.max) }
            }
        }
        do {
            poller = try Poller()
            try poller.add(signalFD, token: Supervisor.signalToken, interest: .readable)
        } catch {
            throw StartupFailure(error.description)
        }
        if let port = config.metricsPort {
            (metrics, metricsEndpoint) = try FleetMetrics.serve(config, port: port, poller: poller)
        }
        if config.reload {
            let dirs = config.reloadDirs.isEmpty ? ["."] : config.reloadDirs
            let patterns = config.reloadIncludes.isEmpty ? ["*.py"] : config.reloadIncludes
            guard let r = Reloader(directories: dirs, patterns: patterns) else {
                throw StartupFailure("--reload: cannot watch \(dirs.joined(separator: ", ")) (inotify)")
            }
            reloader = r
            try? poller.add(r.fd, token: Supervisor.inotifyToken, interest: .readable)
        }
    }

    /// Runs until stopped; returns the exit status.
    func run() -> Int32 {
        Log.info("supervisor \(csys_getpid()) starting \(workerCount) worker\(workerCount == 1 ? "" : "s")"
                 + (config.reload ? ", reloading on changes" : ""))
        // One worker first: if the application cannot even be imported, one
        // worker says why (not N copies of the same traceback); the others
        // start once it is ready.
        spawn(slot: 0, replaces: nil)
        while true {
            let n = poller.wait(timeoutMilliseconds: 200)
            let now = Instant.now()
            for i in 0..<n {
                let (token, _) = poller.event(at: i)
                if token == Supervisor.signalToken {
                    if let status = handleSignals() { return status }
                } else if token == Supervisor.inotifyToken {
                    if reloader?.changed() == true { reloadDue = now.adding(milliseconds: 300) }
                } else if let endpoint = metricsEndpoint, endpoint.handle(token, poller: poller, now: now, render: renderMetrics) {
                    continue
                } else {
                    readStatus(pid: Int32(truncatingIfNeeded: token))
                }
            }
            if let status = reap() { return status }
            metricsEndpoint?.expire(poller: poller, now: now)
            if stopping {
                if workers.isEmpty { return 0 }
                if let at = shutdownListenersAt, now >= at {
                    shutdownListenersAt = nil
                    shutdownListeners()
                }
                if let d = stopDeadline, now >= d { killAll(); stopDeadline = nil }
                continue
            }
            checkHeartbeats(now)
            releasePagesOnceSettled()
            let due = respawns.filter { $0.at <= now }
            respawns.removeAll { $0.at <= now }
            for r in due {
                let replaces = r.replaces.flatMap { workers[$0]?.state == .ready ? $0 : nil }
                let pid = spawnReturningPid(slot: r.slot, replaces: replaces)
                if replaces != nil && restartInFlight == nil { restartInFlight = pid }
            }
            if let d = reloadDue, now >= d {
                reloadDue = nil
                Log.info("source changed: restarting workers")
                reloadBroken = false
                startRollingRestart()
            }
        }
    }

    // MARK: - Workers

    private func spawn(slot: Int, replaces: Int32?) {
        // Every path that starts a worker passes here; none may once stopAll
        // has sent its SIGTERMs.
        guard !stopping else { return }
        if startupPagesReleased { pagesTouchedSinceRelease = true }
        var fds: [Int32] = [0, 0]
        guard csys_pipe(&fds) == 0 else {
            Log.error("cannot create a status pipe: \(SystemError(call: "pipe2", errno: csys_errno()))")
            return
        }
        var workerArg = listeners.map { "\($0.fd)" }.joined(separator: ",") + ":\(fds[1])"
        var keep: [Int32] = listeners.map(\.fd) + [fds[1]]
        var boardSlot = 0
        if let board {
            let bit = boardNext[slot] ?? 0
            boardNext[slot] = bit ^ 1
            boardSlot = 2 * slot + bit
            csys_board_store(board, Int32(boardSlot), Int64.max)
            workerArg += ":\(boardFD):\(boardSlot):\(2 * workerCount)"
            keep.append(boardFD)
        }
        var extra = ["--worker", workerArg]
        let metricsRun = metrics?.assignRun()
        if let metricsRun, let fd = metrics?.region.fd {
            extra += ["--worker-metrics", metricsRun.argument]
            keep.append(fd)
        } else if metrics != nil {
            Log.warning("worker in slot \(slot) starts without metrics: every metrics block is held")
        }
        var datagramBlock: Int?
        if let datagrams {
            let draining = workers.values.filter { $0.slot == slot && $0.state == .draining }
                .sorted { ($0.drainingSince?.nanoseconds ?? 0) < ($1.drainingSince?.nanoseconds ?? 0) }.map(\.pid)
            let (block, argument, fds) = datagrams.assign(slot: slot, drainingOldestFirst: draining)
            datagramBlock = block
            extra += ["--worker-udp", argument]
            keep += fds
        }
        let pid = spawnProcess(executable, arguments: arguments + extra, keeping: keep)
        _ = csys_close(fds[1])
        guard pid > 0 else {
            _ = csys_close(fds[0])
            Log.error("cannot start a worker: \(SystemError(call: "fork", errno: csys_errno()))")
            if let metricsRun { metrics?.unassign(metricsRun.run) }
            return
        }
        metrics?.started(slot: slot)
        let now = Instant.now()
        workers[pid] = WorkerRecord(pid: pid, statusFD: fds[0], slot: slot, state: .starting, started: now,
                                    lastBeat: now, replaces: replaces, boardSlot: boardSlot, datagramBlock: datagramBlock,
                                    metricsRun: metricsRun?.run)
        if let datagramBlock { datagrams?.hold(datagramBlock, by: pid) }
        try? poller.add(fds[0], token: UInt64(UInt32(bitPattern: pid)), interest: .readable)
        Log.debug("started worker \(pid) (slot \(slot))")
    }

    private func readStatus(pid: Int32) {
        guard var rec = workers[pid] else { return }
        var buf: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        let n = withUnsafeMutableBytes(of: &buf) { csys_read(rec.statusFD, $0.baseAddress, $0.count) }
        if n <= 0 {
            if n == 0 || csys_eagain(csys_errno()) == 0 {
                poller.remove(rec.statusFD)
                _ = csys_close(rec.statusFD)
                rec.statusFD = -1
                workers[pid] = rec
            }
            return
        }
        let now = Instant.now()
        rec.lastBeat = now
        withUnsafeBytes(of: &buf) { bytes in
            for b in bytes.prefix(n) {
                switch b {
                case UInt8(ascii: "R"): becameReady(&rec)
                case UInt8(ascii: "Q"):
                    if rec.state == .ready && !rec.recycleRequested && !stopping {
                        rec.recycleRequested = true
                        Log.info("worker \(pid) served --max-requests: replacing it")
                        workers[pid] = rec
                        spawn(slot: rec.slot, replaces: pid)
                    }
                default: break
                }
            }
        }
        if workers[pid] != nil { workers[pid]!.lastBeat = now; workers[pid]!.state = rec.state }
    }

    private func becameReady(_ rec: inout WorkerRecord) {
        guard rec.state == .starting else { return }
        rec.state = .ready
        workers[rec.pid] = rec
        failures[rec.slot] = 0
        // Stopping: this worker already has its SIGTERM (stopAll), and what
        // a ready worker would set off — the other workers' first start, the
        // next step of a rolling restart — must not start workers nobody
        // would stop.
        if stopping { return }
        if !everReady {
            everReady = true
            for listener in listeners {
                var origin = ""
                if listener.inherited {
                    origin = " (inherited descriptor \(listener.fd)" + (listener.name.map { ", systemd name '\($0)'" } ?? "") + ")"
                }
                Log.info("listening on \(listener.displayURL)\(origin)")
            }
            if let datagrams { Log.info("HTTP/3 on UDP port \(datagrams.port)") }
            if workerCount > 1 { for slot in 1..<workerCount { spawn(slot: slot, replaces: nil) } }
        }
        if let old = rec.replaces, var oldRec = workers[old], oldRec.state != .draining {
            oldRec.state = .draining
            oldRec.drainingSince = Instant.now()
            workers[old] = oldRec
            _ = csys_kill(old, csys_sig_usr1())
            Log.info("worker \(rec.pid) ready; worker \(old) draining")
        }
        steerNewConnections()
        if !startupPagesReleased && workers.values.count(where: { $0.state == .ready }) >= workerCount {
            // Every worker has started: the supervisor's own start-up code
            // (option parsing, binding, spawning) is done with.
            startupPagesReleased = true
            StartupPages.release()
        }
        if restartInFlight == rec.pid {
            restartInFlight = nil
            continueRollingRestart()
        } else if restartInFlight == nil && !restartQueue.isEmpty {
            // The worker a rolling restart was replacing died meanwhile, and
            // this one took its slot instead: the restart goes on from here.
            continueRollingRestart()
        }
    }

    /// Reaps exited workers; returns an exit status when the supervisor
    /// must end.
    private func reap() -> Int32? {
        while true {
            var status: Int32 = 0, signal: Int32 = 0
            let pid = csys_reap(&status, &signal)
            if pid <= 0 { return nil }
            if pid == tlsCheck {
                tlsCheckFinished(status: status, signal: signal)
                continue
            }
            guard let rec = workers.removeValue(forKey: pid) else { continue }
            metrics?.exited(run: rec.metricsRun, cause: .of(rec.silenceKilled, rec.startTimedOut, signal: signal,
                                                             recycled: rec.recycleRequested, draining: rec.state == .draining,
                                                             stopping: stopping))
            if let board { csys_board_store(board, Int32(rec.boardSlot), Int64.max) }
            if let datagrams {
                datagrams.release(pid: pid)
                steerNewConnections()
            }
            if rec.statusFD >= 0 {
                poller.remove(rec.statusFD)
                _ = csys_close(rec.statusFD)
            }
            let how = rec.startTimedOut ? "not ready within --worker-timeout, \(config.workerTimeoutMilliseconds) ms"
                : signal != 0 ? "killed by signal \(signal)" : "exited with status \(status)"
            if stopping || rec.state == .draining {
                Log.info("worker \(pid) \(how)")
                continue
            }
            if rec.state == .starting {
                if restartInFlight == pid { restartInFlight = nil }
                if config.reload {
                    Log.error("worker \(pid) failed to start (\(how)); waiting for a change to the source")
                    reloadBroken = true
                    if rec.replaces == nil && !workers.values.contains(where: { $0.slot == rec.slot }) {
                        restartQueue.removeAll()
                    }
                    continue
                }
                if !everReady {
                    // The first workers cannot start (an import error, a
                    // missing attribute...): the worker has said why.
                    if signal != 0 { Log.writeAll(2, "peregrine: error: the worker failed to start (\(how))\n") }
                    killAll()
                    return signal != 0 ? 1 : (status == 0 ? 1 : status)
                }
                let count = (failures[rec.slot] ?? 0) + 1
                failures[rec.slot] = count
                if count >= Supervisor.maxStartupFailures {
                    Log.error("a worker failed to start \(count) times in a row (last: \(how)); giving up")
                    stopAll()
                    killAll()
                    return 1
                }
                let delay = 500 << (count - 1)
                Log.error("worker \(pid) failed to start (\(how)); retrying in \(delay) ms")
                // A failed replacement leaves the old worker serving; the
                // replacement is tried again after the delay.
                respawns.append((rec.slot, rec.replaces, Instant.now().adding(milliseconds: delay)))
                continue
            }
            // Its replacement may be on its way already (a rolling restart's,
            // --max-requests', or a start being retried): that one takes the
            // slot. Another would leave the slot two workers for good, each
            // later SIGHUP replacing both.
            if let successor = workers.values.first(where: { $0.slot == rec.slot && $0.state != .draining }) {
                Log.warning("worker \(pid) \(how); worker \(successor.pid) replaces it")
                continue
            }
            if respawns.contains(where: { $0.slot == rec.slot }) {
                Log.warning("worker \(pid) \(how); its replacement is about to start")
                continue
            }
            Log.warning("worker \(pid) \(how); starting a replacement")
            spawn(slot: rec.slot, replaces: nil)
        }
    }

    private func checkHeartbeats(_ now: Instant) {
        for rec in workers.values {
            switch rec.state {
            case .starting where config.workerTimeoutMilliseconds > 0 && !rec.startTimedOut:
                // An import or a lifespan startup that never finishes would
                // otherwise hold a rolling restart (or the first start) forever.
                if now.milliseconds(since: rec.started) > config.workerTimeoutMilliseconds {
                    Log.error("worker \(rec.pid) did not become ready within \(config.workerTimeoutMilliseconds) ms (--worker-timeout); killing it")
                    _ = csys_kill(rec.pid, csys_sig_kill())
                    workers[rec.pid]!.startTimedOut = true
                }
            case .ready where config.workerTimeoutMilliseconds > 0:
                if now.milliseconds(since: rec.lastBeat) > config.workerTimeoutMilliseconds {
                    Log.error("worker \(rec.pid) has not responded for \(now.milliseconds(since: rec.lastBeat)) ms (--worker-timeout); killing it")
                    _ = csys_kill(rec.pid, csys_sig_kill())
                    workers[rec.pid]!.lastBeat = now
                    workers[rec.pid]!.silenceKilled = true
                }
            case .draining:
                // A draining worker enforces --graceful-timeout itself unless
                // it is stuck; then it is killed a little later.
                if let since = rec.drainingSince,
                   now.milliseconds(since: since) > config.gracefulTimeoutMilliseconds + 5000 {
                    Log.error("worker \(rec.pid) did not finish draining; killing it")
                    _ = csys_kill(rec.pid, csys_sig_kill())
                    workers[rec.pid]!.drainingSince = now
                }
            default:
                break
            }
        }
    }

    /// New QUIC connections go to the ready workers' UDP sockets (not to
    /// draining or starting ones); called whenever a worker becomes ready,
    /// starts draining or exits.
    private func steerNewConnections() {
        guard let datagrams else { return }
        let blocks = workers.values.filter { $0.state == .ready }.compactMap(\.datagramBlock)
        do {
            try datagrams.steerNewConnections(to: blocks)
        } catch {
            Log.error(error.message)
        }
    }

    // MARK: - Rolling restart

    private func startRollingRestart() {
        restartQueue = workers.values.filter { $0.state == .ready }.sorted { $0.slot < $1.slot }.map(\.pid)
        if workers.values.allSatisfy({ $0.state == .draining }) || workers.isEmpty {
            // Nothing is serving (a broken start under --reload): start afresh.
            for slot in 0..<workerCount { spawn(slot: slot, replaces: nil) }
            return
        }
        if restartInFlight == nil { continueRollingRestart() }
    }

    /// Gives the file pages back again after workers were replaced, once
    /// nothing is under way: every slot has one ready worker, none starts or
    /// drains, and no replacement, respawn or TLS check is pending.
    private func releasePagesOnceSettled() {
        guard pagesTouchedSinceRelease, restartInFlight == nil, restartQueue.isEmpty, respawns.isEmpty,
              tlsCheck == nil, workers.count == workerCount,
              workers.values.allSatisfy({ $0.state == .ready }) else { return }
        pagesTouchedSinceRelease = false
        StartupPages.release()
    }

    private func continueRollingRestart() {
        while let pid = restartQueue.first {
            restartQueue.removeFirst()
            guard let rec = workers[pid], rec.state == .ready else { continue }
            let newPid = spawnReturningPid(slot: rec.slot, replaces: pid)
            restartInFlight = newPid
            return
        }
    }

    private func spawnReturningPid(slot: Int, replaces: Int32?) -> Int32? {
        let before = Set(workers.keys)
        spawn(slot: slot, replaces: replaces)
        return workers.keys.first { !before.contains($0) }
    }

    // MARK: - TLS check on SIGHUP

    /// New workers read the certificate, key, password and OCSP files
    /// again. A replacement that cannot load them would fail to start over
    /// and over (each failure logged, the supervisor giving up after
    /// `maxStartupFailures`), so the files are checked first, by the worker
    /// executable (this process has no OpenSSL), without blocking this
    /// loop. If they do not load, the check has logged one error line and
    /// no worker is replaced.
    private func startTLSCheck() {
        if tlsCheck != nil {
            tlsCheckAgain = true
            return
        }
        let pid = spawnProcess(executable, arguments: arguments + ["--worker", "check-reload"])
        guard pid > 0 else {
            Log.error("SIGHUP: cannot run \(executable) to check the TLS files (\(SystemError(call: "fork", errno: csys_errno()))); no worker replaced")
            return
        }
        tlsCheck = pid
        Log.debug("SIGHUP: checking the TLS files (process \(pid))")
    }

    private func tlsCheckFinished(status: Int32, signal: Int32) {
        tlsCheck = nil
        if stopping { return }
        if tlsCheckAgain {
            tlsCheckAgain = false
            startTLSCheck()
            return
        }
        if signal == 0 && status == 0 {
            Log.info("SIGHUP: TLS files loaded; replacing workers one by one")
            startRollingRestart()
        } else if signal != 0 || status != 2 {
            // Status 2 is the check's own verdict, already logged.
            let how = signal != 0 ? "was killed by signal \(signal)" : "exited with status \(status)"
            Log.error("SIGHUP: the TLS check \(how); no worker replaced")
        }
    }

    // MARK: - Signals

    private func handleSignals() -> Int32? {
        while true {
            let sig = csys_signalfd_read(signalFD)
            if sig == 0 { return nil }
            if sig == csys_sig_chld() { continue }  // reaped after the event loop pass
            if sig == csys_sig_usr1() { relayReopen(); continue }
            if sig == csys_sig_usr2() {
                relayStatsRequest()
                continue
            }
            if sig == csys_sig_hup() {
                guard !stopping else { continue }
                if config.tlsEnabled {
                    startTLSCheck()
                } else {
                    Log.info("SIGHUP: replacing workers one by one")
                    startRollingRestart()
                }
            } else if sig == csys_sig_int() || sig == csys_sig_term() {
                if stopping {
                    Log.info("second signal: stopping now")
                    killAll()
                    return 0
                }
                let delay = config.drainDelayMilliseconds
                Log.info("signal \(sig): stopping gracefully (up to \(config.gracefulTimeoutMilliseconds) ms"
                         + (delay > 0 ? ", after a --drain-delay of \(delay) ms)" : ")"))
                stopAll()
            }
        }
    }

    /// SIGUSR1 to the supervisor: log files are reopened (logrotate). The
    /// supervisor writes only to standard error; each worker reopens its
    /// --access-log-file on the reopen signal (SIGRTMIN+1, not SIGUSR1,
    /// which tells a worker to drain). The supervisor keeps that signal
    /// blocked, so workers start with it blocked until their handler is in
    /// place (csys_reopen_block).
    private func relayReopen() {
        Log.info("SIGUSR1: reopening log files")
        for pid in workers.keys { _ = csys_kill(pid, csys_sig_reopen()) }
    }

    /// SIGUSR2: every worker (a draining one too) logs one JSON line of
    /// stats (WorkerStats); the supervisor serves no connections itself.
    private func relayStatsRequest() {
        for pid in workers.keys { _ = csys_kill(pid, csys_sig_usr2()) }
    }

    private func stopAll() {
        stopping = true
        let now = Instant.now()
        let delay = config.drainDelayMilliseconds
        // Refuse new connections now, in every worker at once (the socket
        // is shared); in-flight requests go on. Under --drain-delay the
        // workers accept on until the delay ends (they got SIGTERM now and
        // answer health checks with 503 meanwhile).
        if delay > 0 {
            shutdownListenersAt = now.adding(milliseconds: delay)
        } else {
            shutdownListeners()
        }
        respawns.removeAll()
        stopDeadline = now.adding(milliseconds: delay + config.gracefulTimeoutMilliseconds + 5000)
        for pid in workers.keys { _ = csys_kill(pid, csys_sig_term()) }
    }

    /// An inherited socket is left alone: its parent (systemd) keeps it
    /// and its queue for the next start.
    private func shutdownListeners() {
        for listener in listeners where !listener.inherited { _ = csys_shutdown_listener(listener.fd) }
    }

    /// The `/metrics` body (see FleetMetrics).
    private func renderMetrics() -> String {
        metrics?.render(workers.values.map {
            FleetMetrics.Live(slot: $0.slot, pid: $0.pid, run: $0.metricsRun, state: "\($0.state)")
        }) ?? ""
    }

    private func killAll() {
        for pid in workers.keys { _ = csys_kill(pid, csys_sig_kill()) }
    }
}
