import CSys
import Core
import Gateway
import Options

/// One line per request on standard output, as text or JSON.
///
/// text: `127.0.0.1:52644 - "GET /path?q HTTP/1.1" 200 13 0.21ms`
/// json: `{"time": "...", "remote": "127.0.0.1", "port": 52644, "method":
/// "GET", "target": "/path?q", "version": "HTTP/1.1", "status": 200,
/// "bytes": 13, "duration_ms": 0.21}`
///
/// Behind a trusted proxy (`--forwarded-allow-ips`) the client is the one
/// the proxy named: its address and port (text: just the address when the
/// proxy gave no port; json: `"port": null`), or the `unknown` / obfuscated
/// identifier it sent.
struct AccessLog {
    let enabled: Bool
    let format: AccessLogFormat

    /// What the line needs of the request, copied before the request's
    /// bytes are released. A class: every connection holds an optional one,
    /// and a reference keeps that slot at 8 bytes when logging is off.
    final class RequestLine {
        let method: String
        let target: String
        let version: String
        /// The client a trusted proxy named (nil: the socket peer).
        let forwardedClient: String?
        let forwardedPort: Int?

        init(_ r: GatewayRequest) {
            method = String(decoding: r.bytes(r.method), as: UTF8.self)
            target = String(decoding: r.bytes(r.target), as: UTF8.self)
            version = r.httpVersion.description
            switch r.forwarded?.client {
            case .address(let address, let port)?:
                forwardedClient = address.description
                forwardedPort = port.map { Int($0) }
            case .unknown?:
                forwardedClient = "unknown"
                forwardedPort = nil
            case .obfuscated(let identifier)?:
                forwardedClient = identifier.description
                forwardedPort = nil
            case nil:
                forwardedClient = nil
                forwardedPort = nil
            }
        }
    }

    /// The line for a request that reached the application (or a response
    /// the server made for it), from what its exchange recorded.
    func record(_ line: RequestLine, _ exchange: HTTPExchange, peer: PeerInfo, now: Instant) {
        record(line, status: exchange.status, bytes: exchange.bytesOut, peer: peer,
               milliseconds: exchange.milliseconds(until: now))
    }

    func record(_ line: RequestLine, status: Int, bytes: Int64, peer: PeerInfo, milliseconds: Double) {
        let ms = formatMilliseconds(milliseconds)
        let text: String
        switch format {
        case .text:
            let who: String
            if let client = line.forwardedClient {
                who = line.forwardedPort.map { "\(client):\($0)" } ?? client
            } else {
                who = peer.isUnix ? "unix" : "\(peer.remoteAddress):\(peer.remotePort)"
            }
            text = "\(who) - \"\(line.method) \(line.target) \(line.version)\" \(status) \(bytes) \(ms)ms\n"
        case .json:
            let remote = line.forwardedClient ?? peer.remoteAddress
            let port = line.forwardedClient == nil ? "\(peer.remotePort)" : line.forwardedPort.map { "\($0)" } ?? "null"
            text = "{\"time\": \"\(Log.timestamp())\", \"remote\": \(jsonString(remote)), \"port\": \(port), "
                + "\"method\": \(jsonString(line.method)), \"target\": \(jsonString(line.target)), "
                + "\"version\": \"\(line.version)\", \"status\": \(status), \"bytes\": \(bytes), \"duration_ms\": \(ms)}\n"
        }
        Log.writeAll(1, text)
    }

    /// A request refused before it reached the application (4xx/5xx from the
    /// parser or a timeout).
    func recordRejected(status: Int, peer: PeerInfo) {
        let text: String
        switch format {
        case .text:
            let who = peer.isUnix ? "unix" : "\(peer.remoteAddress):\(peer.remotePort)"
            text = "\(who) - \"-\" \(status) 0 -\n"
        case .json:
            text = "{\"time\": \"\(Log.timestamp())\", \"remote\": \(jsonString(peer.remoteAddress)), \"port\": \(peer.remotePort), "
                + "\"method\": null, \"target\": null, \"version\": null, \"status\": \(status), \"bytes\": 0, \"duration_ms\": null}\n"
        }
        Log.writeAll(1, text)
    }

    private func formatMilliseconds(_ v: Double) -> String {
        let hundredths = Int((v * 100).rounded())
        let frac = hundredths % 100
        return "\(hundredths / 100).\(frac < 10 ? "0" : "")\(frac)"
    }

    private func jsonString(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    let hex = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}
