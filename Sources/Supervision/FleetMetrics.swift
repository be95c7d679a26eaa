import CSys
import Core
import Options

/// The supervisor's side of the metrics: the shared region its workers
/// write (MetricsRegion, laid out by MetricsLayout), the totals of workers
/// that are gone, and what only the supervisor knows (starts, exits,
/// restarts, each worker's memory and CPU).
///
/// Counters never go backwards. A worker's blocks count only while it
/// lives; when it is reaped, whatever the cause (a drain, a crash, kill -9),
/// its blocks are added to `retired` and zeroed before they are handed out
/// again. The sum the supervisor exposes is `retired` plus the live blocks,
/// so a replacement starting from zero changes nothing. The in-flight
/// gauges come from the live blocks alone: a killed worker's unfinished
/// requests are not in flight anywhere.
///
/// The region holds `runs` runs of `contexts` blocks (one block per worker
/// thread of a process); a process gets a run no live process holds. There
/// are four runs per worker slot and four spare, room for a worker, its
/// replacement and draining predecessors of several quick SIGHUPs; a
/// worker started when none is free serves without metrics (logged).
final class FleetMetrics {
    let region: MetricsRegion
    let contexts: Int
    private let runs: Int
    private var runHeld: [Bool]
    private var retired = [Int64](repeating: 0, count: MetricsLayout.blockWords)
    private var pythonVersion: Int64 = 0

    enum ExitCause: Int, CaseIterable {
        case replaced, recycled, stopped, heartbeatTimeout, startTimeout, signal, exitCode
        var label: String {
            switch self {
            case .replaced: "replaced"
            case .recycled: "recycled"
            case .stopped: "stopped"
            case .heartbeatTimeout: "heartbeat_timeout"
            case .startTimeout: "start_timeout"
            case .signal: "signal"
            case .exitCode: "exit_code"
            }
        }
    }

    private(set) var starts: Int64 = 0
    private(set) var restarts: Int64 = 0
    private var exits = [Int64](repeating: 0, count: ExitCause.allCases.count)
    private var slotsStarted: Set<Int> = []

    /// A worker as the exposition needs it.
    struct Live {
        var slot: Int
        var pid: Int32
        var run: Int?
        var state: String
    }

    init?(workerSlots: Int, contexts: Int) {
        runs = 4 * workerSlots + 4
        self.contexts = contexts
        guard let region = MetricsRegion.create(blocks: runs * contexts) else { return nil }
        self.region = region
        runHeld = [Bool](repeating: false, count: runs)
    }

    // MARK: - Worker life

    /// A run for a worker about to start, and the hidden option that hands
    /// it over; nil when every run is held.
    func assignRun() -> (run: Int, argument: String)? {
        guard let run = runHeld.firstIndex(of: false) else { return nil }
        runHeld[run] = true
        for b in 0..<contexts { region.clear(run * contexts + b) }
        return (run, "\(region.fd):\(run * contexts):\(region.blocks)")
    }

    /// The worker did not start after all (fork failed): its run is free.
    func unassign(_ run: Int) { runHeld[run] = false }

    func started(slot: Int) {
        starts += 1
        if !slotsStarted.insert(slot).inserted { restarts += 1 }
    }

    /// The worker `run` belonged to is reaped: its counters join the
    /// retired totals, and the run is free.
    func exited(run: Int?, cause: ExitCause) {
        exits[cause.rawValue] += 1
        guard let run else { return }
        for b in 0..<contexts {
            let block = run * contexts + b
            notePythonVersion(block)
            for w in 0..<MetricsLayout.usedWords where w != MetricsLayout.pythonVersion {
                retired[w] &+= region.load(block, w)
            }
            region.clear(block)
        }
        runHeld[run] = false
    }

    private func notePythonVersion(_ block: Int) {
        let v = region.load(block, MetricsLayout.pythonVersion)
        if v != 0 { pythonVersion = v }
    }

    // MARK: - Exposition

    /// The `/metrics` body.
    func render(_ workers: [Live]) -> String {
        var total = retired
        var live = [Int64](repeating: 0, count: MetricsLayout.blockWords)
        for w in workers {
            guard let run = w.run else { continue }
            for b in 0..<contexts {
                let block = run * contexts + b
                notePythonVersion(block)
                for i in 0..<MetricsLayout.usedWords where i != MetricsLayout.pythonVersion {
                    live[i] &+= region.load(block, i)
                }
            }
        }
        for i in 0..<MetricsLayout.usedWords { total[i] &+= live[i] }
        var e = MetricsExposition()
        requestFamilies(&e, total: total, live: live)
        connectionFamilies(&e, total: total, live: live)
        protocolFamilies(&e, total: total)
        workerFamilies(&e, workers)
        return e.text
    }

    private func requestFamilies(_ e: inout MetricsExposition, total t: [Int64], live: [Int64]) {
        e.family("peregrine_requests_total", .counter, help: "Requests served, by protocol and class of the final status (none: ended before one).")
        for p in MetricsProtocol.allCases {
            for c in StatusClass.allCases {
                e.sample("peregrine_requests_total", [("protocol", p.label), ("status", c.label)],
                         t[MetricsLayout.requests + p.rawValue * StatusClass.count + c.rawValue])
            }
        }
        e.family("peregrine_request_duration_seconds", .histogram,
                 help: "Time from a request's head to the end of its response (WebSocket: of the conversation).")
        for p in MetricsProtocol.allCases {
            var cumulative: Int64 = 0
            for b in 0..<DurationBuckets.count {
                cumulative += t[MetricsLayout.durationBuckets + p.rawValue * DurationBuckets.count + b]
                let le = b < DurationBuckets.upperBoundsMicroseconds.count
                    ? MetricsExposition.seconds(microseconds: DurationBuckets.upperBoundsMicroseconds[b]) : "+Inf"
                e.sample("peregrine_request_duration_seconds_bucket", [("protocol", p.label), ("le", le)], cumulative)
            }
            e.sample("peregrine_request_duration_seconds_sum", [("protocol", p.label)],
                     MetricsExposition.seconds(microseconds: t[MetricsLayout.durationMicroseconds + p.rawValue]))
            e.sample("peregrine_request_duration_seconds_count", [("protocol", p.label)], cumulative)
        }
        e.family("peregrine_requests_in_flight", .gauge, help: "Requests begun and not yet ended, by protocol.")
        for p in MetricsProtocol.allCases {
            var ended: Int64 = 0
            for c in 0..<StatusClass.count { ended += live[MetricsLayout.requests + p.rawValue * StatusClass.count + c] }
            e.sample("peregrine_requests_in_flight", [("protocol", p.label)], max(live[MetricsLayout.requestsBegun + p.rawValue] - ended, 0))
        }
        e.family("peregrine_rejected_requests_total", .counter,
                 help: "Requests the server answered itself with an error status, by status (other: 501, 505...).")
        for r in RejectReason.allCases {
            e.sample("peregrine_rejected_requests_total", [("reason", r.label)], t[MetricsLayout.rejected + r.rawValue])
        }
    }

    private func connectionFamilies(_ e: inout MetricsExposition, total t: [Int64], live: [Int64]) {
        e.family("peregrine_connections_total", .counter, help: "Connections accepted (QUIC: with a completed handshake), by transport.")
        for x in MetricsTransport.allCases {
            e.sample("peregrine_connections_total", [("transport", x.label)], t[MetricsLayout.connectionsOpened + x.rawValue])
        }
        e.family("peregrine_connections_in_flight", .gauge, help: "Connections open, by transport.")
        for x in MetricsTransport.allCases {
            let open = live[MetricsLayout.connectionsOpened + x.rawValue] - live[MetricsLayout.connectionsClosed + x.rawValue]
            e.sample("peregrine_connections_in_flight", [("transport", x.label)], max(open, 0))
        }
        e.family("peregrine_received_bytes_total", .counter, help: "Bytes received: TCP after TLS decryption, QUIC as UDP payload.")
        for x in MetricsTransport.allCases {
            e.sample("peregrine_received_bytes_total", [("transport", x.label)], t[MetricsLayout.bytesReceived + x.rawValue])
        }
        e.family("peregrine_sent_bytes_total", .counter, help: "Bytes sent: TCP before TLS encryption, QUIC as UDP payload.")
        for x in MetricsTransport.allCases {
            e.sample("peregrine_sent_bytes_total", [("transport", x.label)], t[MetricsLayout.bytesSent + x.rawValue])
        }
        e.family("peregrine_tls_handshakes_total", .counter, help: "TLS handshakes by transport and result (full, resumed, failed).")
        for x in MetricsTransport.allCases {
            for o in TLSHandshakeOutcome.allCases {
                e.sample("peregrine_tls_handshakes_total", [("transport", x.label), ("result", o.label)],
                         t[MetricsLayout.tlsHandshakes + x.rawValue * TLSHandshakeOutcome.count + o.rawValue])
            }
        }
    }

    private func protocolFamilies(_ e: inout MetricsExposition, total t: [Int64]) {
        e.family("peregrine_http2_streams_total", .counter, help: "HTTP/2 request streams opened by clients.")
        e.sample("peregrine_http2_streams_total", [], t[MetricsLayout.http2Streams])
        e.family("peregrine_http2_stream_resets_total", .counter, help: "HTTP/2 RST_STREAM frames sent or received, by error code.")
        for (i, name) in H2ResetCode.names.enumerated() {
            e.sample("peregrine_http2_stream_resets_total", [("code", name)], t[MetricsLayout.http2Resets + i])
        }
        e.family("peregrine_websocket_messages_total", .counter, help: "WebSocket messages received (in) and sent (out).")
        e.sample("peregrine_websocket_messages_total", [("direction", "in")], t[MetricsLayout.webSocketMessagesIn])
        e.sample("peregrine_websocket_messages_total", [("direction", "out")], t[MetricsLayout.webSocketMessagesOut])
        e.family("peregrine_quic_path_events_total", .counter,
                 help: "QUIC path events: ECN-CE congestion signals (ecn_ce), ECN validation failures (ecn_validation_failed), path MTU raises (pmtu_raised) and black holes (pmtu_black_hole).")
        for x in QUICPathEvent.allCases {
            e.sample("peregrine_quic_path_events_total", [("event", x.label)], t[MetricsLayout.quicPathEvents + x.rawValue])
        }
        e.family("peregrine_webtransport_sessions_total", .counter,
                 help: "WebTransport sessions, by result: accepted (200 sent) or refused (by the application or the server).")
        for r in WebTransportSessionResult.allCases {
            e.sample("peregrine_webtransport_sessions_total", [("result", r.label)], t[MetricsLayout.webTransportSessions + r.rawValue])
        }
        e.family("peregrine_webtransport_streams_total", .counter, help: "WebTransport data streams opened, by either side.")
        e.sample("peregrine_webtransport_streams_total", [], t[MetricsLayout.webTransportStreams])
        e.family("peregrine_webtransport_datagrams_total", .counter,
                 help: "WebTransport datagrams received from QUIC (in) and queued to QUIC (out).")
        e.sample("peregrine_webtransport_datagrams_total", [("direction", "in")], t[MetricsLayout.webTransportDatagramsIn])
        e.sample("peregrine_webtransport_datagrams_total", [("direction", "out")], t[MetricsLayout.webTransportDatagramsOut])
        e.family("peregrine_webtransport_datagrams_dropped_total", .counter,
                 help: "WebTransport datagrams dropped, by reason: a full queue (queue_full), too large for the peer or path (too_large), no session for it (no_session).")
        for r in WebTransportDatagramDrop.allCases {
            e.sample("peregrine_webtransport_datagrams_dropped_total", [("reason", r.label)],
                     t[MetricsLayout.webTransportDatagramsDropped + r.rawValue])
        }
    }

    private func workerFamilies(_ e: inout MetricsExposition, _ workers: [Live]) {
        e.family("peregrine_worker_starts_total", .counter, help: "Worker processes started.")
        e.sample("peregrine_worker_starts_total", [], starts)
        e.family("peregrine_worker_restarts_total", .counter,
                 help: "Worker processes started in a slot that had one before (replacements after a crash, SIGHUP, --reload, --max-requests).")
        e.sample("peregrine_worker_restarts_total", [], restarts)
        e.family("peregrine_worker_exits_total", .counter, help: "Worker processes that ended, by cause.")
        for c in ExitCause.allCases { e.sample("peregrine_worker_exits_total", [("cause", c.label)], exits[c.rawValue]) }
        e.family("peregrine_workers", .gauge, help: "Worker processes by state.")
        for state in ["starting", "ready", "draining"] {
            e.sample("peregrine_workers", [("state", state)], Int64(workers.filter { $0.state == state }.count))
        }
        let samples = workers.sorted { ($0.slot, $0.pid) < ($1.slot, $1.pid) }.compactMap { w in
            ProcessSample.read(pid: w.pid).map { (w, $0) }
        }
        e.family("peregrine_worker_resident_memory_bytes", .gauge, help: "Resident memory of each worker process (/proc/PID/statm).")
        for (w, s) in samples {
            e.sample("peregrine_worker_resident_memory_bytes", [("worker", String(w.slot)), ("pid", String(w.pid))], s.residentBytes)
        }
        e.family("peregrine_worker_cpu_seconds_total", .counter, help: "User and system CPU time of each worker process (/proc/PID/stat).")
        for (w, s) in samples {
            e.sample("peregrine_worker_cpu_seconds_total", [("worker", String(w.slot)), ("pid", String(w.pid))], s.cpuSecondsText)
        }
        e.family("peregrine_build_info", .gauge, help: "The peregrine version, and the Python version its workers run.")
        let python = pythonVersion == 0 ? "unknown"
            : "\(pythonVersion >> 16).\((pythonVersion >> 8) & 0xFF).\(pythonVersion & 0xFF)"
        e.sample("peregrine_build_info", [("version", peregrineVersion), ("python", python)], 1)
    }
}

extension FleetMetrics {
    /// `--metrics-port`: the region and the endpoint, on the supervisor's
    /// poller.
    static func serve(_ config: Config, port: Int,
                      poller: borrowing Poller) throws(StartupFailure) -> (FleetMetrics, MetricsEndpoint) {
        guard let metrics = FleetMetrics(workerSlots: config.workerProcesses, contexts: config.workerContexts()) else {
            throw StartupFailure("--metrics-port: cannot create the shared metrics memory: \(SystemError(call: "memfd_create", errno: csys_errno()))")
        }
        let host = config.metricsHost ?? config.host
        let endpoint = try MetricsEndpoint(host: host, port: port)
        do {
            try poller.add(endpoint.fd, token: MetricsEndpoint.listenToken, interest: .readable)
        } catch {
            throw StartupFailure("--metrics-port: \(error.description)")
        }
        let shown = host.contains(":") ? "[\(host)]" : host
        Log.info("metrics on http://\(shown):\(endpoint.port)/metrics")
        return (metrics, endpoint)
    }
}

extension FleetMetrics.ExitCause {
    /// Why a reaped worker ended, most specific first: killed by us for
    /// silence or a slow start, then killed by any signal (kill -9
    /// included), then the exits we asked for, then an exit on its own.
    static func of(_ silenceKilled: Bool, _ startTimedOut: Bool, signal: Int32, recycled: Bool, draining: Bool,
                   stopping: Bool) -> Self {
        if silenceKilled { return .heartbeatTimeout }
        if startTimedOut { return .startTimeout }
        if signal != 0 { return .signal }
        if recycled { return .recycled }
        if draining { return .replaced }
        if stopping { return .stopped }
        return .exitCode
    }
}
