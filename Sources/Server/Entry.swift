import CPython
import CSys
import Core
import Gateway
import Options
import PyBridge

/// The `peregrine-worker` executable, started by the `peregrine` supervisor
/// (Supervision) with the user's options and the hidden `--worker
/// LISTEN:STATUS[...]`: start Python, import the application, serve from
/// the inherited socket. With `--worker check` it only loads the TLS files
/// and exits (0, or one `peregrine: error:` line and 2). Every startup
/// problem is one `peregrine: error:` line on standard error and exit
/// status 2.
public enum Main {
    public static func run() -> Never {
        var config = ProcessStart.configuration()
        // Before anything else, and before Python: see KeyPasswordHandoff.
        KeyPasswordHandoff.take(into: &config)
        Log.level = config.logLevel
        Log.format = config.logFormat
        // The supervisor relays SIGUSR1 as the reopen signal; until now it
        // was blocked (inherited from the supervisor).
        _ = csys_reopen_handler_install()
        csys_ignore_sigpipe()
        do {
            if config.checkOnly && config.checkBeforeRestart {
                TLSSetup.checkBeforeRestart(config)
            } else if config.checkOnly {
                try TLSSetup.check(config)
            } else if config.isWorker {
                try serve(config)
            } else {
                ProcessStart.fail("peregrine-worker is started by peregrine; run peregrine")
            }
        } catch {
            if let detail = error.detail, !detail.isEmpty { Log.writeAll(2, detail.hasSuffix("\n") ? detail : detail + "\n") }
            ProcessStart.fail(error.message)
        }
        csys_exit(0)
    }

    static func serve(_ config: Config) throws(StartupFailure) {
        // The launcher names the Python it runs under; run directly, an
        // active virtualenv is honoured; otherwise the build's interpreter.
        var programName = environment("PEREGRINE_PYTHON_EXECUTABLE")
        if let p = programName, !fileExists(p) {
            throw StartupFailure("PEREGRINE_PYTHON_EXECUTABLE names \(p), which does not exist")
        }
        if programName == nil, let venv = environment("VIRTUAL_ENV"), fileExists(venv + "/bin/python") {
            programName = venv + "/bin/python"
        }
        // Before Python starts: the ticket secret leaves the environment.
        let (tlsContext, quicTLSContext, statelessSecret) = try TLSSetup.workerContexts(config)
        // --scheme forces what every request reports; else TLS decides.
        let scheme: StaticString = switch config.scheme {
        case .https?: "https"
        case .http?: "http"
        case nil: tlsContext == nil ? "http" : "https"
        }
        // --app-dir: after the TLS files (relative to where peregrine was
        // started), before Python: the import sees DIR as "." and sys.path[0].
        var pythonPaths = config.pythonPaths
        if let dir = config.appDir {
            guard let absolute = enterAppDirectory(dir) else {
                throw StartupFailure("--app-dir: cannot change to \(dir): \(SystemError(call: "chdir", errno: csys_errno()))")
            }
            // Before every --python-path (test_config_sources checks it).
            pythonPaths.insert(absolute, at: 0)
        }
        do {
            try Interpreter.start(programName: programName, argv: ["peregrine"], pythonPaths: pythonPaths)
            try Runtime.install()
        } catch {
            throw StartupFailure(error.message, detail: error.traceback)
        }
        if config.freeThreaded && Interpreter.gilEnabled {
            throw StartupFailure("--free-threaded needs a free-threaded Python (3.13t or later, built with --disable-gil): "
                                 + "Python \(Interpreter.version) at \(Interpreter.prefix) runs with the GIL")
        }
        if !Runtime.shareCodeConstants() {
            Log.warning("could not make compiled modules keep immortal constants; threads may contend on them")
        }
        let app: PyRef
        do {
            app = try Interpreter.loadApplication(config.app, factory: config.factory)
        } catch {
            throw StartupFailure(error.message, detail: error.traceback)
        }
        if config.freeThreaded && Interpreter.gilEnabled {
            // CPython said which module in its own RuntimeWarning (above).
            Log.warning("importing \(config.app) enabled the GIL (an extension module that does not declare "
                        + "free-threading support): the worker threads serve on, one at a time")
        }
        var proto = config.appProtocol
        if proto == .auto {
            switch Runtime.detectProtocol(app) {
            case "asgi": proto = .asgi
            case "wsgi": proto = .wsgi
            default:
                throw StartupFailure("cannot tell whether '\(config.app)' is a WSGI or an ASGI application; pass --protocol wsgi or --protocol asgi")
            }
        }
        if proto == .asgi { _ = Runtime.prepareASGI(useUVLoop: config.uvloop) }
        let signalFD: Int32
        if proto == .wsgi {
            // A WSGI call may block the main thread: signals go to a thread
            // of their own, which wakes the loop through a pipe.
            var fds: [Int32] = [0, 0]
            _ = csys_block_stop_signals()
            guard csys_pipe(&fds) == 0, csys_signal_thread_start(fds[1], config.gracefulTimeoutMilliseconds) == 0 else {
                throw StartupFailure("cannot start the signal thread")
            }
            signalFD = fds[0]
        } else {
            signalFD = csys_signalfd_open(0)
        }
        let contexts = config.workerContexts()
        let group = contexts > 1 ? WorkerGroup(count: contexts) : nil
        // With no supervisor's board to share, the threads get one of their
        // own: accepting spreads across them as across processes.
        var own = config
        let threadBoard = contexts > 1 && config.boardFD < 0
        if threadBoard {
            own.boardFD = csys_board_create(Int32(contexts))
            own.boardSlots = contexts
            if own.boardFD >= 0, let b = csys_board_map(own.boardFD, Int32(contexts)) {
                for i in 0..<contexts { csys_board_store(b, Int32(i), Int64.max) }
            }
        }
        // Every context is made here, on the main thread with the GIL held,
        // before any other thread exists (see ProcessObject in PyBridge).
        var workers: [Worker] = []
        for index in 0..<contexts {
            workers.append(try makeContext(index, of: contexts, config: own, proto: proto, app: app,
                                           scheme: scheme, signalFD: signalFD, group: group, threadBoard: threadBoard))
        }
        let worker = workers[0]
        let others = Array(workers.dropFirst())
        for w in workers {
            // Two board slots per worker slot (a replacement and the worker
            // it replaces, see Supervisor.spawn).
            w.slot = threadBoard ? 0 : config.boardSlot / 2
            w.tlsContext = tlsContext
            if let quicTLSContext { w.enableHTTP3(tls: quicTLSContext, statelessSecret: statelessSecret) }
        }
        // --lifespan-scope process: the one lifespan runs on worker 0's
        // loop, and the other threads start only once its startup is
        // complete, with its state. Otherwise each thread runs its own
        // (worker scope), or none (--no-lifespan, WSGI), and they all start
        // now.
        let processLifespan = proto == .asgi && config.lifespan && config.lifespanScope == .process && group != nil
        if !processLifespan && !WorkerContexts.start(others, group: group, app: app, config: config,
                                                     lifespan: .own(config.lifespan)) {
            throw StartupFailure("a worker thread could not start (see above)")
        }
        let kind = config.freeThreaded ? "worker threads" : "worker contexts"
        let banner = "peregrine \(peregrineVersion) serving \(config.app) with Python \(Interpreter.version) (prefix \(Interpreter.prefix))"
            + (contexts > 1 ? " in \(contexts) \(kind)" : "")
            + (processLifespan ? " (one lifespan for the process)" : "")
        if proto == .asgi {
            worker.outlivesOthers = processLifespan
            var othersFailed = false
            do {
                try worker.runAsync(app: app, lifespan: config.lifespan, uvloop: config.uvloop) { loopName in
                    if processLifespan && !WorkerContexts.start(others, group: group, app: app, config: config,
                                                                lifespan: .shared(worker.asgi?.state)) {
                        othersFailed = true
                        worker.abandonStart()
                        return
                    }
                    Log.info(banner + " (ASGI on \(loopName))")
                    worker.writeStatus(UInt8(ascii: "R"))
                    // The application is imported and its lifespan has run.
                    StartupPages.release()
                }
            } catch {
                throw StartupFailure(error.message, detail: error.traceback)
            }
            if othersFailed { throw StartupFailure("a worker thread could not start (see above)") }
        } else {
            guard worker.startPool() else { throw StartupFailure("cannot start the WSGI application threads (--wsgi-threads)") }
            Log.info(banner + " (WSGI)" + (config.wsgiThreads > 1 ? " on \(config.wsgiThreads) application threads per worker" : ""))
            worker.writeStatus(UInt8(ascii: "R"))
            StartupPages.release()
            worker.run()
        }
        // The other threads stop with this one (WorkerGroup.stopOthers):
        // the process ends when they are done or their time is up (under a
        // process lifespan worker 0's loop already waited, see
        // Worker.outlivesOthers).
        if !worker.gaveUpOnOthers {
            group?.waitForOthers(milliseconds: config.gracefulTimeoutMilliseconds + 1000)
        }
        Log.info("worker stopped after \(worker.requestsServed) requests")
    }

    /// One worker context: its own listening descriptor, poller, connection
    /// table and gateway. Context 0 is the process's worker as the
    /// supervisor knows it (signals, status pipe, load board); the others
    /// (see `WorkerContexts`) only serve.
    private static func makeContext(_ index: Int, of contexts: Int, config: Config, proto: AppProtocol,
                                    app: PyRef, scheme: StaticString, signalFD: Int32,
                                    group: WorkerGroup?, threadBoard: Bool) throws(StartupFailure) -> Worker {
        var own = config
        if contexts > 1 {
            own.workers = max(config.workers, contexts)  // several acceptors: one connection per wake-up
            if index > 0 {
                own.inheritedListener = csys_dup(config.inheritedListener)
                own.moreListeners = config.moreListeners.map { csys_dup($0) }
                own.statusFD = -1
            }
            // The threads' own board (see serve): a slot each. A supervisor's
            // board (worker processes) is worker 0's alone.
            if threadBoard {
                own.boardSlot = index
            } else if index > 0 {
                own.boardFD = -1
            }
        }
        let listeners = Listener.inherited(own)
        let pooled = proto == .wsgi && config.wsgiThreads > 1
        let wsgi = proto == .wsgi
            ? WSGIGateway(app: app, rootPath: config.rootPath, scheme: scheme, multiprocess: config.workerProcesses != 1,
                          multithread: contexts > 1 || pooled, schemeForced: config.scheme != nil)
            : nil
        // One gateway per pool thread: a gateway holds one request's state.
        let poolGateways = pooled
            ? (0..<config.wsgiThreads).map { _ in
                WSGIGateway(app: app, rootPath: config.rootPath, scheme: scheme, multiprocess: config.workerProcesses != 1,
                            multithread: true, schemeForced: config.scheme != nil)
            }
            : []
        let asgi = proto == .asgi
            ? ASGIGateway(app: app, rootPath: config.rootPath, scheme: scheme.description, schemeForced: config.scheme != nil)
            : nil
        // --http3: this context's UDP socket, bound by the supervisor at
        // index BASE + context of its group (DatagramGroup).
        var datagramSocket: UDPSocket?
        if config.inheritedDatagramSockets.indices.contains(index) {
            datagramSocket = UDPSocket(fd: config.inheritedDatagramSockets[index], index: config.datagramSocketBase + index)
            if datagramSocket == nil { throw StartupFailure("the inherited UDP socket \(config.inheritedDatagramSockets[index]) is not usable") }
        } else if config.http3 {
            throw StartupFailure("--http3: worker context \(index) has no UDP socket (--worker-udp)")
        }
        asgi?.webSocketMaxQueue = config.wsMaxQueue
        asgi?.webSocketMaxQueueBytes = config.wsMaxQueueBytes
        do {
            return try Worker(config: own, listeners: listeners, wsgi: wsgi, asgi: asgi,
                              signalFD: index == 0 ? signalFD : -1, group: group, context: index,
                              poolGateways: poolGateways, datagramSocket: datagramSocket)
        } catch {
            throw StartupFailure(error.description)
        }
    }

    static func environment(_ name: String) -> String? {
        guard let v = getenvText(name), !v.isEmpty else { return nil }
        return v
    }
}

/// The worker threads of one process: `--free-threaded --workers N` on a
/// free-threaded CPython, or, internal and for tests only,
/// `PEREGRINE_WORKER_CONTEXTS=N` on any (under the GIL the threads take
/// turns: the WSGI loop releases it in epoll, an asyncio loop in its
/// selector, which is enough to show that a worker's state is its own,
/// tests/e2e/test_worker_contexts.py). Worker 0 runs on the main thread and
/// each other on a thread of its own, all serving one application object
/// from the inherited socket. Each has its own listening descriptor (a
/// dup), poller, connection table, gateway and, under ASGI, its own asyncio
/// loop and lifespan; they share the interpreter, what is per process by
/// nature, and a `WorkerGroup`: worker 0 answers to the supervisor for all
/// of them (signals, ready, heartbeat, recycling), passes stops on, and
/// waits for the others before the process exits.
enum WorkerContexts {

    /// Starts `others` (workers 1...), each on a thread of its own, and
    /// waits (GIL released) until every one serves: false if one failed
    /// (an ASGI lifespan startup of its own that fails fails the start of
    /// all) or did not serve in time.
    static func start(_ others: [Worker], group: WorkerGroup?, app: PyRef, config: Config,
                      lifespan: ThreadLifespan) -> Bool {
        for other in others { startThread(other, app: app, config: config, lifespan: lifespan) }
        guard let group else { return true }
        return group.waitUntilServing(milliseconds: max(config.workerTimeoutMilliseconds, 60_000))
    }

    /// Runs `worker` on a new thread, which takes the GIL for its loop.
    private static func startThread(_ worker: Worker, app: PyRef, config: Config, lifespan: ThreadLifespan) {
        let job = Unmanaged.passRetained(ContextThread(worker: worker, app: app, config: config, lifespan: lifespan))
        if PyThread_start_new_thread(contextThreadMain, job.toOpaque()) == UInt.max {
            job.release()
            Log.error("cannot start a worker context thread")
            worker.group?.set(worker.context, .failed)
        }
    }
}

/// What the event loop of a worker thread other than 0 does about the ASGI
/// lifespan (see `LifespanScope`).
enum ThreadLifespan {
    /// Runs one of its own (true: --lifespan-scope worker), or none (false:
    /// --no-lifespan).
    case own(Bool)
    /// Runs none (--lifespan-scope process), and copies worker 0's state
    /// (nil: the application does not support lifespan) into its scopes.
    /// Worker 0's gateway holds the state for the life of the process.
    case shared(PyRef?)
}

private final class ContextThread {
    let worker: Worker
    let app: PyRef
    let config: Config
    let lifespan: ThreadLifespan

    init(worker: Worker, app: PyRef, config: Config, lifespan: ThreadLifespan) {
        self.worker = worker
        self.app = app
        self.config = config
        self.lifespan = lifespan
    }
}

private let contextThreadMain: @convention(c) (UnsafeMutableRawPointer?) -> Void = { arg in
    let job = Unmanaged<ContextThread>.fromOpaque(arg!).takeRetainedValue()
    let gil = PyGILState_Ensure()
    defer { PyGILState_Release(gil) }
    let worker = job.worker
    let group = worker.group
    if worker.asgi != nil {
        var runsLifespan = false
        var sharedState: PyRef?
        switch job.lifespan {
        case .own(let on): runsLifespan = on
        case .shared(let state): sharedState = state
        }
        do throws(StartupError) {
            try worker.runAsync(app: job.app, lifespan: runsLifespan, sharedState: sharedState,
                                uvloop: job.config.uvloop) { loopName in
                Log.info("worker thread \(worker.context) serving (ASGI on \(loopName))")
                group?.set(worker.context, .serving)
            }
            group?.set(worker.context, .ended)
        } catch {
            Log.error("worker thread \(worker.context) stopped: \(error.message)")
            group?.set(worker.context, .failed)
        }
    } else {
        Log.info("worker thread \(worker.context) serving (WSGI)")
        group?.set(worker.context, .serving)
        worker.run()
        group?.set(worker.context, .ended)
    }
}
