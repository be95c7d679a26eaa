import CSys
import Core

/// The one JSON line a worker (each worker thread) writes to standard error
/// when asked with SIGUSR2 (CONFIG.md, "Signals"): what it holds at that
/// moment, for an operator looking at a live process.
///
///     {"event": "stats", "time": "...", "pid": 123, "worker": 0, "thread": 0,
///      "connections": {"http1_idle": 3, "http1_active": 1, "h2": 2, "h2_streams": 5,
///                      "h3": 1, "h3_tls_held": 0, "quic_handshaking": 0, "websocket": 1,
///                      "tls_handshaking": 0, "closing": 0},
///      "requests_in_flight": 6,
///      "buffer_pool": {"block_size": 16384, "in_use": 4, "free": 2, "bytes": 98304},
///      "rss_bytes": 31457280}
///
/// Connections are counted by what they are now: a TCP connection in its
/// TLS handshake is `tls_handshaking` only; after it, HTTP/1.1 `idle`
/// (waiting for a request, nothing buffered) or `active` (a request
/// arriving, queued or being answered), `h2`, `websocket` (upgraded over
/// HTTP/1.1), or `closing` (lingering close). `websocket` also counts the
/// WebSocket streams of HTTP/2 connections (RFC 8441), which are among
/// `h2_streams` as well. QUIC connections are `h3` once their handshake is
/// done; `h3_tls_held` counts those still holding their TLS (OpenSSL)
/// state, which a server frees once the handshake is confirmed: 0 unless
/// something went wrong. `requests_in_flight` are the requests handed to
/// the application and not yet answered, over every protocol (WebSockets excluded, as for
/// --limit-concurrency). `bytes` is what the read-buffer pool maps (blocks
/// in use and free, whose pages may have been returned to the kernel).
/// `rss_bytes` is the whole process's.
///
/// Built on the worker's own thread between two events, so it never races
/// with serving and costs nothing until asked.
struct WorkerStats {
    var http1Idle = 0
    var http1Active = 0
    var h2 = 0
    var h2Streams = 0
    var h3 = 0
    var h3HoldingTLS = 0
    var quicHandshaking = 0
    var webSocket = 0
    var tlsHandshaking = 0
    var closing = 0
    var requestsInFlight = 0
    var pool = BufferPool.Usage(blockSize: 0, inUse: 0, free: 0)

    /// Counts one TCP connection by its state.
    mutating func count(_ c: H1Connection) {
        if c.tls?.handshaking == true {
            tlsHandshaking += 1
            return
        }
        switch c.phase {
        case .closed: return
        case .lingering: closing += 1
        case .websocket: webSocket += 1
        case .http2:
            h2 += 1
            h2Streams += c.h2?.streams.count ?? 0
            webSocket += c.h2?.webSockets.count ?? 0
        case .proxyHeader, .head:
            if c.parsing == nil && c.input.isEmpty { http1Idle += 1 } else { http1Active += 1 }
        case .queued, .request, .discarding: http1Active += 1
        }
    }

    /// The line, with its newline.
    func line(pid: Int32, worker: Int, thread: Int, rss: Int) -> String {
        "{\"event\": \"stats\", \"time\": \"\(Log.timestamp())\", \"pid\": \(pid), \"worker\": \(worker), "
            + "\"thread\": \(thread), \"connections\": {\"http1_idle\": \(http1Idle), \"http1_active\": \(http1Active), "
            + "\"h2\": \(h2), \"h2_streams\": \(h2Streams), \"h3\": \(h3), \"h3_tls_held\": \(h3HoldingTLS), "
            + "\"quic_handshaking\": \(quicHandshaking), "
            + "\"websocket\": \(webSocket), \"tls_handshaking\": \(tlsHandshaking), \"closing\": \(closing)}, "
            + "\"requests_in_flight\": \(requestsInFlight), \"buffer_pool\": {\"block_size\": \(pool.blockSize), "
            + "\"in_use\": \(pool.inUse), \"free\": \(pool.free), \"bytes\": \(pool.bytes)}, \"rss_bytes\": \(rss)}\n"
    }
}
