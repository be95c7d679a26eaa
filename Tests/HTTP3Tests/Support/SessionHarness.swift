// Driving an H3Session as the glue would: per-stream held bytes, FIN, events
// turned into comparable values, held streams re-offered when a blocked
// field section is released, and the session's output parsed back with the
// module's own readers.

import XCTest
import Core
import HTTPFields
@testable import HTTP3

/// An `H3Event` as plain values (spans copied out).
enum Ev: Equatable, CustomStringConvertible {
    case request(UInt64, [String], end: Bool)
    case data(UInt64, String, end: Bool)
    case trailers(UInt64, [String])
    case reset(UInt64, H3ErrorCode)
    case streamError(UInt64, H3ErrorCode, String)
    case headTooLarge(UInt64, [UInt8])
    case ignored(UInt64, H3ErrorCode)
    case settings(H3Settings)
    case goAway(UInt64)
    case connectionError(H3ErrorCode, String)
    case webTransportStream(UInt64, bidirectional: Bool)

    init(_ e: H3Event) {
        switch e {
        case .request(let id, let head, let end): self = .request(id, describe(head), end: end)
        case .data(let id, let b, let end): self = .data(id, String(decoding: b, as: UTF8.self), end: end)
        case .trailers(let id, let head): self = .trailers(id, describe(head))
        case .streamReset(let id, let code): self = .reset(id, code)
        case .streamError(let id, let code, let reason): self = .streamError(id, code, "\(reason)")
        case .headTooLarge(let id, let r): self = .headTooLarge(id, Array(r))
        case .unknownStreamIgnored(let id, let code): self = .ignored(id, code)
        case .settings(let s): self = .settings(s)
        case .goAway(let id): self = .goAway(id)
        case .connectionError(let code, let reason): self = .connectionError(code, "\(reason)")
        case .webTransportStream(let id, let bidi): self = .webTransportStream(id, bidirectional: bidi)
        }
    }

    var description: String {
        switch self {
        case .request(let id, let f, let end): "request(\(id), \(f), end: \(end))"
        case .data(let id, let s, let end): "data(\(id), \(s.debugDescription), end: \(end))"
        case .trailers(let id, let f): "trailers(\(id), \(f))"
        case .reset(let id, let c): "reset(\(id), 0x\(String(c.rawValue, radix: 16)))"
        case .streamError(let id, let c, let r): "streamError(\(id), 0x\(String(c.rawValue, radix: 16)), \(r))"
        case .headTooLarge(let id, let b): "headTooLarge(\(id), \(b.count) bytes)"
        case .ignored(let id, let c): "ignored(\(id), 0x\(String(c.rawValue, radix: 16)))"
        case .settings(let s): "settings(\(s))"
        case .goAway(let id): "goAway(\(id))"
        case .connectionError(let c, let r): "connectionError(0x\(String(c.rawValue, radix: 16)), \(r))"
        case .webTransportStream(let id, let bidi): "webTransportStream(\(id), bidirectional: \(bidi))"
        }
    }

    /// A stream error or connection error built from a catalogue constant.
    static func error(_ id: UInt64, _ e: H3Error) -> Ev {
        e.isConnectionError ? .connectionError(e.code, "\(e.reason)") : .streamError(id, e.code, "\(e.reason)")
    }
}

/// "name: value" for the pseudo-header fields present, then the regular fields.
func describe(_ head: RequestHead) -> [String] {
    var out: [String] = []
    func add(_ name: String, _ span: ByteSpan) {
        if !span.isEmpty { out.append("\(name): \(text(head[span]))") }
    }
    add(":method", head.method)
    add(":scheme", head.scheme)
    add(":authority", head.authority)
    add(":path", head.path)
    add(":protocol", head.protocolName)
    for f in head.fields { out.append("\(text(head[f.name])): \(text(head[f.value]))") }
    return out
}

/// The glue's side of the contract in H3Session's file comment.
final class Glue {
    let session: H3Session
    private var held: [UInt64: [UInt8]] = [:]
    private var fins: Set<UInt64> = []
    /// Streams the glue reset or stopped after an event: nothing more is fed.
    private(set) var dead: Set<UInt64> = []
    var events: [Ev] = []
    /// Streams handed to WebTransport: the bytes after the signal or type
    /// (and all delivered later); the session is never fed them.
    private(set) var handedOff: [UInt64: [UInt8]] = [:]

    init(_ limits: H3Limits = H3Limits(), greaseSeed: UInt64 = 0, headerScratch: H3HeaderScratch = H3HeaderScratch()) {
        session = H3Session(limits: limits, greaseSeed: greaseSeed, headerScratch: headerScratch)
    }

    /// New bytes (and maybe the FIN) for stream `id`; runs it.
    func deliver(_ id: UInt64, _ bytes: [UInt8], fin: Bool = false) {
        if handedOff[id] != nil { handedOff[id]! += bytes }
        guard !dead.contains(id) else { return }
        held[id, default: []] += bytes
        if fin { fins.insert(id) }
        pump(id)
    }

    /// Delivers `bytes` in pieces of `pieceSize` bytes, the FIN with the
    /// last piece.
    func deliver(_ id: UInt64, _ bytes: [UInt8], fin: Bool = false, pieceSize: Int) {
        let size = max(1, pieceSize)
        var at = 0
        repeat {
            let end = size >= bytes.count - at ? bytes.count : at + size
            deliver(id, Array(bytes[at ..< end]), fin: fin && end == bytes.count)
            at = end
        } while at < bytes.count
    }

    func pump(_ id: UInt64) {
        guard !dead.contains(id) else { return }
        let buffer = held[id] ?? []
        var offset = 0
        var released: [UInt64] = []
        while true {
            let fin = fins.contains(id)
            let (event, n): (Ev?, Int) = buffer.withUnsafeBytes { p in
                let (e, n) = session.receive(streamID: id, UnsafeRawBufferPointer(rebasing: p[offset...]), fin: fin)
                return (e.map(Ev.init), n)
            }
            XCTAssertLessThanOrEqual(offset + n, buffer.count, "consumed more than given")
            offset += n
            guard let event else { break }
            record(event, released: &released, fed: id)
            if dead.contains(id) { break }
        }
        if dead.contains(id), case .webTransportStream(id, _)? = events.last { handedOff[id] = Array(buffer[offset...]) }
        held[id] = dead.contains(id) ? nil : Array(buffer[offset...])
        for other in released where other != id { pump(other) }
    }

    func opened(_ id: UInt64) {
        var released: [UInt64] = []
        if let e = session.peerOpened(streamID: id) { record(Ev(e), released: &released, fed: id) }
    }

    func reset(_ id: UInt64, _ code: H3ErrorCode = .requestCancelled) {
        var released: [UInt64] = []
        if let e = session.peerReset(streamID: id, code: code) { record(Ev(e), released: &released, fed: id) }
        dead.insert(id)
    }

    func stopSending(_ id: UInt64, _ code: H3ErrorCode = .requestCancelled) {
        var released: [UInt64] = []
        if let e = session.peerStopSending(streamID: id, code: code) { record(Ev(e), released: &released, fed: id) }
    }

    private func record(_ e: Ev, released: inout [UInt64], fed: UInt64) {
        events.append(e)
        switch e {
        case .request(let s, _, _), .trailers(let s, _):
            if s != fed { released.append(s) }
        case .reset(let s, _), .streamError(let s, _, _), .headTooLarge(let s, _), .webTransportStream(let s, _):
            dead.insert(s)
            held[s] = nil
        case .ignored(let s, _):
            // STOP_SENDING sent; what still arrives is passed and dropped.
            _ = s
        default:
            break
        }
    }

    /// Takes the events so far.
    func take() -> [Ev] {
        defer { events = [] }
        return events
    }

    /// What the session wants written on its stream `s` so far.
    func output(_ s: H3LocalStream) -> [UInt8] {
        var out: [UInt8] = []
        session.writeOutput(for: s, into: &out)
        return out
    }

    /// The usual client start: control stream with SETTINGS, encoder and
    /// decoder streams with their types; the settings event is dropped.
    func startClient(settings: H3Settings = H3Settings(qpackMaxTableCapacity: 4096, qpackBlockedStreams: 100),
                     encoder: [UInt8] = []) {
        deliver(2, Wire.control(settings))
        deliver(6, [0x02] + encoder)
        deliver(10, [0x03])
        XCTAssertEqual(take(), [.settings(settings)])
    }
}

/// Client-side bytes.
enum Wire {
    static let get: [(String, String)] = [(":method", "GET"), (":scheme", "https"), (":authority", "a.example"), (":path", "/")]
    static func post(_ path: String = "/up", _ extra: [(String, String)] = []) -> [(String, String)] {
        [(":method", "POST"), (":scheme", "https"), (":authority", "a.example"), (":path", path)] + extra
    }

    static func control(_ s: H3Settings, extra: [UInt8] = []) -> [UInt8] {
        var out: [UInt8] = [0x00]
        H3FrameEncoder.appendSettings(s, to: &out)
        return out + extra
    }

    static func headers(_ fields: [(String, String)]) -> [UInt8] {
        headers(section: QPACKEncoder().section(fields))
    }

    static func headers(section: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        section.withUnsafeBytes { H3FrameEncoder.appendHeaders($0, to: &out) }
        return out
    }

    static func data(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        H3FrameEncoder.appendDataHeader(length: s.utf8.count, to: &out)
        return out + Array(s.utf8)
    }

    static func frame(_ type: UInt64, _ payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        QUICVarInt.append(type, to: &out)
        QUICVarInt.append(UInt64(payload.count), to: &out)
        return out + payload
    }

    static func varint(_ v: UInt64) -> [UInt8] {
        var out: [UInt8] = []
        QUICVarInt.append(v, to: &out)
        return out
    }
}

/// Reads the session's output back with the module's readers.
enum Parse {
    /// Frames on one of our unidirectional streams after its type; unknown
    /// frames skipped as the reader does (control streams only).
    static func controlStream(_ bytes: [UInt8]) throws -> (type: UInt64, events: [H3FrameReader.Event]) {
        try bytes.withUnsafeBytes { (p: UnsafeRawBufferPointer) throws -> (UInt64, [H3FrameReader.Event]) in
            guard let (type, n) = QUICVarInt.decode(p, at: 0) else { throw H3Error.frameTruncatedAtEnd }
            var reader = H3FrameReader(kind: .control)
            var events: [H3FrameReader.Event] = []
            var i = n
            while i < p.count {
                let (e, m) = try reader.read(UnsafeRawBufferPointer(rebasing: p[i...]))
                i += m
                if let e { events.append(e) }
            }
            try reader.finish()
            return (type, events)
        }
    }

    /// Frames our control stream sends after its SETTINGS.
    static func laterControlFrames(_ bytes: [UInt8]) throws -> [H3FrameReader.Event] {
        Array(try controlStream([0x00, 0x04, 0x00] + bytes).events.dropFirst())
    }

    /// A response's frames: each HEADERS decoded (static-only decoder), DATA
    /// payloads joined per frame.
    enum Frame: Equatable { case headers([[String]]), data(String) }

    static func requestStream(_ bytes: [UInt8]) throws -> [Frame] {
        try bytes.withUnsafeBytes { (p: UnsafeRawBufferPointer) throws -> [Frame] in
            var reader = H3FrameReader(kind: .request)
            var decoder = QPACKDecoder(maxTableCapacity: 0)
            var frames: [Frame] = []
            var i = 0
            while i < p.count {
                let (e, m) = try reader.read(UnsafeRawBufferPointer(rebasing: p[i...]))
                switch e {
                case .headers?:
                    var list = HeaderList()
                    _ = try reader.payload.withUnsafeBytes { try decoder.decodeFieldSection($0, stream: 0, into: &list) }
                    frames.append(.headers(pairs(list)))
                case .dataHeader?: frames.append(.data(""))
                case .data(let r)?:
                    guard case .data(let s) = frames.removeLast() else { preconditionFailure() }
                    frames.append(.data(s + String(decoding: UnsafeRawBufferPointer(rebasing: p[i + r.lowerBound ..< i + r.upperBound]), as: UTF8.self)))
                default: break
                }
                i += m
            }
            try reader.finish()
            return frames
        }
    }

    enum DecoderInstruction: Equatable { case sectionAck(Int), cancel(Int), insertCountIncrement(Int) }

    /// Our QPACK decoder stream after its type (RFC 9204 §4.4).
    static func decoderInstructions(_ bytes: [UInt8]) throws -> [DecoderInstruction] {
        try bytes.withUnsafeBytes { (p: UnsafeRawBufferPointer) throws -> [DecoderInstruction] in
            var out: [DecoderInstruction] = []
            var i = 0
            while i < p.count {
                let first = p[i]
                let prefix = first & 0x80 != 0 ? 7 : 6
                let (v, n) = try IntegerCoding.decode(p, at: i, prefixBits: prefix)
                i += n
                out.append(first & 0x80 != 0 ? .sectionAck(v) : first & 0x40 != 0 ? .cancel(v) : .insertCountIncrement(v))
            }
            return out
        }
    }
}
