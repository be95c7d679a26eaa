import CSys
import Core
import Options

/// `--metrics-port`: the supervisor's own small HTTP/1.x server for
/// Prometheus, on its poller, never blocking it.
///
/// One request per connection (the response says `Connection: close`): the
/// request head is read up to `maxHeadBytes` (431 beyond), then
///   GET or HEAD /metrics (any query) → 200, text format 0.0.4
///   another path                     → 404
///   another method                   → 405 with Allow: GET, HEAD
///   no request line we can read      → 400
/// Request bodies are not read. Responses go out as the socket takes them
/// (writable interest until done), then the connection is closed. A
/// connection gets `timeoutMilliseconds` for the whole exchange, so a
/// scraper that stops reading cannot hold it; with `maxClients` open, the
/// listening socket leaves the poller until one closes (it is
/// level-triggered: a pending connection would wake the supervisor's loop
/// over and over).
final class MetricsEndpoint {
    static let maxHeadBytes = 8192
    static let timeoutMilliseconds = 5000
    /// Scrapes served at once; more wait in the listen backlog.
    static let maxClients = 64

    static let listenToken: UInt64 = 1 << 62 | 2
    private static let clientTag: UInt64 = 1 << 61

    let fd: Int32
    let port: Int
    /// False while `maxClients` connections are open.
    private var listening = true

    private struct Client {
        var head: [UInt8] = []
        var out: [UInt8] = []
        var written = 0
        var deadline: Instant
    }
    private var clients: [Int32: Client] = [:]

    init(host: String, port: Int) throws(StartupFailure) {
        var err = [CChar](repeating: 0, count: 256)
        let fd = csys_listen_tcp(host, Int32(port), 128, &err, err.count)
        guard fd >= 0 else {
            let reason = String(decoding: err.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw StartupFailure("--metrics-port: cannot listen on \(host):\(port): \(reason)")
        }
        self.fd = fd
        self.port = Int(csys_local_port(fd))
    }

    /// The poller reported `token`: false when it is not this endpoint's.
    func handle(_ token: UInt64, poller: borrowing Poller, now: Instant, render: () -> String) -> Bool {
        if token == MetricsEndpoint.listenToken {
            accept(poller: poller, now: now)
            return true
        }
        guard token & MetricsEndpoint.clientTag != 0, token >> 62 == 0 else { return false }
        let client = Int32(truncatingIfNeeded: token & 0xFFFF_FFFF)
        guard clients[client] != nil else { return true }
        if clients[client]!.out.isEmpty {
            read(client, poller: poller, render: render)
        } else {
            write(client, poller: poller)
        }
        return true
    }

    /// Closes connections whose exchange has taken too long.
    func expire(poller: borrowing Poller, now: Instant) {
        for (client, c) in clients where now >= c.deadline {
            close(client, poller: poller)
        }
    }

    private func accept(poller: borrowing Poller, now: Instant) {
        while true {
            guard clients.count < MetricsEndpoint.maxClients else {
                listening = false
                poller.modify(fd, token: MetricsEndpoint.listenToken, interest: [])
                return
            }
            var addr = [CChar](repeating: 0, count: 64)
            var port: Int32 = 0, isUnix: Int32 = 0, rawLength: Int32 = 0
            var raw = [UInt8](repeating: 0, count: 16)
            let client = csys_accept(fd, &addr, addr.count, &port, &isUnix, &raw, &rawLength)
            guard client >= 0 else { return }
            do {
                try poller.add(client, token: MetricsEndpoint.clientTag | UInt64(UInt32(bitPattern: client)), interest: .readable)
            } catch {
                _ = csys_close(client)
                continue
            }
            clients[client] = Client(deadline: now.adding(milliseconds: MetricsEndpoint.timeoutMilliseconds))
        }
    }

    private func read(_ client: Int32, poller: borrowing Poller, render: () -> String) {
        var buf = [UInt8](repeating: 0, count: 2048)
        let n = buf.withUnsafeMutableBytes { csys_read(client, $0.baseAddress, $0.count) }
        if n < 0 && csys_eagain(csys_errno()) != 0 { return }
        guard n > 0 else {
            close(client, poller: poller)
            return
        }
        clients[client]!.head += buf.prefix(n)
        let head = clients[client]!.head
        let response: [UInt8]
        if let end = MetricsEndpoint.headEnd(head) {
            response = MetricsEndpoint.respond(to: head[..<end], render: render)
        } else if head.count > MetricsEndpoint.maxHeadBytes {
            response = MetricsEndpoint.response(431, "Request Header Fields Too Large")
        } else {
            return
        }
        clients[client]!.out = response
        clients[client]!.head = []
        poller.modify(client, token: MetricsEndpoint.clientTag | UInt64(UInt32(bitPattern: client)), interest: .writable)
        write(client, poller: poller)
    }

    private func write(_ client: Int32, poller: borrowing Poller) {
        guard var c = clients[client] else { return }
        while c.written < c.out.count {
            let n = c.out.withUnsafeBytes { csys_write(client, $0.baseAddress! + c.written, $0.count - c.written) }
            if n > 0 {
                c.written += n
                continue
            }
            if n < 0 && csys_eagain(csys_errno()) != 0 {
                clients[client] = c
                return  // the rest when the socket has room
            }
            break  // the scraper went away
        }
        close(client, poller: poller)
    }

    private func close(_ client: Int32, poller: borrowing Poller) {
        poller.remove(client)
        _ = csys_close(client)
        clients[client] = nil
        if !listening {
            listening = true
            poller.modify(fd, token: MetricsEndpoint.listenToken, interest: .readable)
        }
    }

    // MARK: - HTTP/1.x

    /// The end of the head (after its empty line), or nil.
    static func headEnd(_ b: [UInt8]) -> Int? {
        var i = 0
        while i < b.count {
            if b[i] == UInt8(ascii: "\n") {
                if i + 1 < b.count && b[i + 1] == UInt8(ascii: "\n") { return i + 2 }
                if i + 2 < b.count && b[i + 1] == UInt8(ascii: "\r") && b[i + 2] == UInt8(ascii: "\n") { return i + 3 }
            }
            i += 1
        }
        return nil
    }

    /// The whole response to a complete head.
    static func respond(to head: ArraySlice<UInt8>, render: () -> String) -> [UInt8] {
        // request-line = method SP request-target SP HTTP-version (RFC 9112 §3)
        let line = head.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[2].starts(with: Array("HTTP/1.".utf8)) else {
            return response(400, "Bad Request")
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        let path = parts[1].prefix { $0 != UInt8(ascii: "?") }
        guard path.elementsEqual("/metrics".utf8) else { return response(404, "Not Found") }
        guard method == "GET" || method == "HEAD" else {
            return response(405, "Method Not Allowed", extra: "Allow: GET, HEAD\r\n")
        }
        let body = Array(render().utf8)
        var out = Array(("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n").utf8)
        if method == "GET" { out += body }
        return out
    }

    static func response(_ status: Int, _ reason: String, extra: String = "") -> [UInt8] {
        let body = "\(status) \(reason)\n"
        return Array(("HTTP/1.1 \(status) \(reason)\r\nContent-Type: text/plain; charset=utf-8\r\n\(extra)"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)").utf8)
    }
}
