import CSys
import Core
import Gateway
import Options

/// One line per request, on standard output or `--access-log-file`, in one
/// of three formats:
///
/// text: `127.0.0.1:52644 - "GET /path?q HTTP/1.1" 200 13 0.21ms`, then the
/// request id when `--request-id-header` is on.
/// json: `{"time": "...", "remote": "127.0.0.1", "port": 52644, "client":
/// "127.0.0.1", "method": "GET", "target": "/path?q", "version": "HTTP/1.1",
/// "protocol": "HTTP/1.1", "status": 200, "bytes": 13, "duration_ms": 0.21,
/// "duration_us": 210, "request_id": null}`
/// a gunicorn format string: see `AccessLogTemplate`.
///
/// Behind a trusted proxy (`--forwarded-allow-ips`) the client is the one
/// the proxy named: its address and port (text: just the address when the
/// proxy gave no port; json: `"port": null`), or the `unknown` / obfuscated
/// identifier it sent.
///
/// Each line is written into `line`, a byte buffer this worker keeps (its
/// capacity stays), and goes out in one write(2): no `String` per request
/// except a forwarded client's address. Time stamps are formatted once per
/// second.
final class AccessLog {
    let enabled: Bool
    let format: AccessLogFormat
    /// The request fields a format string reads (empty otherwise).
    let requestFieldNames: [[UInt8]]
    let responseFieldNames: [[UInt8]]
    /// Where `%(f)s`, `%(a)s` and `%(u)s` find their fields among
    /// `requestFieldNames` (nil: no atom reads it).
    let fieldIndices: (referer: Int?, userAgent: Int?, authorization: Int?)
    /// nil when logging is off.
    let sink: AccessLogSink?
    private var line: [UInt8] = []
    /// A percent-decoded path (`%(U)s`).
    var decodedScratch: [UInt8] = []
    let pidValue = Int64(csys_getpid())
    /// The second `timeText` was formatted for, and the format's style
    /// (0: the JSON UTC form, 1: the common log format's local time).
    private var timeSecond: Int64 = -1
    private var timeText: [UInt8] = []
    private let timeStyle: Int32

    init(config: Config) throws(SystemError) {
        enabled = config.accessLog
        format = config.accessLogFormat
        if case .template(let template) = format {
            requestFieldNames = template.requestFieldNames
            responseFieldNames = template.responseFieldNames
            fieldIndices = (template.refererIndex, template.userAgentIndex, template.authorizationIndex)
            timeStyle = 1
        } else {
            requestFieldNames = []
            responseFieldNames = []
            fieldIndices = (nil, nil, nil)
            timeStyle = 0
        }
        sink = enabled ? try AccessLogSink(path: config.accessLogFile) : nil
        line.reserveCapacity(enabled ? 512 : 0)
    }

    /// The line's request part, copied now (nil when logging is off).
    func requestLine(_ r: GatewayRequest) -> RequestLine? {
        enabled ? RequestLine(r, requestFieldNames: requestFieldNames) : nil
    }

    /// The line for a request that reached the application (or a response
    /// the server made for it), from what its exchange recorded.
    func record(_ request: RequestLine, _ exchange: HTTPExchange, peer: PeerInfo, now: Instant) {
        record(request, status: exchange.status, bytes: exchange.bytesOut, peer: peer,
               nanoseconds: now.nanoseconds - exchange.start.nanoseconds)
    }

    func record(_ request: RequestLine, status: Int, bytes: Int64, peer: PeerInfo, nanoseconds: Int64) {
        write(Entry(request: request, status: status, bytes: bytes, peer: peer, nanoseconds: max(0, nanoseconds)))
    }

    /// A request refused before it reached the application (4xx/5xx from the
    /// parser or a timeout, 503 past --limit-concurrency).
    func recordRejected(status: Int, peer: PeerInfo) {
        write(Entry(request: nil, status: status, bytes: 0, peer: peer, nanoseconds: nil))
    }

    struct Entry {
        let request: RequestLine?
        let status: Int
        let bytes: Int64
        let peer: PeerInfo
        /// nil: not measured (a rejected request).
        let nanoseconds: Int64?
    }

    private func write(_ e: Entry) {
        guard let sink else { return }
        line.removeAll(keepingCapacity: true)
        switch format {
        case .text: writeText(e)
        case .json: writeJSON(e)
        case .template(let template): writeTemplate(template, e)
        }
        line.append(0x0A)
        sink.write(line)
    }

    // MARK: - text

    private func writeText(_ e: Entry) {
        guard let r = e.request else {
            appendPeer(e.peer)
            line.append(" - \"-\" ")
            line.appendDecimal(Int64(e.status))
            line.append(" 0 -")
            return
        }
        if let client = r.forwardedClient {
            line.append(contentsOf: client.utf8)
            if let port = r.forwardedPort {
                line.append(0x3A)
                line.appendDecimal(Int64(port))
            }
        } else {
            appendPeer(e.peer)
        }
        line.append(" - \"")
        r.with(r.method) { line.appendEscapedText($0) }
        line.append(0x20)
        r.with(r.target) { line.appendEscapedText($0) }
        line.append(0x20)
        line.append(r.version)
        line.append("\" ")
        line.appendDecimal(Int64(e.status))
        line.append(0x20)
        line.appendDecimal(e.bytes)
        line.append(0x20)
        appendMilliseconds(e.nanoseconds ?? 0)
        line.append("ms")
        if let id = r.requestID {
            line.append(0x20)
            r.with(id) { line.append(contentsOf: $0) }
        }
    }

    private func appendPeer(_ peer: PeerInfo) {
        if peer.isUnix {
            line.append("unix")
        } else {
            line.append(contentsOf: peer.remoteAddress.utf8)
            line.append(0x3A)
            line.appendDecimal(Int64(peer.remotePort))
        }
    }

    /// Milliseconds with two decimals: `0.21`.
    private func appendMilliseconds(_ ns: Int64) {
        let hundredths = (ns + 5000) / 10000
        line.appendDecimal(hundredths / 100)
        line.append(0x2E)
        line.appendDecimal(hundredths % 100, width: 2)
    }

    // MARK: - JSON

    private func writeJSON(_ e: Entry) {
        line.append("{\"time\": \"")
        appendTime()
        line.append("\", \"remote\": ")
        let r = e.request
        if let client = r?.forwardedClient {
            line.appendJSONString(client)
            line.append(", \"port\": ")
            if let port = r?.forwardedPort { line.appendDecimal(Int64(port)) } else { line.append("null") }
            line.append(", \"client\": ")
            line.appendJSONString(client)
        } else {
            line.appendJSONString(e.peer.remoteAddress)
            line.append(", \"port\": ")
            line.appendDecimal(Int64(e.peer.remotePort))
            line.append(", \"client\": ")
            line.appendJSONString(e.peer.isUnix ? "unix" : e.peer.remoteAddress)
        }
        if let r {
            line.append(", \"method\": ")
            r.with(r.method) { line.appendJSONString($0) }
            line.append(", \"target\": ")
            r.with(r.target) { line.appendJSONString($0) }
            line.append(", \"version\": \"")
            line.append(r.version)
            line.append("\", \"protocol\": \"")
            line.append(r.version)
            line.append("\"")
        } else {
            line.append(", \"method\": null, \"target\": null, \"version\": null, \"protocol\": null")
        }
        line.append(", \"status\": ")
        line.appendDecimal(Int64(e.status))
        line.append(", \"bytes\": ")
        line.appendDecimal(e.bytes)
        if let ns = e.nanoseconds {
            line.append(", \"duration_ms\": ")
            appendMilliseconds(ns)
            line.append(", \"duration_us\": ")
            line.appendDecimal(ns / 1000)
        } else {
            line.append(", \"duration_ms\": null, \"duration_us\": null")
        }
        line.append(", \"request_id\": ")
        if let r, let id = r.requestID {
            r.with(id) { line.appendJSONString($0) }
        } else {
            line.append("null")
        }
        line.append("}")
    }

    // MARK: - Appending (for the format string's atoms)

    func appendRaw(_ s: StaticString) { line.append(s) }
    func appendRaw(_ b: [UInt8]) { line.append(contentsOf: b) }
    func appendText(_ s: String) {
        var s = s
        s.withUTF8 { line.appendEscapedText(UnsafeRawBufferPointer($0)) }
    }
    func appendValue(_ b: UnsafeRawBufferPointer) { line.appendEscapedText(b) }
    func appendDecimal(_ v: Int64) { line.appendDecimal(v) }
    func appendDecimal(_ v: Int64, width: Int) { line.appendDecimal(v, width: width) }
    func appendTimeAtom() { appendTime() }

    // MARK: - Time

    /// The current second, formatted once per second.
    private func appendTime() {
        let now = csys_wall_seconds()
        if now != timeSecond {
            timeSecond = now
            var buffer: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)
            timeText = Swift.withUnsafeMutableBytes(of: &buffer) { b in
                let n = Int(csys_format_log_time(now, timeStyle, b.baseAddress!.assumingMemoryBound(to: CChar.self), b.count))
                return Array(UnsafeRawBufferPointer(rebasing: b[0..<max(0, n)]))
            }
        }
        line.append(contentsOf: timeText)
    }
}
