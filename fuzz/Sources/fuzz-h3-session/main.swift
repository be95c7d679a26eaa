// libFuzzer target for the HTTP/3 server session (RFC 9114, RFC 9204) over
// abstract streams: every byte a client can send above QUIC, on every kind
// of stream, with resets and the server's own actions in between (see
// fuzz/README.md for building and running).
//
// Input: byte 0 configures (bit 0: extended CONNECT enabled; bits 1–2: QPACK
// blocked streams 0–3; bit 3: the split run feeds a byte at a time instead of
// at a derived point; bits 4–6: grease seed; bit 7: WebTransport on — streams
// the session hands over, CONNECTs with a WebTransport :protocol and their
// DATA go to a WebTransportRegistry as the glue would route them, and
// "answer every request" accepts the sessions). The rest is chunks separated by
// ff fe; a chunk's first byte says what it is:
//   * bits 0–2: the stream — 0 control (2), 1 QPACK encoder (6), 2 QPACK
//     decoder (10), 3 an unknown-type unidirectional stream (14), 4–7
//     request streams 0, 4, 8, 12;
//   * bit 3: the FIN comes with the chunk;
//   * bits 4–5: 0/1 bytes, 2 the client resets the stream, 3 the client
//     sends STOP_SENDING (on a request stream; on a unidirectional one it
//     names the server's stream 3, 7 or 11);
//   * bits 6–7 (after the chunk): 1 answer every request (200 echoing its
//     fields, then the end), 2 GOAWAY, 3 stop reading that request stream.
// The session runs twice as a glue drives it — held bytes per stream, streams
// re-offered when their blocked field section is released, nothing fed after
// a stream error — once with each chunk whole, once split.
//
// Checks: `receive` never consumes more than it is given, and returns nil
// only having consumed everything or with the stream blocked; DATA spans lie
// inside the bytes given; nothing follows a connection error; both runs fail
// alike, and without a failure give every stream the same events (joined
// DATA) and write the same bytes on our three streams; our control stream
// reads back as SETTINGS first and GOAWAY identifiers that never grow; our
// decoder stream is well-formed instructions; every request head re-encodes
// (static table and literals) and decodes back to the same head; every
// response head the session frames reads back to the fields given. With
// WebTransport: the registry never consumes more than given, its stream data
// lies inside the bytes given, and its events are the same in both runs.

import Core
import FuzzSupport
import HTTPFields
import HTTP3

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

func describe(_ head: RequestHead) -> [[UInt8]] {
    var out: [[UInt8]] = []
    for s in [head.method, head.scheme, head.authority, head.path, head.protocolName] { out.append(Array(head[s])) }
    for f in head.fields { out.append(Array(head[f.name])); out.append(Array(head[f.value])) }
    return out
}

/// A request head encoded with the static-only encoder, decoded and
/// validated again, is the same head.
func roundTrip(_ head: RequestHead, connect: Bool) {
    var section: [UInt8] = []
    let encoder = QPACKEncoder()
    encoder.beginSection(into: &section)
    head.storage.withUnsafeBytes { all in
        func put(_ name: StaticString, _ s: ByteSpan) {
            guard !s.isEmpty else { return }
            name.withUTF8Buffer { encoder.encode(name: UnsafeRawBufferPointer($0), value: UnsafeRawBufferPointer(rebasing: all[s.start ..< s.end]), into: &section) }
        }
        put(":method", head.method)
        put(":scheme", head.scheme)
        put(":authority", head.authority)
        put(":path", head.path)
        put(":protocol", head.protocolName)
        for f in head.fields {
            encoder.encode(name: UnsafeRawBufferPointer(rebasing: all[f.name.start ..< f.name.end]),
                           value: UnsafeRawBufferPointer(rebasing: all[f.value.start ..< f.value.end]), into: &section)
        }
    }
    var decoder = QPACKDecoder(maxTableCapacity: 0, maxBlockedStreams: 0, maxFieldSectionSize: Int.max / 2)
    var list = HeaderList()
    var validator = RequestFieldValidator(allowProtocol: connect)
    do {
        let done = try section.withUnsafeBytes { (s) throws(H3Error) in try decoder.decodeFieldSection(s, stream: 0, into: &list) }
        check(done, "a static-only section blocked")
        let again = try validator.build(list, trailers: false)
        check(describe(again) == describe(head), "request head round trip changed it")
    } catch {
        // A head without :authority takes it from host; re-encoded, host
        // comes after the pseudo-header fields — still valid, so any
        // failure is a bug.
        fatalError("re-encoded request head does not decode: \(error)")
    }
}

/// Our response frames read back: one HEADERS whose fields are `expected`.
func readResponse(_ bytes: [UInt8], expected: [[UInt8]]) {
    bytes.withUnsafeBytes { p in
        var reader = H3FrameReader(kind: .request)
        var decoder = QPACKDecoder(maxTableCapacity: 0, maxBlockedStreams: 0, maxFieldSectionSize: Int.max / 2)
        do {
            let (event, n) = try reader.read(p)
            check(event == .headers && n == p.count, "response head is not one HEADERS frame")
            var list = HeaderList()
            _ = try reader.payload.withUnsafeBytes { (s) throws(H3Error) in try decoder.decodeFieldSection(s, stream: 0, into: &list) }
            var got: [[UInt8]] = []
            for f in list.fields { got.append(Array(list.bytes[f.name.start ..< f.name.end])); got.append(Array(list.bytes[f.value.start ..< f.value.end])) }
            check(got == expected, "response head read back differently")
        } catch {
            fatalError("response head does not read back: \(error)")
        }
    }
}

/// One stream's events: DATA joined, the rest as text.
enum Item: Equatable { case data([UInt8]), text(String) }

struct Run: Equatable {
    var perStream: [UInt64: [Item]] = [:]
    var connection: [String] = []
    var failed = false
    /// Our control and encoder streams, byte for byte.
    var output: [[UInt8]] = [[], []]
    /// Our decoder stream's instructions, sorted: streams released by one
    /// encoder-stream read are acknowledged in the order they are released,
    /// which depends on how the read was split.
    var decoderInstructions: [[UInt8]] = []
}

final class Glue {
    let session: H3Session
    let connect: Bool
    /// WebTransport: the registry, the streams handed to it, and sessions.
    let wt: WebTransportRegistry?
    var wtStreams: Set<UInt64> = []
    var wtSessions: Set<UInt64> = []
    var held: [UInt64: [UInt8]] = [:]
    var fins: Set<UInt64> = []
    var dead: Set<UInt64> = []
    var answerable: [UInt64: [[UInt8]]] = [:]
    var run = Run()

    init(_ limits: H3Limits, seed: UInt64) {
        session = H3Session(limits: limits, greaseSeed: seed)
        connect = limits.enableConnectProtocol
        wt = limits.webTransport.map { WebTransportRegistry(limits: $0) }
    }

    func note(_ id: UInt64, _ item: Item) {
        if case .data(let new) = item, case .data(let prev)? = run.perStream[id]?.last {
            run.perStream[id]![run.perStream[id]!.count - 1] = .data(prev + new)
        } else {
            run.perStream[id, default: []].append(item)
        }
    }

    func note(_ id: UInt64, _ s: String) { note(id, .text(s)) }

    /// Records an event; returns a stream to re-offer, if any.
    func record(_ e: H3Event, fed: UInt64, input: UnsafeRawBufferPointer) -> UInt64? {
        check(!run.failed, "an event after the connection error")
        switch e {
        case .request(let id, let head, let end):
            roundTrip(head, connect: connect || wt != nil)
            note(id, "request \(describe(head)) \(end)")
            if let wt {
                let draft = head.storage.withUnsafeBytes { all in
                    WebTransportDraft.requested(byProtocol: UnsafeRawBufferPointer(rebasing: all[head.protocolName.start ..< head.protocolName.end]))
                }
                if let draft {
                    wtSessions.insert(id)
                    wt.connectReceived(streamID: id, draft: draft)
                    if end { wt.connectStreamData(sessionID: id, UnsafeRawBufferPointer(start: nil, count: 0), fin: true) }
                } else {
                    wt.ordinaryRequest(streamID: id)
                }
                drainWT()
            }
            answerable[id] = head.fields.flatMap { [Array(head[$0.name]), Array(head[$0.value])] }
            return id == fed ? nil : id
        case .data(let id, let bytes, let end):
            if bytes.count > 0 {
                let base = UInt(bitPattern: input.baseAddress), start = UInt(bitPattern: bytes.baseAddress)
                check(start >= base && start + UInt(bytes.count) <= base + UInt(input.count), "DATA outside the input")
            }
            note(id, .data(Array(bytes)))
            if end { note(id, "end") }
            if let wt, wtSessions.contains(id) {
                wt.connectStreamData(sessionID: id, bytes, fin: end)
                drainWT()
            }
        case .trailers(let id, let head):
            note(id, "trailers \(describe(head))")
            return id == fed ? nil : id
        case .streamReset(let id, let code):
            note(id, "reset \(code.rawValue)")
            dead.insert(id)
            if let wt, wtSessions.contains(id) {
                wt.connectStreamReset(sessionID: id)
                drainWT()
            }
        case .streamError(let id, let code, let reason):
            note(id, "error \(code.rawValue) \(reason)")
            dead.insert(id)
        case .headTooLarge(let id, let response):
            note(id, "431 \(Array(response))")
            dead.insert(id)
        case .unknownStreamIgnored(let id, let code):
            note(id, "ignored \(code.rawValue)")
        case .settings(let s):
            run.connection.append("settings \(s)")
            wt?.peerSettingsReceived(s)
            drainWT()
        case .goAway(let id):
            run.connection.append("goaway \(id)")
        case .connectionError:
            run.failed = true
        case .webTransportStream(let id, let bidi):
            // Handed to WebTransport: never fed to the session again.
            note(id, "webtransport \(bidi)")
            check(wt != nil, "a hand-over with WebTransport off")
            wtStreams.insert(id)
            wt?.streamOpened(streamID: id, bidirectional: bidi)
        }
        return nil
    }

    func deliver(_ id: UInt64, _ bytes: UnsafeRawBufferPointer, fin: Bool) {
        // QUIC delivers nothing past a stream's FIN (RFC 9000 §4.5: data
        // beyond the final size is a FINAL_SIZE_ERROR), nor after a reset.
        guard !dead.contains(id), !fins.contains(id) else { return }
        held[id, default: []] += bytes
        if fin { fins.insert(id) }
        pump(id)
    }

    /// Where the registry's events are noted: apart from the HTTP/3 events
    /// of the same stream, so a CONNECT stream's DATA joins across splits.
    func wtKey(_ id: UInt64) -> UInt64 { id | 1 << 62 }

    /// Acts on the registry's events as the glue would.
    func drainWT() {
        guard let wt else { return }
        while let e = wt.nextEvent() {
            switch e {
            case .streamReleased(let id): pumpWT(id)
            case .abortStream(let id, let code):
                note(wtKey(id), "wt abort \(code.rawValue)")
                dead.insert(id)
            case .connectionError(let code, _):
                run.connection.append("wt connection error \(code.rawValue)")
                run.failed = true
            case .sessionRequested(let id, let draft): note(wtKey(id), "wt requested \(draft)")
            case .sessionRefused(let id, let code): note(wtKey(id), "wt refused \(code.rawValue)")
            case .sessionClosed(let id, let code, let message): note(wtKey(id), "wt closed \(code) \(message)")
            case .sessionFailed(let id, let code): note(wtKey(id), "wt failed \(code.rawValue)")
            case .sessionDraining(let id): note(wtKey(id), "wt draining")
            case .datagram(let id, let payload): note(wtKey(id), "wt datagram \(payload)")
            case .streamReset(let s, let id, let code): note(wtKey(id), "wt reset \(s) \(String(describing: code))")
            case .streamStopped(let s, let id, let code): note(wtKey(id), "wt stopped \(s) \(String(describing: code))")
            case .streamData: fatalError("stream data comes from receive only")
            }
        }
    }

    /// A stream handed to the registry, fed as the session is.
    func pumpWT(_ id: UInt64) {
        guard let wt, !dead.contains(id), !run.failed else { return }
        let buffer = held[id] ?? []
        var offset = 0
        buffer.withUnsafeBytes { p in
            while !run.failed && !dead.contains(id) {
                let input = UnsafeRawBufferPointer(rebasing: p[offset...])
                let (event, n) = wt.receive(streamID: id, input, fin: fins.contains(id))
                check(n <= input.count, "the registry consumed more than given")
                offset += n
                if case .streamData(let session, let stream, let bytes, let fin)? = event {
                    check(stream == id, "data for another stream")
                    if bytes.count > 0 {
                        let base = UInt(bitPattern: input.baseAddress), start = UInt(bitPattern: bytes.baseAddress)
                        check(start >= base && start + UInt(bytes.count) <= base + UInt(input.count), "WebTransport data outside the input")
                    }
                    note(id, .data(Array(bytes)))
                    if fin {
                        note(wtKey(id), "wt end \(session)")
                        dead.insert(id)
                    }
                }
                drainWT()
                if event == nil && (n == 0 || offset == buffer.count) { break }
            }
        }
        held[id] = dead.contains(id) ? [] : Array(buffer[offset...])
    }

    func pump(_ id: UInt64) {
        if wtStreams.contains(id) { return pumpWT(id) }
        guard !dead.contains(id), !run.failed else { return }
        let buffer = held[id] ?? []
        var offset = 0
        var again: [UInt64] = []
        buffer.withUnsafeBytes { p in
            while !run.failed && !dead.contains(id) {
                let input = UnsafeRawBufferPointer(rebasing: p[offset...])
                let (event, n) = session.receive(streamID: id, input, fin: fins.contains(id))
                check(n <= input.count, "consumed more than given")
                offset += n
                guard let event else {
                    check(n == input.count || session.isBlocked(streamID: id), "stopped short without an event")
                    break
                }
                if let other = record(event, fed: id, input: input) { again.append(other) }
                if wtStreams.contains(id) { break }
            }
        }
        held[id] = Array(buffer[offset...])
        if wtStreams.contains(id) { pumpWT(id) }
        for other in again { pump(other) }
    }

    func answerAll() {
        if let wt {
            for id in wtSessions.sorted() where wt.draft(ofSession: id) != nil { wt.accept(sessionID: id) }
            drainWT()
        }
        for (id, fields) in answerable.sorted(by: { $0.key < $1.key }) where session.canSend(streamID: id) {
            var out: [UInt8] = []
            session.beginHeaders(streamID: id, status: 200)
            for i in stride(from: 0, to: fields.count, by: 2) {
                fields[i].withUnsafeBytes { n in fields[i + 1].withUnsafeBytes { v in session.addField(name: n, value: v) } }
            }
            if session.endHeaders(into: &out) {
                readResponse(out, expected: [Array(":status".utf8), Array("200".utf8)] + fields)
                session.endResponse(streamID: id)
            }
            answerable[id] = nil
        }
    }

    func finish() -> Run {
        session.writeOutput(for: .control, into: &run.output[0])
        session.writeOutput(for: .qpackEncoder, into: &run.output[1])
        check(run.output[1] == [0x02], "our encoder stream carries its type only")
        var decoderStream: [UInt8] = []
        session.writeOutput(for: .qpackDecoder, into: &decoderStream)
        checkControlStream(run.output[0])
        run.decoderInstructions = decoderInstructions(decoderStream).sorted { $0.lexicographicallyPrecedes($1) }
        return run
    }
}

func checkControlStream(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { p in
        check(p.first == 0x00, "control stream type")
        var reader = H3FrameReader(kind: .control)
        var i = 1
        var last: UInt64?
        var first = true
        while i < p.count {
            do {
                let (e, n) = try reader.read(UnsafeRawBufferPointer(rebasing: p[i...]))
                i += n
                switch e {
                case .settings?: check(first, "SETTINGS twice")
                case .goaway(let id)?:
                    check(last.map { id < $0 } ?? true, "GOAWAY identifier did not decrease")
                    last = id
                case nil: break
                default: fatalError("unexpected frame on our control stream")
                }
                if e != nil { first = false }
            } catch {
                fatalError("our control stream does not read back: \(error)")
            }
        }
    }
}

/// Our decoder stream as whole instructions (RFC 9204 §4.4).
func decoderInstructions(_ bytes: [UInt8]) -> [[UInt8]] {
    bytes.withUnsafeBytes { p in
        check(p.first == 0x03, "decoder stream type")
        var out: [[UInt8]] = []
        var i = 1
        while i < p.count {
            let prefix = p[i] & 0x80 != 0 ? 7 : 6
            do {
                let n = try IntegerCoding.decode(p, at: i, prefixBits: prefix).length
                out.append(Array(p[i ..< i + n]))
                i += n
            } catch {
                fatalError("our decoder stream is not whole instructions: \(error)")
            }
        }
        return out
    }
}

func runSession(_ config: UInt8, _ chunks: [UnsafeRawBufferPointer], split: (Int) -> [Int]) -> Run {
    var limits = H3Limits()
    limits.enableConnectProtocol = config & 1 != 0
    limits.qpackBlockedStreams = Int(config >> 1) & 3
    limits.qpackMaxTableCapacity = 256
    limits.maxFieldSectionSize = 512
    limits.maxHeadersFrameBytes = 256
    limits.maxSettingsFrameBytes = 64
    limits.maxConcurrentStreams = 3
    if config & 0x80 != 0 {
        var wt = WebTransportLimits()
        wt.maxSessions = 2
        wt.maxBufferedStreams = 2
        wt.maxBufferedDatagrams = 2
        wt.maxEarlyConnectBytes = 64
        wt.initialMaxData = 32
        wt.initialMaxStreamsBidi = 2
        wt.initialMaxStreamsUni = 2
        limits.webTransport = wt
    }
    let glue = Glue(limits, seed: UInt64((config >> 4) & 7) &* 0x9e37_79b9_7f4a_7c15)
    let streams: [UInt64] = [2, 6, 10, 14, 0, 4, 8, 12]
    for chunk in chunks where !chunk.isEmpty && !glue.run.failed {
        let op = chunk[0]
        let id = streams[Int(op & 7)]
        let body = UnsafeRawBufferPointer(rebasing: chunk[1...])
        switch (op >> 4) & 3 {
        case 2:
            if glue.wtStreams.contains(id) {
                glue.wt?.peerReset(streamID: id, code: H3ErrorCode(rawValue: UInt64(op)), finalSize: UInt64(body.count))
                glue.drainWT()
            } else if let e = glue.session.peerReset(streamID: id, code: H3ErrorCode(rawValue: UInt64(op))) {
                _ = glue.record(e, fed: id, input: body)
            }
            glue.dead.insert(id)
        case 3:
            let target = id & 2 == 2 ? UInt64(op & 3) * 4 + 3 : id
            if glue.wtStreams.contains(target) {
                glue.wt?.peerStopSending(streamID: target, code: .requestCancelled)
                glue.drainWT()
            } else if let e = glue.session.peerStopSending(streamID: target, code: .requestCancelled) {
                _ = glue.record(e, fed: target, input: body)
            }
        default:
            var last = 0
            let fin = op & 8 != 0
            let cuts = split(body.count) + [body.count]
            for cut in cuts where cut >= last {
                glue.deliver(id, UnsafeRawBufferPointer(rebasing: body[last ..< cut]), fin: fin && cut == body.count)
                last = cut
            }
        }
        guard !glue.run.failed else { break }
        switch op >> 6 {
        case 1: glue.answerAll()
        case 2:
            glue.session.goAway(announceOnly: op & 0x20 != 0)
            glue.wt?.goAway()
            glue.drainWT()
        case 3: if id & 3 == 0 { glue.session.stopReading(streamID: id) }
        default: break
        }
    }
    return glue.finish()
}

@discardableResult
func fuzzOne(_ input: UnsafeRawBufferPointer) -> Run? {
    guard let config = input.first else { return nil }
    let payload = UnsafeRawBufferPointer(rebasing: input[1...])
    var chunks: [UnsafeRawBufferPointer] = []
    var start = 0
    var i = 0
    while i <= payload.count {
        if i == payload.count || (i + 1 < payload.count && payload[i] == 0xff && payload[i + 1] == 0xfe) {
            chunks.append(UnsafeRawBufferPointer(rebasing: payload[start ..< i]))
            start = i + 2
            i += 2
            continue
        }
        i += 1
    }
    let whole = runSession(config, chunks) { _ in [] }
    let split = runSession(config, chunks) { n in
        config & 8 != 0 ? Array(0 ..< n) : (n == 0 ? [] : [(Int(config) * 7 + n / 3) % n])
    }
    check(whole.failed == split.failed, "split changed whether the connection failed")
    if !whole.failed {
        check(whole == split, "split changed the outcome:\n\(whole)\n\(split)")
    }
    return whole
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's `main` for this executable (see FuzzSupport).
@_cdecl("fuzz_h3_session_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runLibFuzzer(argc, argv, fuzz)
}
#else
// A declaration rather than statements, so the file also parses in the
// -parse-as-library mode of the fuzzing build (see fuzz-qpack).
// Replaying prints what the whole run saw, per stream.
let replayStatus: Never = replay(CommandLine.arguments.dropFirst()) { path, bytes in
    guard let run = fuzzOne(bytes) else { return }
    print("\(path): \(run.failed ? "connection error" : "ok"), \(run.connection)")
    for (id, items) in run.perStream.sorted(by: { $0.key < $1.key }) {
        print("  stream \(id): \(items.map { if case .text(let t) = $0 { t } else if case .data(let d) = $0 { "data \(d.count) bytes" } else { "" } })")
    }
}
#endif
