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
        let config = ProcessStart.configuration()
        Log.level = config.logLevel
        csys_ignore_sigpipe()
        do {
            if config.checkOnly {
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
        let tlsContext = try TLSSetup.workerContext(config)
        let scheme: StaticString = tlsContext == nil ? "http" : "https"
        do {
            try Interpreter.start(programName: programName, argv: ["peregrine"], pythonPaths: config.pythonPaths)
            try Runtime.install()
        } catch {
            throw StartupFailure(error.message, detail: error.traceback)
        }
        let app: PyRef
        do {
            app = try Interpreter.loadApplication(config.app, factory: config.factory)
        } catch {
            throw StartupFailure(error.message, detail: error.traceback)
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
        let contexts = WorkerContexts.count()
        // Every context is made here, on the main thread with the GIL held,
        // before any other thread exists (see ProcessObject in PyBridge).
        var workers: [Worker] = []
        for index in 0..<contexts {
            workers.append(try makeContext(index, of: contexts, config: config, proto: proto, app: app,
                                           scheme: scheme, signalFD: signalFD))
        }
        let worker = workers[0]
        worker.tlsContext = tlsContext
        for other in workers.dropFirst() {
            other.tlsContext = tlsContext
            WorkerContexts.startThread(other, app: app, config: config)
        }
        let banner = "peregrine \(peregrineVersion) serving \(config.app) with Python \(Interpreter.version) (prefix \(Interpreter.prefix))"
            + (contexts > 1 ? " in \(contexts) worker contexts" : "")
        if proto == .asgi {
            do {
                try worker.runAsync(app: app, lifespan: config.lifespan, uvloop: config.uvloop) { loopName in
                    Log.info(banner + " (ASGI on \(loopName))")
                    worker.writeStatus(UInt8(ascii: "R"))
                }
            } catch {
                throw StartupFailure(error.message, detail: error.traceback)
            }
        } else {
            Log.info(banner + " (WSGI)")
            worker.writeStatus(UInt8(ascii: "R"))
            worker.run()
        }
        Log.info("worker stopped after \(worker.requestsServed) requests")
    }

    /// One worker context: its own listening descriptor, poller, connection
    /// table and gateway. Context 0 is the process's worker as the
    /// supervisor knows it (signals, status pipe, load board); the others
    /// (see `WorkerContexts`) only serve.
    private static func makeContext(_ index: Int, of contexts: Int, config: Config, proto: AppProtocol,
                                    app: PyRef, scheme: StaticString, signalFD: Int32) throws(StartupFailure) -> Worker {
        var own = config
        if contexts > 1 {
            own.workers = max(config.workers, contexts)  // several acceptors: one connection per wake-up
            if index > 0 {
                own.inheritedListener = csys_dup(config.inheritedListener)
                own.statusFD = -1
                own.boardFD = -1
            }
        }
        let listener = Listener.inherited(own)
        let wsgi = proto == .wsgi
            ? WSGIGateway(app: app, rootPath: config.rootPath, scheme: scheme, multiprocess: config.workers != 1,
                          multithread: contexts > 1)
            : nil
        let asgi = proto == .asgi ? ASGIGateway(app: app, rootPath: config.rootPath, scheme: scheme.description) : nil
        asgi?.webSocketMaxQueue = config.wsMaxQueue
        asgi?.webSocketMaxQueueBytes = config.wsMaxQueueBytes
        do {
            return try Worker(config: own, listener: listener, wsgi: wsgi, asgi: asgi,
                              signalFD: index == 0 ? signalFD : -1, context: index)
        } catch {
            throw StartupFailure(error.description)
        }
    }

    static func environment(_ name: String) -> String? {
        guard let v = getenvText(name), !v.isEmpty else { return nil }
        return v
    }
}

/// Internal, for tests only (not a user option): `PEREGRINE_WORKER_CONTEXTS=N`
/// runs N worker contexts in this one worker process, context 0 on the main
/// thread and each other on a thread of its own, all serving one application
/// object from the inherited socket. Each context has its own listening
/// descriptor (a dup), poller, connection table, gateway and, under ASGI,
/// its own asyncio loop; they share only the interpreter and what is per
/// process by nature. Under the GIL the threads take turns (the WSGI loop
/// releases it in epoll, an asyncio loop in its selector), which is enough to
/// show that a context's state is its own (tests/e2e/test_worker_contexts.py).
/// Only context 0 answers to the supervisor (signals, status, load board):
/// on stop it drains as usual and the process then exits, cutting whatever
/// the other contexts still hold. Issue #16 (free-threaded workers as
/// threads) builds the real option on this.
enum WorkerContexts {
    static func count() -> Int {
        guard let text = Main.environment("PEREGRINE_WORKER_CONTEXTS"), let n = Int(text), n >= 1 else { return 1 }
        return min(n, 64)
    }

    /// Runs `worker` on a new thread, which takes the GIL for its loop.
    static func startThread(_ worker: Worker, app: PyRef, config: Config) {
        let job = Unmanaged.passRetained(ContextThread(worker: worker, app: app, config: config))
        if PyThread_start_new_thread(contextThreadMain, job.toOpaque()) == UInt.max {
            job.release()
            Log.error("cannot start a worker context thread")
        }
    }
}

private final class ContextThread {
    let worker: Worker
    let app: PyRef
    let config: Config

    init(worker: Worker, app: PyRef, config: Config) {
        self.worker = worker
        self.app = app
        self.config = config
    }
}

private let contextThreadMain: @convention(c) (UnsafeMutableRawPointer?) -> Void = { arg in
    let job = Unmanaged<ContextThread>.fromOpaque(arg!).takeRetainedValue()
    let gil = PyGILState_Ensure()
    defer { PyGILState_Release(gil) }
    if job.worker.asgi != nil {
        do throws(StartupError) {
            try job.worker.runAsync(app: job.app, lifespan: job.config.lifespan, uvloop: job.config.uvloop) { loopName in
                Log.info("worker context serving (ASGI on \(loopName))")
            }
        } catch {
            Log.error("a worker context stopped: \(error.message)")
        }
    } else {
        Log.info("worker context serving (WSGI)")
        job.worker.run()
    }
}
