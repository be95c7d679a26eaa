import CSys
import Core
import Proxy

/// Which gateway serves the application.
public enum AppProtocol: String, Sendable {
    case auto, wsgi, asgi
}

/// `--access-log-format`: the built-in text or JSON line, or a gunicorn
/// format string compiled at start-up.
public enum AccessLogFormat: Sendable, Equatable {
    case text, json
    case template(AccessLogTemplate)

    /// What `--access-log-format` was given: `text`, `json` or the format string.
    public var optionValue: String {
        switch self {
        case .text: "text"
        case .json: "json"
        case .template(let t): t.format
        }
    }
}

/// Where the ASGI lifespan runs when one worker process serves with
/// several worker threads (`--lifespan-scope`). With one thread per
/// process both mean the same.
public enum LifespanScope: String, Sendable {
    /// Once per worker thread, on the event loop that thread serves with:
    /// what startup opens is bound to the loop that awaits it.
    case worker
    /// Once per process, on worker 0's loop (the main thread's), before the
    /// other threads start; they share its `state` and run no lifespan of
    /// their own. Shutdown runs after every thread has drained.
    case process
}

/// The scheme `--scheme` makes every request report, whatever the socket
/// or a proxy says (`ws`/`wss` for a WebSocket).
public enum ReportedScheme: String, Sendable {
    case http, https
}

/// Everything the command line sets. Defaults are the documented ones
/// (README "Usage").
public struct Config: Sendable {
    public var app: String = ""
    public var host = "127.0.0.1"
    public var port = 8000
    public var unixPath: String?
    /// `--unix-mode`: the unix socket file's permission bits (nil: what
    /// the umask leaves). Its group is the process's.
    public var unixMode: Int?
    /// `--fd N` (repeatable): already-listening sockets inherited from the
    /// parent, served instead of binding (TCP or unix, detected).
    public var inheritedFDs: [Int32] = []
    /// --host, --port or --unix was given (systemd's sockets exclude them).
    public var listenAddressGiven = false
    public var backlog = 2048
    public var appProtocol: AppProtocol = .auto
    public var factory = false
    public var rootPath = ""
    /// Concurrent connections per worker; further connections wait in the
    /// kernel's accept queue until a slot frees.
    public var maxConnections = 4096
    /// Largest request body; a larger declared Content-Length gets 413 before
    /// the application runs, a larger chunked body fails the read.
    public var maxBody: Int64 = 16 * 1024 * 1024
    /// Largest request head (request line and fields); beyond it: 431.
    public var maxHeaderSize = 32 * 1024
    /// Idle time allowed between requests on a kept-alive connection.
    public var keepAliveMilliseconds = 5000
    /// Time allowed to receive a request head, and the longest stall while
    /// reading a body or writing a response.
    public var requestTimeoutMilliseconds = 30000
    /// Bytes per second a request body must average over the time the
    /// application waited for it, once that passes --request-timeout
    /// (HTTPExchange.minBodyRate); 0: no rule.
    public var minBodyRate = 500
    public var pythonPaths: [String] = []
    public var logLevel: LogLevel = .info
    public var accessLog = false
    public var accessLogFormat: AccessLogFormat = .text
    /// `--access-log-file`: append the access log to this file (each worker
    /// opens it O_APPEND, so lines never interleave mid-line) instead of
    /// standard output; reopened after SIGUSR1 to the supervisor.
    public var accessLogFile: String?
    /// `--request-id-header`: the field that carries a request's id (as
    /// given, e.g. `X-Request-ID`); nil: no request ids.
    public var requestIDHeader: String?
    /// `--log-format`: server log lines as text or one JSON object each.
    public var logFormat: LogFormat = .text
    /// ASGI: run the lifespan protocol (startup before serving, shutdown
    /// after the last request).
    public var lifespan = true
    /// ASGI with several worker threads: one lifespan per thread or one
    /// for the process (see `LifespanScope`).
    public var lifespanScope: LifespanScope = .worker
    /// Largest WebSocket message (after reassembly); a larger one closes
    /// the connection with 1009.
    public var wsMaxMessage = 16 << 20
    /// Messages (and bytes) queued for an application that has not received
    /// them yet; past either, the connection is not read until it catches up.
    public var wsMaxQueue = 32
    public var wsMaxQueueBytes = 4 << 20
    /// Keepalive: a ping after this much silence (0: never), and a close
    /// (1011) when its pong has not come within the timeout.
    public var wsPingIntervalMilliseconds = 20_000
    public var wsPingTimeoutMilliseconds = 20_000
    /// Negotiate permessage-deflate (RFC 7692) when the client offers it.
    public var wsCompress = false
    /// Refuse WebSocket upgrades (501) instead of passing them to an ASGI
    /// application.
    public var websockets = true
    /// Offer WebTransport over HTTP/3 (--http3) to an ASGI application.
    public var webTransport = true
    /// HTTP/2: by prior knowledge on the cleartext port (the client preface
    /// is recognised) and by ALPN over TLS. `http2Only` refuses HTTP/1.1.
    public var http2 = true
    public var http2Only = false
    /// HTTP/2: streams a client may have open at once (more are refused
    /// with REFUSED_STREAM).
    public var http2MaxStreams = 100
    /// ASGI: use uvloop when it can be imported.
    public var uvloop = true
    /// TLS (TRANSPORT.md "TLS"): certificate chain and key files, paired in
    /// order; the first pair is the default, the others are chosen by SNI.
    /// Empty: plain TCP.
    public var tlsCertificates: [String] = []
    public var tlsKeys: [String] = []
    /// OpenSSL cipher list for TLS 1.2 (nil: OpenSSL's default); TLS 1.3
    /// suites are always OpenSSL's defaults.
    public var tlsCiphers: String?
    /// CA bundle client certificates are verified against, and whether
    /// one is required.
    public var tlsCA: String?
    public var tlsClientCert: ClientCertificateMode = .off
    /// A TLS handshake not complete in this time closes the connection.
    public var tlsHandshakeTimeoutMilliseconds = 10_000
    /// The password of encrypted PEM keys (every key), given on the command
    /// line (`--tls-key-password`: visible to `ps`) or as the path of a
    /// file whose first line it is (`--tls-key-password-file`, read by each
    /// worker as it starts, so a SIGHUP picks up a new one).
    public var tlsKeyPassword: String?
    public var tlsKeyPasswordFile: String?
    /// The lowest TLS version over TCP; QUIC is always TLS 1.3.
    public var tlsMinimumVersion: TLSMinimumVersion = .tls12
    /// DER OCSP response files stapled for the certificates, paired in
    /// order with `tlsCertificates` (an empty path: none for that one).
    public var tlsOCSPResponses: [String] = []
    public var tlsEnabled: Bool { !tlsCertificates.isEmpty }

    /// HTTP/3 over QUIC (`--http3`, needs TLS): UDP sockets beside the TCP
    /// listener, and `Alt-Svc` on HTTP/1.1 and HTTP/2 responses over TLS.
    public var http3 = false
    /// `--quic-port`: the UDP port (nil: the TCP port the listener got).
    public var quicPort: Int?
    /// Concurrent request streams a client may open per connection
    /// (RFC 9000 §4.6 `initial_max_streams_bidi`).
    public var http3MaxStreams = 100
    public static let http3MaxStreamsRange = 1...100_000
    /// A connection silent this long is closed without a word (RFC 9000
    /// §10.1 `max_idle_timeout`; the effective period is never under three
    /// PTOs, so a small value cannot cut a handshake short).
    public var quicIdleTimeoutMilliseconds = 30_000
    public static let quicIdleTimeoutRange = 1...86_400_000
    /// Receive windows (RFC 9000 §4.1): what one request stream, and all of
    /// a connection's streams together, may have in flight to us unread
    /// (`initial_max_stream_data_bidi_remote`, `initial_max_data`).
    public var quicStreamWindow = 1 << 20
    public var quicConnectionWindow = 4 << 20
    /// `--quic-congestion`: the congestion controller (RFC 9002 §7).
    public var quicCongestion: CongestionAlgorithm = .cubic
    public static let quicWindowRange = (16 << 10)...(1 << 30)
    /// `--quic-key-update-interval`: 1-RTT packets sent under one key before
    /// the server starts a key update (RFC 9001 §6.1); 0: only as the AEAD
    /// confidentiality limit requires (§6.6). At most half AES-GCM's 2^23.
    public var quicKeyUpdateInterval = 1 << 20
    /// `--quic-log`: a directory for one qlog file per QUIC connection
    /// (debugging; nil: none).
    public var quicLogDirectory: String?
    public static let quicKeyUpdateIntervalRange = 0...(1 << 22)
    /// `--quic-retry`: every new QUIC connection proves its address with a
    /// Retry round trip first (RFC 9000 §8.1.2) unless it brings a token.
    public var quicRetry = false
    /// `--quic-no-migration`: the transport parameters carry
    /// disable_active_migration (RFC 9000 §18.2), for deployments where a
    /// client's new address would not reach this server (a load balancer
    /// routing by address). NAT rebindings are still followed (§9).
    public var quicNoMigration = false
    /// `--quic-retry-threshold`: past this many handshakes under way on a
    /// worker, new connections without a token get a Retry (flood defence).
    public var quicRetryThreshold = 100
    public static let quicRetryThresholdRange = 0...1_000_000
    /// `--quic-max-datagram-size`: the largest UDP payload path MTU
    /// discovery (RFC 8899) may raise a connection to, from 1200. 1452 fits
    /// a 1500-byte MTU over IPv6 (and IPv4); 1200 turns discovery off.
    public var quicMaxDatagramSize = 1452
    public static let quicMaxDatagramSizeRange = 1200...9000

    /// Peers whose `Forwarded` / `X-Forwarded-*` fields are honoured
    /// (`--forwarded-allow-ips`, else `FORWARDED_ALLOW_IPS`); empty: none.
    public var forwardedAllowIPs = TrustedPeers()
    /// `--scheme`: the scheme every request reports (nil: `https` on TLS,
    /// else `http`, or what a trusted proxy says).
    public var scheme: ReportedScheme?
    /// `--proxy-protocol`: every connection from a peer in `proxyAllowIPs`
    /// begins with a PROXY protocol v1 or v2 header (before TLS and any
    /// HTTP), whose source becomes the client; a missing or bad header
    /// closes the connection without calling the application.
    public var proxyProtocol = false
    /// `--proxy-allow-ips`: the peers that send the header.
    public var proxyAllowIPs = Config.defaultProxyAllowIPs
    public static let defaultProxyAllowIPs = try! TrustedPeers(parsing: "127.0.0.1,::1,unix")

    /// `--health-path`: requests for exactly this path are answered by the
    /// worker (200, or 503 while draining) without the application.
    public var healthPath: String?
    /// `--drain-delay`: after SIGTERM/SIGINT, keep accepting and serving
    /// this long with the health path answering 503, then stop.
    public var drainDelayMilliseconds = 0
    /// `--limit-concurrency`: requests in flight per worker beyond which a
    /// new one is answered 503 at once (0: no limit).
    public var limitConcurrency = 0
    /// `--max-connection-age`: a connection older than this (plus up to a
    /// tenth more, at random) is closed after its current response
    /// (HTTP/2: GOAWAY). 0: never.
    public var maxConnectionAgeMilliseconds = 0
    /// `--header NAME:VALUE` (repeatable): fields every response carries
    /// unless the application sets the same name itself (it wins), in the
    /// order given. Server-made responses (errors, refusals, the health
    /// path) carry them too.
    public var responseHeaders: [ResponseHeaderOption] = []
    /// `--server-header VALUE`: a `server` field, as the `--header` ones
    /// (nil: none, the default).
    public var serverHeader: [UInt8]?
    /// False with `--no-date-header`: the server adds no `date` field
    /// (RFC 9110 §6.6.1 asks an origin server with a clock for one; for
    /// benchmarks that compare bytes). An application's own is sent.
    public var dateHeader = true

    /// The fields `DefaultResponseFields` lays out: the `--header` ones,
    /// then `server`.
    public var defaultResponseFields: [(name: [UInt8], value: [UInt8])] {
        responseHeaders.map { ($0.name, $0.value) } + (serverHeader.map { [(Array("server".utf8), $0)] } ?? [])
    }

    /// Worker processes (0 on the command line: one per CPU); with
    /// `freeThreaded`, worker threads of one process.
    public var workers = 1
    /// --free-threaded: one worker process serves with `workers` threads,
    /// each a worker of its own (poller, connections, gateway, asyncio
    /// loop) over one imported application. Needs a free-threaded CPython.
    public var freeThreaded = false

    /// --wsgi-threads: WSGI application threads per worker (process, or
    /// thread under `freeThreaded`). 1: the application runs inline on the
    /// worker's loop thread; more: on a pool of that many threads fed by
    /// the loop. ASGI applications ignore it.
    public var wsgiThreads = 1
    public static let wsgiThreadsRange = 1...1024

    /// Worker processes the supervisor runs.
    public var workerProcesses: Int {
        freeThreaded ? 1 : (workers == 0 ? Int(csys_cpu_count()) : workers)
    }

    /// Worker threads in each worker process.
    public var workerThreads: Int {
        freeThreaded ? (workers == 0 ? Int(csys_cpu_count()) : workers) : 1
    }
    /// Worker contexts (threads, each a worker of its own) in each worker
    /// process: `workerThreads` under `freeThreaded`; otherwise 1, or the
    /// internal, test-only `PEREGRINE_WORKER_CONTEXTS=N` (at most 64). The
    /// supervisor needs it too: with `--http3` each context reads a UDP
    /// socket of its own.
    public func workerContexts(environment: (String) -> String? = getenvText) -> Int {
        if freeThreaded { return workerThreads }
        guard let text = environment("PEREGRINE_WORKER_CONTEXTS"), let n = Int(text), n >= 1 else { return 1 }
        return min(n, 64)
    }

    /// A worker silent (no heartbeat) this long is killed and replaced; 0
    /// disables the check.
    public var workerTimeoutMilliseconds = 30_000
    /// Time in-flight requests get to finish when stopping or replacing a
    /// worker; what remains after it is aborted.
    public var gracefulTimeoutMilliseconds = 10_000
    /// Recycle a worker after this many requests (0: never), plus a random
    /// 0...jitter so workers do not all recycle at once.
    public var maxRequests = 0
    public var maxRequestsJitter = 0
    /// Restart workers when watched source files change.
    public var reload = false
    public var reloadDirs: [String] = []
    public var reloadIncludes: [String] = []
    /// Set in worker processes only (hidden option `--worker LISTEN:STATUS`):
    /// the inherited listening socket and the pipe to the supervisor.
    public var inheritedListener: Int32 = -1
    /// Further inherited listening sockets (several --fd, or systemd's),
    /// served like the first.
    public var moreListeners: [Int32] = []
    public var statusFD: Int32 = -1
    /// The shared load board (see csys_board_create): descriptor, this
    /// worker's slot, and the number of slots.
    public var boardFD: Int32 = -1
    public var boardSlot = 0
    public var boardSlots = 0
    /// `--metrics-port`: the supervisor serves Prometheus `/metrics` on this
    /// TCP port (nil: no metrics; 0: a free port, logged), on
    /// `--metrics-host` (nil: `host`).
    public var metricsPort: Int?
    public var metricsHost: String?
    /// Set in worker processes under `--metrics-port` (hidden option
    /// `--worker-metrics FD:FIRST:BLOCKS`): the shared metrics region
    /// (MetricsRegion), the block of this process's first worker thread,
    /// and the region's block count.
    public var metricsFD: Int32 = -1
    public var metricsFirstBlock = 0
    public var metricsBlocks = 0
    /// Set in worker processes with `--http3` (hidden option `--worker-udp
    /// BASE:FD[,FD...]`): the inherited UDP sockets, one per worker thread
    /// of the process, and the index of the first in the supervisor's
    /// SO_REUSEPORT group (thread `t` reads `inheritedDatagramSockets[t]`,
    /// whose index is `datagramSocketBase + t`; see QUICConnectionIDLayout
    /// and ARCHITECTURE.md, "QUIC across workers").
    public var inheritedDatagramSockets: [Int32] = []
    public var datagramSocketBase = 0
    public var isWorker: Bool { inheritedListener >= 0 }
    /// `--worker check`: the supervisor asks the worker executable to load
    /// what only it can (certificates and keys, with OpenSSL) and exit.
    public var checkOnly = false
    /// `--worker check-reload`: the same check, run by the supervisor on
    /// SIGHUP while the workers serve; a failure is one logged error line
    /// (the old workers keep serving), not a `peregrine: error:` exit.
    public var checkBeforeRestart = false

    /// `--config`: the TOML file the supervisor read (ConfigSources);
    /// workers get the resolved options instead.
    public var configFile: String?
    /// `--env-file`: dotenv variables the supervisor loads into the
    /// application's environment (those already set win).
    public var envFile: String?
    /// `--app-dir`: the worker changes to this directory and puts it first
    /// on sys.path before Python starts (uvicorn's `--app-dir`, plus the
    /// working directory).
    public var appDir: String?
    /// `--print-config`: print the effective configuration and exit.
    public var printConfig = false

    public init() {}
}
