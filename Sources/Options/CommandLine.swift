import Core
import Proxy

/// The result of reading argv: run, or print something and exit.
public enum CommandLineAction {
    case run(Config)
    case printAndExit(String, status: Int32)
}

/// A command-line mistake: one line for the operator, exit status 2.
public struct UsageError: Error {
    public let message: String
}

public let peregrineVersion = "0.1.0"

public let usageText = """
usage: peregrine [options] MODULE:ATTR

Serve a WSGI (PEP 3333) or ASGI 3 application over HTTP/1.1, from a
supervisor process and its worker processes.

Signals: SIGTERM/SIGINT stop gracefully (a second one stops at once);
SIGHUP replaces the workers one by one without dropping a connection.
SIGUSR1 to the supervisor reopens the --access-log-file (logrotate).
SIGUSR2 makes every worker log one JSON line of statistics.

options:
  --host HOST              interface to bind (default 127.0.0.1)
  --port PORT              TCP port to bind (default 8000; 0 picks a free one)
  --unix PATH              listen on a unix socket instead of TCP
  --unix-mode OCTAL        permission bits of the --unix socket file, e.g. 660
                           (default: what the umask leaves; its group is the
                           process's)
  --fd N                   serve the already-listening socket inherited as
                           descriptor N (TCP or unix; repeatable) instead of
                           binding; systemd socket activation (LISTEN_FDS,
                           LISTEN_PID) is honoured without it
  --backlog N              listen backlog (default 2048)
  --protocol P             wsgi, asgi or auto (default auto: a coroutine function
                           or a callable taking 3 positional arguments is ASGI,
                           2 is WSGI)
  --factory                MODULE:ATTR is a factory returning the application
  --root-path PATH         mount point: SCRIPT_NAME / ASGI root_path
  --max-connections N      concurrent connections per worker (default 4096)
  --max-body BYTES         largest request body (default 16MiB)
  --max-header-size BYTES  largest request head (default 32KiB)
  --keep-alive MS          idle keep-alive timeout (default 5000)
  --request-timeout MS     time to receive a head; longest body/write stall
                           (default 30000)
  --min-body-rate BYTES    a request body slower than this per second on
                           average, past --request-timeout of waiting for
                           it, gets 408 (default 500; 0: no minimum)
  --python-path DIR        put DIR first on sys.path (repeatable)
  --log-level LEVEL        debug, info, warning, error or silent (default info)
  --access-log             log one line per request to standard output
  --access-log-format F    text (default), json, or a gunicorn format string
                           such as '%(h)s "%(r)s" %(s)s %(D)s' (atoms in
                           CONFIG.md); implies --access-log
  --access-log-file PATH   append the access log to PATH (reopened on SIGUSR1
                           to the supervisor); implies --access-log
  --request-id-header NAME take a request's id from this field (1-200 visible
                           ASCII characters) or generate one; the application
                           sees it, the response echoes it, the log shows it
  --log-format F           server log lines as text (default) or json
  --workers N              worker processes (default 1; 0 = one per CPU); with
                           --free-threaded, worker threads of one process
  --free-threaded          run the workers as threads of one process, sharing
                           one application (needs a free-threaded Python,
                           python3.13t)
  --wsgi-threads N         WSGI: run the application on N threads per worker
                           (1-1024, default 1 = inline on the worker's loop);
                           with the GIL they overlap I/O-bound requests, on a
                           free-threaded Python they run in parallel
  --worker-timeout MS      kill and replace a worker unresponsive (or not yet
                           ready) this long (default 30000; 0 = never)
  --graceful-timeout MS    time in-flight requests get on stop or restart
                           (default 10000)
  --max-requests N         recycle a worker after N requests (default 0: never)
  --max-requests-jitter N  add a random 0..N to --max-requests per worker
  --reload                 restart workers when source files change
  --reload-dir DIR         directory to watch (repeatable; default: current)
  --reload-include GLOB    file pattern to watch (repeatable; default *.py)
  --no-http2               serve HTTP/1.1 only (no h2c preface, no ALPN h2)
  --http2-only             serve HTTP/2 only (HTTP/1.1 requests get 505)
  --http2-max-streams N    concurrent streams per HTTP/2 connection (default 100)
  --no-websockets          answer WebSocket upgrades with 501 (and do not offer
                           WebSocket over HTTP/2 or HTTP/3)
  --no-webtransport        do not offer WebTransport over HTTP/3
  --ws-max-message BYTES   largest WebSocket message (default 16m; 1009 beyond)
  --ws-max-queue N         messages queued for a slow application (default 32)
  --ws-max-queue-bytes N   bytes queued for a slow application (default 4m)
  --ws-ping-interval MS    keepalive ping after this much silence (default
                           20000; 0 = never)
  --ws-ping-timeout MS     close (1011) when a ping's pong is this late
                           (default 20000)
  --ws-compress            negotiate permessage-deflate (RFC 7692) when offered;
                           messages under 64 bytes go uncompressed
  --tls-cert PATH          serve TLS (1.2 and 1.3) with this PEM certificate
                           chain; repeat with --tls-key for more pairs, chosen
                           by SNI (the first is the default)
  --tls-key PATH           the PEM private key of the preceding --tls-cert
  --tls-ciphers LIST       OpenSSL cipher list for TLS 1.2 (default
                           ECDHE+AESGCM:ECDHE+CHACHA20; TLS 1.3 suites stay
                           OpenSSL's defaults)
  --tls-ca PATH            ask for client certificates verified against these
                           PEM CA certificates
  --tls-client-cert MODE   optional (default with --tls-ca) or required
  --tls-handshake-timeout MS
                           close a connection whose TLS handshake takes longer
                           (default 10000)
  --tls-key-password-file PATH
                           the password of encrypted keys: this file's first
                           line (read again by new workers on SIGHUP)
  --tls-key-password TEXT  the password of encrypted keys (visible to ps:
                           prefer --tls-key-password-file)
  --tls-min-version V      lowest TLS version over TCP: 1.2 (default) or 1.3
                           (HTTP/3 is always 1.3)
  --tls-ocsp PATH          staple this DER OCSP response for the matching
                           --tls-cert (repeatable, paired in order; '' skips
                           one); new workers read it again on SIGHUP
  --http3                  also serve HTTP/3 over QUIC (UDP) on the same host;
                           needs --tls-cert and --tls-key, and a TCP port.
                           HTTP/1.1 and HTTP/2 responses over TLS advertise it
                           (Alt-Svc)
  --quic-port PORT         UDP port for HTTP/3 (default: the TCP port)
  --http3-max-streams N    concurrent request streams per HTTP/3 connection
                           (1-100000, default 100)
  --quic-idle-timeout MS   close a QUIC connection idle this long (default
                           30000)
  --quic-stream-window BYTES
                           receive window of one HTTP/3 request stream
                           (16k-1g, default 1m)
  --quic-connection-window BYTES
                           receive window of a whole QUIC connection (16k-1g,
                           default 4m; at least --quic-stream-window)
  --quic-congestion ALGORITHM
                           QUIC congestion control: cubic (RFC 9438 with
                           HyStart++, default) or newreno (RFC 9002)
  --quic-key-update-interval N
                           QUIC packets sent under one key before the server
                           updates the keys (0-4194304, default 1048576; 0:
                           only at half the AEAD limit)
  --quic-log DIR           write a qlog trace of each QUIC connection into DIR
                           (one JSON-SEQ file each; for debugging)
  --quic-retry             send every new QUIC client a Retry to prove its
                           address first (one more round trip; a NEW_TOKEN
                           token from an earlier connection skips it)
  --quic-retry-threshold N send Retries once N handshakes are under way on
                           a worker (default 100; 0 is --quic-retry)
  --quic-max-datagram-size BYTES
                           largest QUIC datagram path MTU discovery may
                           reach, from 1200 (1200-9000, default 1452;
                           1200 turns discovery off)
  --quic-no-migration      ask QUIC clients not to move to another address
                           (disable_active_migration; NAT rebindings are
                           still followed)
  --forwarded-allow-ips LIST
                           peers whose Forwarded / X-Forwarded-* headers are
                           honoured: comma-separated addresses and CIDR blocks
                           (IPv4, IPv6), unix, or * for any (default: none;
                           FORWARDED_ALLOW_IPS when the option is absent)
  --scheme S               http or https: the scheme every request reports
                           (ws/wss for WebSocket), whatever the socket or a
                           proxy says
  --proxy-protocol         every connection from a --proxy-allow-ips peer starts
                           with a PROXY protocol v1 or v2 header (HAProxy
                           send-proxy / send-proxy-v2; before TLS): its source
                           is the client; a missing or bad header closes the
                           connection
  --proxy-allow-ips LIST   peers that send the PROXY header (same syntax as
                           --forwarded-allow-ips; default 127.0.0.1,::1,unix)
  --health-path PATH       answer requests for PATH in the worker itself, without
                           the application: 200, or 503 once draining
  --drain-delay MS         after SIGTERM/SIGINT keep accepting and serving this
                           long, the health path answering 503, then stop
                           (default 0)
  --limit-concurrency N    requests in flight per worker beyond which new ones
                           get 503 with Retry-After at once (default: no limit)
  --max-connection-age MS  close a kept-alive connection (HTTP/2: GOAWAY) after
                           this long, plus up to 10% at random (default 0: never)
  --header NAME:VALUE      add this field to every response (repeatable; the
                           application's own field of that name wins)
  --server-header VALUE    add `server: VALUE` to every response (default none)
  --no-date-header         send no Date field (the application's own is kept)
  --metrics-port PORT      serve Prometheus metrics at /metrics on this TCP port
                           from the supervisor (0 picks a free one, logged)
  --metrics-host HOST      interface for --metrics-port (default: --host)
  --no-lifespan            ASGI: skip the lifespan protocol
  --lifespan-scope S       ASGI with worker threads: worker (default: a lifespan
                           per thread, on its own loop) or process (one, on the
                           main thread's loop, its state shared by all threads)
  --no-uvloop              ASGI: use asyncio's own loop even if uvloop is installed
  --config PATH            read options from this TOML file (keys are option
                           names: max-body = "16m"); PEREGRINE_<OPTION>
                           variables override it, the command line both
  --env-file PATH          load these dotenv variables into the application's
                           environment (variables already set win)
  --app-dir DIR            import the application from DIR: put first on
                           sys.path and made the workers' working directory
  --print-config           print the effective configuration and where each
                           value came from, then exit
  --version                print the version and exit
  --help                   print this help and exit

BYTES accepts a suffix: k, m, g (powers of 1024), e.g. 16m.
"""

public enum CommandLineParser {
    /// `environment` looks up an environment variable (the process's own
    /// by default): `FORWARDED_ALLOW_IPS` stands in for an absent
    /// `--forwarded-allow-ips`. Workers inherit the supervisor's arguments
    /// and environment, so they parse the same configuration.
    public static func parse(_ arguments: [String],
                             environment: (String) -> String? = getenvText) throws(UsageError) -> CommandLineAction {
        var config = Config()
        var positional: [String] = []
        var tlsClientCertGiven = false
        var forwardedAllowIPs: String?
        var proxyAllowIPs: String?
        var addressGiven = (host: false, port: false, unix: false, fd: false)
        // The QUIC options other than --http3 that were given, for checkHTTP3.
        var http3Given: [String] = []
        var i = 0
        while i < arguments.count {
            let arg = arguments[i]
            i += 1
            if !arg.hasPrefix("--") || arg == "--" {
                if arg == "--" {
                    positional += arguments[i...]
                    break
                }
                if arg.hasPrefix("-") && arg.count > 1 {
                    throw UsageError(message: "unknown option '\(arg)' (see --help)")
                }
                positional.append(arg)
                continue
            }
            var name = arg
            var inlineValue: String?
            if let eq = arg.firstIndex(of: "=") {
                name = String(arg[..<eq])
                inlineValue = String(arg[arg.index(after: eq)...])
            }
            func value() throws(UsageError) -> String {
                if let v = inlineValue { return v }
                guard i < arguments.count else { throw UsageError(message: "option \(name) needs a value") }
                i += 1
                return arguments[i - 1]
            }
            func flag() throws(UsageError) {
                if inlineValue != nil { throw UsageError(message: "option \(name) takes no value") }
            }
            if name.hasPrefix("--quic-") || name == "--http3-max-streams" { http3Given.append(name) }
            switch name {
            case "--help": try flag(); return .printAndExit(usageText, status: 0)
            case "--version": try flag(); return .printAndExit("peregrine \(peregrineVersion)\n", status: 0)
            // Configuration sources (ConfigSources acts on them in the supervisor).
            case "--config": config.configFile = try path(name, try value())
            case "--env-file": config.envFile = try path(name, try value())
            case "--app-dir": config.appDir = try path(name, try value())
            case "--print-config": try flag(); config.printConfig = true
            case "--host":
                addressGiven.host = true
                config.host = try value()
                if config.host.isEmpty { throw UsageError(message: "--host must not be empty") }
            case "--port": addressGiven.port = true; config.port = try integer(name, try value(), 0...65535)
            case "--unix":
                let path = try value()
                if path.isEmpty { throw UsageError(message: "--unix needs a path") }
                addressGiven.unix = true
                config.unixPath = path
            case "--unix-mode":
                let v = try value()
                guard !v.isEmpty, v.count <= 4, let mode = Int(v, radix: 8), (0...0o777).contains(mode) else {
                    throw UsageError(message: "--unix-mode must be octal permission bits (0-777), got '\(v)'")
                }
                config.unixMode = mode
            case "--fd":
                let v = try value()
                guard let fd = Int32(v), fd >= 0 else {
                    throw UsageError(message: "--fd must be a descriptor number (0 or more), got '\(v)'")
                }
                if config.inheritedFDs.contains(fd) { throw UsageError(message: "--fd \(fd) is given twice") }
                config.inheritedFDs.append(fd)
                addressGiven.fd = true
            case "--backlog": config.backlog = try integer(name, try value(), 1...65535)
            case "--protocol":
                let v = try value()
                guard let p = AppProtocol(rawValue: v.lowercased()) else {
                    throw UsageError(message: "--protocol must be wsgi, asgi or auto, got '\(v)'")
                }
                config.appProtocol = p
            case "--factory": try flag(); config.factory = true
            case "--root-path":
                var v = try value()
                while v.hasSuffix("/") { v.removeLast() }
                if !v.isEmpty && !v.hasPrefix("/") {
                    throw UsageError(message: "--root-path must start with '/', got '\(v)'")
                }
                config.rootPath = v
            case "--max-connections": config.maxConnections = try integer(name, try value(), 1...1_000_000)
            case "--max-body": config.maxBody = Int64(try size(name, try value(), 0...(1 << 50)))
            case "--max-header-size": config.maxHeaderSize = try size(name, try value(), 1024...(16 << 20))
            case "--keep-alive": config.keepAliveMilliseconds = try integer(name, try value(), 0...86_400_000)
            case "--request-timeout": config.requestTimeoutMilliseconds = try integer(name, try value(), 1...86_400_000)
            case "--min-body-rate": config.minBodyRate = try size(name, try value(), 0...(1 << 30))
            case "--python-path": config.pythonPaths.append(try value())
            case "--log-level":
                let v = try value()
                guard let l = LogLevel(name: v) else {
                    throw UsageError(message: "--log-level must be debug, info, warning, error or silent, got '\(v)'")
                }
                config.logLevel = l
            case "--access-log": try flag(); config.accessLog = true
            case "--workers": config.workers = try integer(name, try value(), 0...1024)
            case "--free-threaded": try flag(); config.freeThreaded = true
            case "--wsgi-threads": config.wsgiThreads = try integer(name, try value(), Config.wsgiThreadsRange)
            case "--worker-timeout": config.workerTimeoutMilliseconds = try integer(name, try value(), 0...86_400_000)
            case "--graceful-timeout": config.gracefulTimeoutMilliseconds = try integer(name, try value(), 0...86_400_000)
            case "--max-requests": config.maxRequests = try integer(name, try value(), 0...Int(Int32.max))
            case "--max-requests-jitter": config.maxRequestsJitter = try integer(name, try value(), 0...Int(Int32.max))
            case "--reload": try flag(); config.reload = true
            case "--reload-dir": config.reloadDirs.append(try value())
            case "--reload-include": config.reloadIncludes.append(try value())
            case "--worker":
                let v = try value()
                if v == "check" || v == "check-reload" {
                    config.checkOnly = true
                    config.checkBeforeRestart = v == "check-reload"
                    break
                }
                // LISTEN is one descriptor or several, comma-separated.
                let fields = v.split(separator: ":", omittingEmptySubsequences: false)
                let listeners = fields.first.map { $0.split(separator: ",").compactMap { Int32($0) } } ?? []
                let parts = [listeners.first ?? -1] + fields.dropFirst().compactMap { Int32($0) }
                guard parts.count == 2 || parts.count == 5, parts[0] >= 0,
                      listeners.count == fields[0].split(separator: ",", omittingEmptySubsequences: false).count else {
                    throw UsageError(message: "--worker is internal (LISTEN[,LISTEN...]:STATUS[:BOARD:SLOT:SLOTS], check or check-reload)")
                }
                config.inheritedListener = parts[0]
                config.moreListeners = Array(listeners.dropFirst())
                config.statusFD = parts[1]
                if parts.count == 5 {
                    config.boardFD = parts[2]
                    config.boardSlot = Int(parts[3])
                    config.boardSlots = Int(parts[4])
                }
            case "--no-http2": try flag(); config.http2 = false
            case "--http2-only": try flag(); config.http2Only = true
            case "--http2-max-streams": config.http2MaxStreams = try integer(name, try value(), 1...100_000)
            case "--no-websockets": try flag(); config.websockets = false
            case "--no-webtransport": try flag(); config.webTransport = false
            case "--ws-max-message": config.wsMaxMessage = try size(name, try value(), 1...(1 << 40))
            case "--ws-max-queue": config.wsMaxQueue = try integer(name, try value(), 1...1_000_000)
            case "--ws-max-queue-bytes": config.wsMaxQueueBytes = try size(name, try value(), 1...(1 << 40))
            case "--ws-ping-interval": config.wsPingIntervalMilliseconds = try integer(name, try value(), 0...86_400_000)
            case "--ws-ping-timeout": config.wsPingTimeoutMilliseconds = try integer(name, try value(), 1...86_400_000)
            case "--ws-compress": try flag(); config.wsCompress = true
            case "--tls-cert": config.tlsCertificates.append(try path(name, try value()))
            case "--tls-key": config.tlsKeys.append(try path(name, try value()))
            case "--tls-ciphers":
                let v = try value()
                if v.isEmpty { throw UsageError(message: "--tls-ciphers must not be empty") }
                config.tlsCiphers = v
            case "--tls-ca": config.tlsCA = try path(name, try value())
            case "--tls-client-cert":
                let v = try value()
                guard let mode = ClientCertificateMode(rawValue: v.lowercased()), mode != .off else {
                    throw UsageError(message: "--tls-client-cert must be optional or required, got '\(v)'")
                }
                tlsClientCertGiven = true
                config.tlsClientCert = mode
            case "--tls-handshake-timeout":
                config.tlsHandshakeTimeoutMilliseconds = try integer(name, try value(), 1...86_400_000)
            case "--tls-key-password-file": config.tlsKeyPasswordFile = try path(name, try value())
            case "--tls-key-password":
                let v = try value()
                if v.isEmpty { throw UsageError(message: "--tls-key-password must not be empty") }
                config.tlsKeyPassword = v
            case "--tls-min-version":
                let v = try value()
                guard let version = TLSMinimumVersion(rawValue: v) else {
                    throw UsageError(message: "--tls-min-version must be 1.2 or 1.3, got '\(v)'")
                }
                config.tlsMinimumVersion = version
            case "--tls-ocsp":
                let v = try value()
                config.tlsOCSPResponses.append(v.isEmpty ? v : try path(name, v))
            case "--http3": try flag(); config.http3 = true
            case "--quic-port": config.quicPort = try integer(name, try value(), 0...65535)
            case "--http3-max-streams":
                config.http3MaxStreams = try integer(name, try value(), Config.http3MaxStreamsRange)
            case "--quic-idle-timeout":
                config.quicIdleTimeoutMilliseconds = try integer(name, try value(), Config.quicIdleTimeoutRange)
            case "--quic-stream-window": config.quicStreamWindow = try size(name, try value(), Config.quicWindowRange)
            case "--quic-connection-window":
                config.quicConnectionWindow = try size(name, try value(), Config.quicWindowRange)
            case "--quic-congestion":
                let v = try value()
                guard let algorithm = CongestionAlgorithm(rawValue: v) else {
                    throw UsageError(message: "--quic-congestion must be cubic or newreno, got '\(v)'")
                }
                config.quicCongestion = algorithm
            case "--quic-key-update-interval":
                config.quicKeyUpdateInterval = try integer(name, try value(), Config.quicKeyUpdateIntervalRange)
            case "--quic-log": config.quicLogDirectory = try path(name, try value())
            case "--quic-retry": try flag(); config.quicRetry = true
            case "--quic-no-migration": try flag(); config.quicNoMigration = true
            case "--quic-retry-threshold":
                config.quicRetryThreshold = try integer(name, try value(), Config.quicRetryThresholdRange)
            case "--quic-max-datagram-size":
                config.quicMaxDatagramSize = try integer(name, try value(), Config.quicMaxDatagramSizeRange)
            case "--worker-udp":
                let v = try value()
                guard let sockets = workerDatagramSockets(v) else {
                    throw UsageError(message: "--worker-udp is internal (BASE:FD[,FD...])")
                }
                config.datagramSocketBase = sockets.base
                config.inheritedDatagramSockets = sockets.fds
            case "--forwarded-allow-ips": forwardedAllowIPs = try value()
            case "--scheme":
                let v = try value()
                guard let scheme = ReportedScheme(rawValue: v.lowercased()) else {
                    throw UsageError(message: "--scheme must be http or https, got '\(v)'")
                }
                config.scheme = scheme
            case "--proxy-protocol": try flag(); config.proxyProtocol = true
            case "--proxy-allow-ips": proxyAllowIPs = try value()
            case "--health-path":
                let v = try value()
                guard v.hasPrefix("/"), !v.contains("?"), !v.contains("#"),
                      !v.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) else {
                    throw UsageError(message: "--health-path must be a path starting with '/' (no query, spaces or controls), got '\(v)'")
                }
                config.healthPath = v
            case "--drain-delay": config.drainDelayMilliseconds = try integer(name, try value(), 0...3_600_000)
            case "--limit-concurrency": config.limitConcurrency = try integer(name, try value(), 1...1_000_000)
            case "--max-connection-age":
                config.maxConnectionAgeMilliseconds = try integer(name, try value(), 0...86_400_000)
            case "--header":
                config.responseHeaders.append(try ResponseHeaderOption(parsing: try value()))
                if config.responseHeaders.count + 1 > DefaultResponseFields.maxCount {
                    throw UsageError(message: "--header: at most \(DefaultResponseFields.maxCount - 1) fields")
                }
            case "--server-header": config.serverHeader = try ResponseHeaderOption.serverValue(try value())
            case "--no-date-header": try flag(); config.dateHeader = false
            case "--metrics-port": config.metricsPort = try integer(name, try value(), 0...65535)
            case "--metrics-host":
                let v = try value()
                if v.isEmpty { throw UsageError(message: "--metrics-host must not be empty") }
                config.metricsHost = v
            case "--worker-metrics":
                let v = try value()
                let parts = v.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
                guard parts.count == 3, let fd = parts[0], let first = parts[1], let blocks = parts[2],
                      fd >= 0, fd <= Int(Int32.max), first >= 0, blocks > first else {
                    throw UsageError(message: "--worker-metrics is internal (FD:FIRST:BLOCKS)")
                }
                config.metricsFD = Int32(fd)
                config.metricsFirstBlock = first
                config.metricsBlocks = blocks
            case "--no-lifespan": try flag(); config.lifespan = false
            case "--lifespan-scope":
                let v = try value()
                guard let scope = LifespanScope(rawValue: v.lowercased()) else {
                    throw UsageError(message: "--lifespan-scope must be worker or process, got '\(v)'")
                }
                config.lifespanScope = scope
            case "--no-uvloop": try flag(); config.uvloop = false
            case "--access-log-format":
                config.accessLogFormat = try accessLogFormat(try value())
                config.accessLog = true
            case "--access-log-file":
                let v = try value()
                guard !v.isEmpty else { throw UsageError(message: "--access-log-file needs a path") }
                config.accessLogFile = v
                config.accessLog = true
            case "--request-id-header":
                let v = try value()
                guard !v.isEmpty, v.utf8.count <= 64, v.utf8.allSatisfy(AccessLogTemplate.isTokenChar) else {
                    throw UsageError(message: "--request-id-header must be a field name (a token of at most 64 characters), got '\(v)'")
                }
                config.requestIDHeader = v
            case "--log-format":
                let v = try value()
                guard let f = LogFormat(rawValue: v.lowercased()) else {
                    throw UsageError(message: "--log-format must be text or json, got '\(v)'")
                }
                config.logFormat = f
            default:
                throw UsageError(message: "unknown option '\(name)' (see --help)")
            }
        }
        guard positional.count == 1 else {
            if positional.isEmpty { throw UsageError(message: "no application given: peregrine [options] MODULE:ATTR (see --help)") }
            throw UsageError(message: "expected one MODULE:ATTR, got \(positional.count): \(positional.joined(separator: " "))")
        }
        let app = positional[0]
        guard let colon = app.firstIndex(of: ":"), colon != app.startIndex, app.index(after: colon) != app.endIndex else {
            throw UsageError(message: "application must be given as MODULE:ATTR, got '\(app)'")
        }
        if config.http2Only && !config.http2 {
            throw UsageError(message: "--http2-only and --no-http2 contradict each other")
        }
        config.app = app
        try checkTLS(&config, clientCertGiven: tlsClientCertGiven)
        try checkHTTP3(config, given: http3Given)
        if let list = forwardedAllowIPs {
            config.forwardedAllowIPs = try trustedPeers("--forwarded-allow-ips", list)
        } else if let list = environment("FORWARDED_ALLOW_IPS") {
            config.forwardedAllowIPs = try trustedPeers("FORWARDED_ALLOW_IPS", list)
        }
        if addressGiven.fd && (addressGiven.host || addressGiven.port || addressGiven.unix) {
            throw UsageError(message: "--fd serves an inherited socket: it cannot be combined with --host, --port or --unix")
        }
        config.listenAddressGiven = addressGiven.host || addressGiven.port || addressGiven.unix
        if config.unixMode != nil && config.unixPath == nil {
            throw UsageError(message: "--unix-mode needs --unix")
        }
        try checkMetrics(config, tcpPortGiven: !addressGiven.fd && config.unixPath == nil)
        if let list = proxyAllowIPs {
            guard config.proxyProtocol else { throw UsageError(message: "--proxy-allow-ips needs --proxy-protocol") }
            config.proxyAllowIPs = try trustedPeers("--proxy-allow-ips", list)
            if config.proxyAllowIPs.isEmpty { throw UsageError(message: "--proxy-allow-ips must name at least one peer") }
        }
        return .run(config)
    }

    /// `text`, `json`, or a format string with gunicorn's atoms
    /// (`AccessLogTemplate`), compiled now so a bad one stops the start.
    static func accessLogFormat(_ v: String) throws(UsageError) -> AccessLogFormat {
        switch v.lowercased() {
        case "text": return .text
        case "json": return .json
        default:
            do throws(AccessLogTemplate.ParseError) {
                return .template(try AccessLogTemplate(parsing: v))
            } catch {
                switch error {
                case .unknownAtom(let atom):
                    throw UsageError(message: "--access-log-format: unknown atom '\(atom)' (see CONFIG.md for the atoms)")
                case .noAtom:
                    throw UsageError(message: "--access-log-format must be text, json or a format string with %(...)s atoms, got '\(v)'")
                }
            }
        }
    }

    /// TLS options that only make sense together.
    static func checkTLS(_ config: inout Config, clientCertGiven: Bool) throws(UsageError) {
        if config.tlsCertificates.count != config.tlsKeys.count {
            throw UsageError(message: "--tls-cert and --tls-key come in pairs (got \(config.tlsCertificates.count) certificate(s) and \(config.tlsKeys.count) key(s))")
        }
        if !config.tlsEnabled {
            for (given, option) in [(config.tlsCA != nil, "--tls-ca"), (clientCertGiven, "--tls-client-cert"),
                                    (config.tlsCiphers != nil, "--tls-ciphers"),
                                    (config.tlsKeyPassword != nil, "--tls-key-password"),
                                    (config.tlsKeyPasswordFile != nil, "--tls-key-password-file"),
                                    (config.tlsMinimumVersion != .tls12, "--tls-min-version"),
                                    (!config.tlsOCSPResponses.isEmpty, "--tls-ocsp")] where given {
                throw UsageError(message: "\(option) needs --tls-cert and --tls-key")
            }
        }
        if clientCertGiven && config.tlsCA == nil {
            throw UsageError(message: "--tls-client-cert needs --tls-ca (the CA certificates to verify against)")
        }
        if config.tlsCA != nil && !clientCertGiven { config.tlsClientCert = .optional }
        if config.tlsKeyPassword != nil && config.tlsKeyPasswordFile != nil {
            throw UsageError(message: "--tls-key-password and --tls-key-password-file are alternatives: give one")
        }
        if config.tlsMinimumVersion == .tls13 && config.tlsCiphers != nil {
            throw UsageError(message: "--tls-ciphers chooses TLS 1.2 ciphers: it has no effect with --tls-min-version 1.3")
        }
        if config.tlsOCSPResponses.count > config.tlsCertificates.count {
            throw UsageError(message: "--tls-ocsp pairs with --tls-cert in order: \(config.tlsOCSPResponses.count) responses for \(config.tlsCertificates.count) certificate(s)")
        }
    }

    /// `--metrics-host` needs `--metrics-port`, which must not be the port
    /// the application is served on (port 0 twice means two free ports).
    static func checkMetrics(_ config: Config, tcpPortGiven: Bool) throws(UsageError) {
        guard let port = config.metricsPort else {
            if config.metricsHost != nil { throw UsageError(message: "--metrics-host needs --metrics-port") }
            return
        }
        if tcpPortGiven && port != 0 && port == config.port {
            throw UsageError(message: "--metrics-port must differ from the serving port (\(port))")
        }
    }

    /// HTTP/3 options that only make sense together. QUIC always runs TLS
    /// 1.3 (RFC 9001), with the TCP listener's certificates; it needs a TCP
    /// host and port, since the UDP socket mirrors the TCP listener's
    /// address and the port is advertised in `Alt-Svc` on TCP responses: a
    /// unix socket sits behind a proxy, whose job HTTP/3 to clients is.
    static func checkHTTP3(_ config: Config, given: [String]) throws(UsageError) {
        guard config.http3 else {
            if let first = given.first { throw UsageError(message: "\(first) needs --http3") }
            return
        }
        if !config.tlsEnabled { throw UsageError(message: "--http3 needs --tls-cert and --tls-key (QUIC always runs TLS 1.3)") }
        if config.unixPath != nil {
            throw UsageError(message: "--http3 needs a TCP listener (--host/--port), not --unix: the UDP socket binds the TCP listener's address")
        }
        if config.quicStreamWindow > config.quicConnectionWindow {
            throw UsageError(message: "--quic-stream-window (\(config.quicStreamWindow)) must not exceed --quic-connection-window (\(config.quicConnectionWindow))")
        }
    }

    /// `BASE:FD[,FD...]` of the hidden `--worker-udp`.
    static func workerDatagramSockets(_ text: String) -> (base: Int, fds: [Int32])? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let base = Int(parts[0]), base >= 0 else { return nil }
        let fds = parts[1].split(separator: ",", omittingEmptySubsequences: false).map { Int32($0) }
        guard !fds.isEmpty, fds.allSatisfy({ ($0 ?? -1) >= 0 }) else { return nil }
        return (base, fds.map { $0! })
    }

    /// A trusted-address list; a bad item is a usage error that names it.
    static func trustedPeers(_ name: String, _ list: String) throws(UsageError) -> TrustedPeers {
        do {
            return try TrustedPeers(parsing: list)
        } catch {
            throw UsageError(message: "\(name): \(error.description)")
        }
    }

    static func path(_ name: String, _ text: String) throws(UsageError) -> String {
        if text.isEmpty { throw UsageError(message: "\(name) needs a path") }
        return text
    }

    static func integer(_ name: String, _ text: String, _ range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let v = Int(text), range.contains(v) else {
            throw UsageError(message: "\(name) must be an integer in \(range.lowerBound)...\(range.upperBound), got '\(text)'")
        }
        return v
    }

    static func size(_ name: String, _ text: String, _ range: ClosedRange<Int>) throws(UsageError) -> Int {
        var digits = Substring(text.lowercased())
        var multiplier = 1
        for (suffix, m) in [("kib", 1 << 10), ("mib", 1 << 20), ("gib", 1 << 30), ("kb", 1 << 10), ("mb", 1 << 20),
                            ("gb", 1 << 30), ("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30), ("b", 1)] {
            if digits.hasSuffix(suffix) {
                digits = digits.dropLast(suffix.count)
                multiplier = m
                break
            }
        }
        guard let v = Int(digits), v >= 0, v <= range.upperBound / multiplier, range.contains(v * multiplier) else {
            throw UsageError(message: "\(name) must be a size in bytes between \(range.lowerBound) and \(range.upperBound) (suffix k, m or g allowed), got '\(text)'")
        }
        return v * multiplier
    }
}
