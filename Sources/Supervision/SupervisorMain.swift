import CSys
import Core
import Options

/// The `peregrine` command: parse the options, bind, start the workers and
/// keep them running (Supervisor). Every startup problem is one
/// `peregrine: error:` line on standard error and exit status 2.
///
/// This executable links neither libpython nor OpenSSL nor the protocol
/// code: those live in `peregrine-worker`, installed beside it, which the
/// supervisor runs for each worker. A process that only waits on its
/// workers then holds about 4 MiB instead of 11 (pip builds link it fully
/// static; BENCHMARKS.md, memory). What the supervisor cannot check
/// without those libraries, the TLS files, it has `peregrine-worker --worker
/// check` check before it binds, so a bad key still stops everything before
/// any worker starts.
public enum SupervisorMain {
    public static let workerExecutableName = "peregrine-worker"

    public static func run() -> Never {
        // Resolved once (command line, PEREGRINE_*, --config file): the
        // workers, including those a SIGHUP starts, get these arguments.
        let resolved = ProcessStart.supervisorConfiguration()
        let config = resolved.config
        let args = KeyPasswordHandoff.publish(config, arguments: resolved.arguments)
        if config.isWorker || config.checkOnly {
            ProcessStart.fail("--worker is internal: workers run \(workerExecutableName)")
        }
        Log.level = config.logLevel
        Log.format = config.logFormat
        csys_ignore_sigpipe()
        do throws(StartupFailure) {
            if let dir = config.appDir, !isDirectory(dir) {
                throw StartupFailure("--app-dir \(dir) is not a directory")
            }
            let worker = try locateWorkerExecutable()
            if let path = config.accessLogFile {
                // Made now (mode 0644), so a path that cannot be written stops
                // the start instead of every worker.
                let fd = csys_open_append(path)
                guard fd >= 0 else {
                    throw StartupFailure("cannot open --access-log-file \(path): \(String(cString: csys_strerror(csys_errno())))")
                }
                _ = csys_close(fd)
            }
            if config.tlsEnabled {
                try check(config, arguments: args, worker: worker)
                guard TicketSecretHandoff.publish() else {
                    throw StartupFailure("cannot get random bytes for the TLS session-ticket secret")
                }
            }
            var listeners = try listen(config)
            for i in listeners.indices { listeners[i].secure = config.tlsEnabled }
            var datagrams: DatagramGroup?
            if config.http3 {
                // Bound beside the (first) TCP listener, on its address; steered
                // to the first worker's sockets until a worker is ready.
                guard let tcp = listeners.first(where: { !$0.isUnix }) else {
                    throw StartupFailure("--http3 needs a TCP listener: every inherited socket is a unix socket")
                }
                let group = try bindDatagrams(config, listeners: &listeners, tcp: tcp)
                try group.steerNewConnections(to: [])
                datagrams = group
            }
            let supervisor = try Supervisor(config: config, listeners: listeners, datagrams: datagrams, arguments: args,
                                            workerExecutable: worker)
            csys_exit(supervisor.run())
        } catch {
            ProcessStart.fail(error.message)
        }
    }

    /// How many TCP ports the kernel may choose for `--port 0` before one is
    /// also free for UDP.
    static let ephemeralPortAttempts = 20

    /// The UDP group for `--http3`, on the TCP listener's port (or
    /// `--quic-port`). With `--port 0` the kernel chose a port free for TCP
    /// only; another socket (a client's, say) may hold its number for UDP.
    /// Then the listener is bound again on another port, as a user of
    /// `--port 0` asked for any free port, not for this one.
    static func bindDatagrams(_ config: Config, listeners: inout [Listener], tcp: Listener) throws(StartupFailure) -> DatagramGroup {
        var tcp = tcp
        let rebindable = config.port == 0 && config.quicPort == nil && !tcp.inherited && listeners.count == 1
        var attempt = 1
        while true {
            do {
                return try DatagramGroup(listener: tcp, port: config.quicPort ?? tcp.port,
                                         slots: config.workerProcesses, contexts: config.workerContexts())
            } catch {
                guard rebindable, error.portTaken, attempt < ephemeralPortAttempts else { throw error.failure }
                _ = csys_close(tcp.fd)
                tcp = try Listener.bind(config)
                tcp.secure = config.tlsEnabled
                listeners = [tcp]
                attempt += 1
            }
        }
    }

    /// The sockets to serve: systemd's (socket activation), the --fd
    /// ones, or one bound per --host/--port or --unix.
    static func listen(_ config: Config) throws(StartupFailure) -> [Listener] {
        if let activation = try SocketActivation.takeFromEnvironment() {
            guard config.inheritedFDs.isEmpty && !config.listenAddressGiven else {
                throw StartupFailure("systemd passed sockets (LISTEN_FDS): --fd, --host, --port and --unix cannot name others")
            }
            var listeners: [Listener] = []
            for socket in activation.sockets {
                var listener = try Listener.adopt(fd: socket.fd, origin: "systemd socket \(socket.fd)")
                listener.name = socket.name
                listeners.append(listener)
            }
            return listeners
        }
        if !config.inheritedFDs.isEmpty {
            var listeners: [Listener] = []
            for fd in config.inheritedFDs { listeners.append(try Listener.adopt(fd: fd, origin: "--fd \(fd)")) }
            return listeners
        }
        return [try Listener.bind(config)]
    }

    /// `peregrine-worker` in this executable's directory.
    static func locateWorkerExecutable() throws(StartupFailure) -> String {
        var buf = [CChar](repeating: 0, count: 4096)
        guard csys_self_exe(&buf, 4096) == 0 else { throw StartupFailure("cannot find this executable (/proc/self/exe)") }
        let own = String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let directory = own.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(own[..<$0]) } ?? "."
        let path = directory + "/" + workerExecutableName
        guard fileExists(path) else {
            throw StartupFailure("\(path) is missing: the worker executable is installed beside \(own); reinstall peregrine")
        }
        return path
    }

    /// Runs the worker executable in check mode and waits for it: it loads
    /// the certificates and keys and, on a mistake, prints the one error line
    /// itself and exits 2, which becomes this process's status.
    static func check(_ config: Config, arguments: [String], worker: String) throws(StartupFailure) {
        let pid = spawnProcess(worker, arguments: arguments + ["--worker", "check"])
        guard pid > 0 else { throw StartupFailure("cannot run \(worker): \(SystemError(call: "fork", errno: csys_errno()))") }
        var status: Int32 = 0, signal: Int32 = 0
        guard csys_wait(pid, &status, &signal) == 0 else {
            throw StartupFailure("cannot wait for \(worker): \(SystemError(call: "waitpid", errno: csys_errno()))")
        }
        if signal != 0 { throw StartupFailure("\(worker) was killed by signal \(signal) while checking the TLS files") }
        if status == 127 { throw StartupFailure("cannot run \(worker)") }
        if status != 0 { csys_exit(status) }
    }
}
