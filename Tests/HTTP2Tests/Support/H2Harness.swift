// A client in memory for H2Connection tests (STYLE §7: hand-built frames,
// exact verdicts): builds frames with the FrameEncoder and a client-side
// HPACK encoder, feeds them through `nextEvent`, turns events into values,
// and decodes everything the connection wrote with a FrameParser and a
// client-side HPACK decoder.

import XCTest
import Core
@testable import HTTP2

/// A request head as strings.
struct Head: Equatable, CustomStringConvertible {
    var method = "", scheme = "", authority = "", path = "", protocolName = ""
    var fields: [[String]] = []
    var contentLength: Int64?
    var expectsContinue = false

    init(_ h: H2RequestHead) {
        func s(_ span: ByteSpan) -> String { text(h[span]) }
        method = s(h.method); scheme = s(h.scheme); authority = s(h.authority); path = s(h.path)
        protocolName = s(h.protocolName)
        fields = h.fields.map { [s($0.name), s($0.value)] }
        contentLength = h.contentLength
        expectsContinue = h.expectsContinue
    }

    var description: String { "\(method) \(scheme) \(authority) \(path) \(protocolName) \(fields) cl=\(String(describing: contentLength))" }
}

/// An event as a value (data copied out of the input).
enum Ev: Equatable {
    case request(UInt32, Head, endStream: Bool)
    case data(UInt32, [UInt8], flowControlled: Int, endStream: Bool)
    case trailers(UInt32, Head)
    case reset(UInt32, HTTP2ErrorCode)
    case window(UInt32)
    case goAway(UInt32, HTTP2ErrorCode)
    case connectionError(HTTP2ErrorCode, String)

    init(_ e: H2Event) {
        switch e {
        case .request(let id, let head, let end): self = .request(id, Head(head), endStream: end)
        case .data(let id, let b, let fc, let end): self = .data(id, Array(b), flowControlled: fc, endStream: end)
        case .trailers(let id, let head): self = .trailers(id, Head(head))
        case .streamReset(let id, let code): self = .reset(id, code)
        case .windowOpened(let id): self = .window(id)
        case .goAway(let last, let code): self = .goAway(last, code)
        case .connectionError(let code, let reason): self = .connectionError(code, "\(reason)")
        }
    }
}

/// A frame the connection wrote, header blocks decoded.
enum Out: Equatable {
    case settings([Setting])
    case settingsAck
    case headers(UInt32, [[String]], endStream: Bool)
    case data(UInt32, [UInt8], endStream: Bool)
    case rst(UInt32, HTTP2ErrorCode)
    case windowUpdate(UInt32, UInt32)
    case ping(ack: Bool, UInt64)
    case goAway(UInt32, HTTP2ErrorCode, String)
    case other(FrameType)
}

final class H2Harness {
    let conn: H2Connection
    var now = ms(1_000)
    var clientEncoder = HPACKEncoder()
    var clientDecoder = HPACKDecoder(maxHeaderListSize: 1 << 20)
    private var input: [UInt8] = []
    private var read = 0
    private var outBytes: [UInt8] = []
    private var outParser = FrameParser(maxFrameSize: 16_777_215, expectPreface: false)
    private var pendingBlock: (stream: UInt32, endStream: Bool, bytes: [UInt8])?
    /// Frames in the last decoded header block (HEADERS + CONTINUATIONs).
    var lastBlockFrames = 0
    /// Every raw frame header the connection wrote, in order.
    var writtenHeaders: [FrameHeader] = []

    init(limits: H2Limits = H2Limits(), handshake: Bool = true) {
        conn = H2Connection(limits: limits)
        guard handshake else { return }
        let events = feed(ConnectionPreface.bytes + settings([]))
        precondition(events.isEmpty, "handshake produced \(events)")
        let out = drain()
        precondition(out.contains(.settingsAck), "no SETTINGS ack in \(out)")
        _ = feed(settingsAck())
    }

    // MARK: feeding

    /// Appends `bytes` and pulls events until none is left.
    @discardableResult
    func feed(_ bytes: [UInt8]) -> [Ev] {
        input += bytes
        var events: [Ev] = []
        while true {
            let (event, n) = input[read...].withUnsafeBytes { conn.nextEvent(in: $0, now: now) }
            read += n
            guard let event else { break }
            events.append(Ev(event))
        }
        return events
    }

    /// Feeds `bytes` in chunks of `chunk`.
    func feed(_ bytes: [UInt8], chunk: Int) -> [Ev] {
        var events: [Ev] = []
        var i = 0
        while i < bytes.count {
            events += feed(Array(bytes[i ..< min(bytes.count, i + chunk)]))
            i += chunk
        }
        return events
    }

    var unconsumedInput: Int { input.count - read }

    // MARK: output

    /// Decodes and removes everything written so far.
    func drain() -> [Out] {
        outBytes += Array(conn.output.readable)
        conn.output.readerIndex = conn.output.writerIndex
        var out: [Out] = []
        var at = 0
        while true {
            let event = try! outBytes[at...].withUnsafeBytes { try outParser.nextEvent(in: $0) }
            guard case .frame(let frame, let n) = event else {
                guard case .needMoreData = event else { fatalError("output has a bad frame: \(event)") }
                break
            }
            let header = outBytes[at...].withUnsafeBytes { FrameHeader.decode($0, at: 0)! }
            writtenHeaders.append(header)
            let bytes = Array(outBytes[at ..< at + n])
            if let o = convert(frame, bytes) { out.append(o) }
            at += n
        }
        outBytes.removeFirst(at)
        return out
    }

    private func convert(_ frame: Frame, _ b: [UInt8]) -> Out? {
        switch frame {
        case .settings(let s):
            if s.ack { return .settingsAck }
            return .settings(b.withUnsafeBytes { raw in (0 ..< s.count).map { s.parameter($0, in: raw) } })
        case .headers(let h):
            pendingBlock = (h.streamID, h.endStream, slice(b, h.fieldBlockFragment))
            lastBlockFrames = 1
            return h.endHeaders ? finishBlock() : nil
        case .continuation(let c):
            precondition(pendingBlock?.stream == c.streamID, "stray CONTINUATION in output")
            pendingBlock!.bytes += slice(b, c.fieldBlockFragment)
            lastBlockFrames += 1
            return c.endHeaders ? finishBlock() : nil
        case .data(let d): return .data(d.streamID, slice(b, d.data), endStream: d.endStream)
        case .rstStream(let r): return .rst(r.streamID, r.errorCode)
        case .windowUpdate(let w): return .windowUpdate(w.streamID, w.increment)
        case .ping(let p): return .ping(ack: p.ack, p.opaqueData)
        case .goAway(let g): return .goAway(g.lastStreamID, g.errorCode, text(slice(b, g.debugData)[...]))
        default: return .other(b.withUnsafeBytes { FrameHeader.decode($0, at: 0)!.type })
        }
    }

    private func finishBlock() -> Out {
        let block = pendingBlock!
        pendingBlock = nil
        let list = try! clientDecoder.decode(block.bytes)
        return .headers(block.stream, pairs(list), endStream: block.endStream)
    }

    // MARK: client frames

    func settings(_ s: [Setting]) -> [UInt8] {
        encoded(size: FrameEncoder.settingsSize(count: s.count)) { FrameEncoder.encodeSettings(s, into: $0) }
    }

    func settingsAck() -> [UInt8] { encoded(size: FrameEncoder.settingsAckSize) { FrameEncoder.encodeSettingsAck(into: $0) } }

    func block(_ fields: [(String, String)]) -> [UInt8] { clientEncoder.encode(fields, indexing: .withoutIndexing) }

    func headers(_ stream: UInt32, _ fields: [(String, String)], endStream: Bool = true, endHeaders: Bool = true,
                 padLength: Int? = nil, priority: PrioritySpec? = nil) -> [UInt8] {
        headers(stream, block: block(fields), endStream: endStream, endHeaders: endHeaders, padLength: padLength, priority: priority)
    }

    func headers(_ stream: UInt32, block: [UInt8], endStream: Bool = true, endHeaders: Bool = true,
                 padLength: Int? = nil, priority: PrioritySpec? = nil) -> [UInt8] {
        encoded(size: FrameEncoder.headersSize(fieldBlockLength: block.count, priority: priority, padLength: padLength)) { out in
            block.withUnsafeBytes {
                FrameEncoder.encodeHeaders(streamID: stream, fieldBlock: $0, endStream: endStream, endHeaders: endHeaders,
                                           priority: priority, padLength: padLength, into: out)
            }
        }
    }

    func continuation(_ stream: UInt32, block: [UInt8], endHeaders: Bool) -> [UInt8] {
        encoded(size: FrameEncoder.continuationSize(fieldBlockLength: block.count)) { out in
            block.withUnsafeBytes { FrameEncoder.encodeContinuation(streamID: stream, fieldBlock: $0, endHeaders: endHeaders, into: out) }
        }
    }

    func data(_ stream: UInt32, _ payload: [UInt8], endStream: Bool = false, padLength: Int? = nil) -> [UInt8] {
        encoded(size: FrameEncoder.dataSize(dataLength: payload.count, padLength: padLength)) { out in
            payload.withUnsafeBytes {
                FrameEncoder.encodeData(streamID: stream, data: $0, endStream: endStream, padLength: padLength, into: out)
            }
        }
    }

    func windowUpdate(_ stream: UInt32, _ increment: UInt32) -> [UInt8] {
        rawFrame(.windowUpdate, stream: stream, be32(increment))
    }

    func rst(_ stream: UInt32, _ code: HTTP2ErrorCode) -> [UInt8] { rawFrame(.rstStream, stream: stream, be32(code.rawValue)) }

    func ping(_ data: UInt64, ack: Bool = false) -> [UInt8] {
        encoded(size: FrameEncoder.pingSize) { FrameEncoder.encodePing(ack: ack, opaqueData: data, into: $0) }
    }

    func priority(_ stream: UInt32, dependsOn: UInt32) -> [UInt8] {
        rawFrame(.priority, stream: stream, be32(dependsOn) + [15])
    }

    func goAway(_ last: UInt32, _ code: HTTP2ErrorCode) -> [UInt8] {
        rawFrame(.goAway, stream: 0, be32(last) + be32(code.rawValue))
    }

    /// A GET for `path` on example.com.
    func get(_ path: String = "/", extra: [(String, String)] = []) -> [(String, String)] {
        [(":method", "GET"), (":scheme", "https"), (":authority", "example.com"), (":path", path)] + extra
    }

    func post(_ path: String = "/upload", extra: [(String, String)] = []) -> [(String, String)] {
        [(":method", "POST"), (":scheme", "https"), (":authority", "example.com"), (":path", path)] + extra
    }

    // MARK: server actions

    func respond(_ stream: UInt32, status: Int, _ fields: [(String, String)] = [], endStream: Bool = false) {
        conn.beginHeaders(streamID: stream, status: status)
        for (n, v) in fields { addField(n, v) }
        conn.endHeaders(endStream: endStream)
    }

    func trailers(_ stream: UInt32, _ fields: [(String, String)]) {
        conn.beginTrailers(streamID: stream)
        for (n, v) in fields { addField(n, v) }
        conn.endHeaders(endStream: true)
    }

    func addField(_ n: String, _ v: String) {
        let nb = bytes(n), vb = bytes(v)
        nb.withUnsafeBytes { nr in vb.withUnsafeBytes { vr in conn.addField(name: nr, value: vr) } }
    }

    @discardableResult
    func send(_ stream: UInt32, _ payload: [UInt8], endStream: Bool = false) -> Int {
        payload.withUnsafeBytes { conn.sendData(streamID: stream, $0, endStream: endStream) }
    }
}

func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }

/// The request a `Head` for `h.get(path)` is expected to produce.
func getHead(_ path: String = "/", fields: [[String]] = [], authority: String = "example.com") -> Head {
    var h = Head(H2RequestHead())
    h.method = "GET"; h.scheme = "https"; h.authority = authority; h.path = path; h.fields = fields
    return h
}

extension Array where Element == Ev {
    /// The connection error in the list, if any.
    var connectionError: HTTP2ErrorCode? {
        for e in self { if case .connectionError(let c, _) = e { return c } }
        return nil
    }
}

extension Array where Element == Out {
    var goAwayCode: HTTP2ErrorCode? {
        for o in self { if case .goAway(_, let c, _) = o { return c } }
        return nil
    }
}
