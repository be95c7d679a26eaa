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
        let listener = Listener.inherited(config)
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
        let wsgi = proto == .wsgi ? WSGIGateway(app: app, rootPath: config.rootPath, scheme: scheme, multiprocess: config.workers != 1) : nil
        let asgi = proto == .asgi ? ASGIGateway(app: app, rootPath: config.rootPath, scheme: scheme.description) : nil
        asgi?.webSocketMaxQueue = config.wsMaxQueue
        asgi?.webSocketMaxQueueBytes = config.wsMaxQueueBytes
        let worker: Worker
        do {
            worker = try Worker(config: config, listener: listener, wsgi: wsgi, asgi: asgi, signalFD: signalFD)
        } catch {
            throw StartupFailure(error.description)
        }
        worker.tlsContext = tlsContext
        let banner = "peregrine \(peregrineVersion) serving \(config.app) with Python \(Interpreter.version) (prefix \(Interpreter.prefix))"
        if asgi != nil {
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

    static func environment(_ name: String) -> String? {
        guard let v = getenvText(name), !v.isEmpty else { return nil }
        return v
    }
}
