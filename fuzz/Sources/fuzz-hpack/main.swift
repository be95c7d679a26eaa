// libFuzzer target for the HTTP/2 input path: HPACK decoding, the frame
// parser and the server connection (see fuzz/README.md for building and running).
//
// The first input byte picks the mode; the rest is the payload:
//  * bits 0-1 = 3: the whole server connection (H2Connection). The payload
//    follows the client preface (and, when bit 2 is set, an empty SETTINGS
//    frame, so the fuzzer starts past the handshake) and is fed whole, a byte
//    at a time and in 7-byte chunks; all three must give the same events and
//    the same output. Bit 3 picks the server's part: passive (never writes,
//    never consumes: everything in `output` was provoked by the peer, and
//    must stay within the control-frame budget) or active (answers each
//    request with a head and a body, consumes all data). Checks: no crash;
//    every frame written parses; streams never exceed the concurrency limit;
//    a connection error leaves the connection finished and swallowing input.
//  * even: HPACK. The payload is split into header blocks at 0xff 0xfe
//    markers and decoded in order by one decoder (table state carries over),
//    with a small list limit so the 431 and bomb paths are reachable. Checks:
//    no crash; every field span lies in the arena; a failed block leaves the
//    list unchanged; the table never exceeds its maximum size; fields that
//    decoded are re-encoded and decode back to the same bytes.
//  * bits 0-1 = 1: frames. The payload is fed to a FrameParser (preface not expected)
//    whole and a byte at a time; both must yield the same events and verdict,
//    and every span must lie inside the consumed frame.
//
// Built with -D FUZZING, -parse-as-library and -sanitize=fuzzer it defines
// LLVMFuzzerTestOneInput; built plainly it replays files given as arguments.

import Core
import FuzzSupport
import HTTP2

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

func fuzzHPACK(_ bytes: UnsafeRawBufferPointer) {
    var decoder = HPACKDecoder(maxTableSize: 256, maxHeaderListSize: 512)
    var list = HeaderList()
    var start = 0
    var i = 0
    while i <= bytes.count {
        let atMarker = i + 1 < bytes.count && bytes[i] == 0xff && bytes[i + 1] == 0xfe
        if i == bytes.count || atMarker {
            let block = UnsafeRawBufferPointer(rebasing: bytes[start ..< i])
            list.removeAll()
            do {
                try decoder.decode(block, into: &list)
                for f in list.fields {
                    check(f.name.end <= list.bytes.count && f.value.end <= list.bytes.count, "span outside arena")
                }
                roundTrip(list)
            } catch {
                check(list.count == 0 && list.bytes.isEmpty, "failed block left fields behind")
                if error.isConnectionError { return }
            }
            check(decoder.table.size <= decoder.table.maxSize, "table over its maximum")
            i += 2
            start = i
            continue
        }
        i += 1
    }
}

func roundTrip(_ list: HeaderList) {
    var encoder = HPACKEncoder()
    var decoder = HPACKDecoder(maxHeaderListSize: Int.max / 8)
    var wire: [UInt8] = []
    list.bytes.withUnsafeBytes { all in
        for f in list.fields {
            encoder.encode(name: UnsafeRawBufferPointer(rebasing: all[f.name.start ..< f.name.end]),
                           value: UnsafeRawBufferPointer(rebasing: all[f.value.start ..< f.value.end]),
                           indexing: f.isNeverIndexed ? .neverIndexed : .incremental, into: &wire)
        }
    }
    var again = HeaderList()
    do {
        try wire.withUnsafeBytes { try decoder.decode($0, into: &again) }
    } catch {
        fatalError("re-encoded block failed to decode: \(error)")
    }
    check(again.count == list.count, "round trip changed the field count")
    for i in 0 ..< list.count {
        check(again.name(i) == list.name(i) && again.value(i) == list.value(i), "round trip changed field \(i)")
    }
}

func frameEvents(_ bytes: UnsafeRawBufferPointer, chunk: Int) -> ([FrameParser.Event], FrameError?) {
    var parser = FrameParser(maxFrameSize: 16_384, expectPreface: false)
    var events: [FrameParser.Event] = []
    var read = 0
    var available = 0
    while true {
        available = min(bytes.count, available + chunk)
        while true {
            let view = UnsafeRawBufferPointer(rebasing: bytes[read ..< available])
            let event: FrameParser.Event
            do { event = try parser.nextEvent(in: view) } catch { return (events, error) }
            switch event {
            case .needMoreData: break
            case .prefaceReceived(let n), .streamError(_, let n):
                events.append(event); read += n; continue
            case .frame(let frame, let n):
                checkSpans(frame, within: n)
                events.append(event); read += n; continue
            }
            break
        }
        if available == bytes.count { return (events, nil) }
    }
}

func checkSpans(_ frame: Frame, within n: Int) {
    let spans: [ByteSpan]
    switch frame {
    case .data(let f): spans = [f.data]
    case .headers(let f): spans = [f.fieldBlockFragment]
    case .pushPromise(let f): spans = [f.fieldBlockFragment]
    case .continuation(let f): spans = [f.fieldBlockFragment]
    case .goAway(let f): spans = [f.debugData]
    case .settings(let f): spans = [f.parameters]
    case .unknown(let f): spans = [f.payload]
    case .priority, .rstStream, .ping, .windowUpdate: spans = []
    }
    for s in spans { check(s.start >= FrameHeader.size && s.end <= n && s.count >= 0, "span outside its frame") }
}

/// Small limits so short inputs reach every budget.
func fuzzLimits() -> H2Limits {
    var l = H2Limits()
    l.maxConcurrentStreams = 4
    l.initialStreamWindow = 1024
    l.connectionWindow = 70_000
    l.maxHeaderListSize = 512
    l.headerTableSize = 256
    l.enableConnectProtocol = true
    l.maxQueuedControlFrames = 32
    l.rapidResetBurst = 8
    l.rapidResetPerSecond = 1
    l.emptyFrameBurst = 8
    l.emptyFramesPerSecond = 1
    l.maxContinuationFrames = 3
    l.maxHeaderBlockBytes = 16_384
    l.closedStreamMemory = 4
    return l
}

/// One event, copied out of the input so runs can be compared.
struct EventSummary: Equatable {
    var kind: UInt8
    var stream: UInt32 = 0
    var code: UInt32 = 0
    var bytes: [UInt8] = []
    var end = false
    /// A connection error for too many control frames queued unsent.
    var controlFlood = false
}

func summarize(_ e: H2Event) -> EventSummary {
    switch e {
    case .request(let id, let head, let end):
        return EventSummary(kind: 0, stream: id, bytes: head.storage, end: end)
    case .data(let id, let b, let fc, let end):
        check(b.count <= fc, "data longer than its flow-controlled length")
        return EventSummary(kind: 1, stream: id, code: UInt32(fc), bytes: Array(b), end: end)
    case .trailers(let id, let head): return EventSummary(kind: 2, stream: id, bytes: head.storage)
    case .streamReset(let id, let code): return EventSummary(kind: 3, stream: id, code: code.rawValue)
    case .windowOpened(let id): return EventSummary(kind: 4, stream: id)
    case .goAway(let last, let code): return EventSummary(kind: 5, stream: last, code: code.rawValue)
    case .connectionError(let code, let reason):
        // By content: an optimised build may give the same literal two addresses.
        let flood = reason.withUTF8Buffer { a in H2Error.controlFrameFlood.reason.withUTF8Buffer { b in a.elementsEqual(b) } }
        return EventSummary(kind: 6, code: code.rawValue, controlFlood: flood)
    }
}

func checkHead(_ head: H2RequestHead) {
    for f in head.fields {
        check(f.name.end <= head.storage.count && f.value.end <= head.storage.count, "field span outside the head")
        check(head.storage[f.name.start ..< f.name.end].allSatisfy { !($0 >= 0x41 && $0 <= 0x5a) && $0 > 0x20 && $0 != 0x3a },
              "invalid field name reached the application")
        check(!head.storage[f.value.start ..< f.value.end].contains { $0 == 0 || $0 == 0x0a || $0 == 0x0d },
              "NUL, CR or LF in a field value reached the application")
    }
    for s in [head.method, head.scheme, head.authority, head.path, head.protocolName] {
        check(s.end <= head.storage.count, "pseudo-header span outside the head")
    }
}

/// Runs the connection over `bytes` fed `chunk` bytes at a time.
func runConnection(_ bytes: [UInt8], chunk: Int, active: Bool) -> ([EventSummary], [UInt8]) {
    let limits = fuzzLimits()
    let conn = H2Connection(limits: limits)
    var input: [UInt8] = []
    input.reserveCapacity(bytes.count)
    var read = 0
    var events: [EventSummary] = []
    var written: [UInt8] = []
    let body = [UInt8](repeating: 0x62, count: 300)
    var fed = 0
    while fed < bytes.count || fed == 0 {
        let n = min(chunk, bytes.count - fed)
        input += bytes[fed ..< fed + n]
        fed += n
        while true {
            let (event, used) = input[read...].withUnsafeBytes { conn.nextEvent(in: $0, now: Instant(nanoseconds: 0)) }
            check(used >= 0 && used <= input.count - read, "consumed more than it was given")
            read += used
            guard let event else { break }
            events.append(summarize(event))
            check(conn.openStreamCount <= limits.maxConcurrentStreams, "more streams than SETTINGS_MAX_CONCURRENT_STREAMS")
            switch event {
            case .connectionError:
                check(conn.isFinished && conn.isClosing, "connection error without finishing")
                check(read == input.count, "input left after a connection error")
            case .request(let id, let head, _):
                checkHead(head)
                if active {
                    conn.beginHeaders(streamID: id, status: 200)
                    [UInt8]("content-type".utf8).withUnsafeBytes { n in
                        [UInt8]("text/plain".utf8).withUnsafeBytes { v in conn.addField(name: n, value: v) }
                    }
                    conn.endHeaders(endStream: false)
                    _ = body.withUnsafeBytes { conn.sendData(streamID: id, $0, endStream: true) }
                }
            case .trailers(_, let head):
                checkHead(head)
            case .data(let id, let b, let fc, _):
                if active {
                    conn.consumed(streamID: id, fc - b.count)
                    conn.consumed(streamID: id, b.count)
                }
            case .windowOpened(let id):
                if active && id != 0 { _ = body.withUnsafeBytes { conn.sendData(streamID: id, $0, endStream: true) } }
            default:
                break
            }
        }
        if active {
            written += Array(conn.output.readable)
            conn.output.readerIndex = conn.output.writerIndex
        }
        if fed == bytes.count { break }
    }
    if !active { written = Array(conn.output.readable) }
    checkOutputFrames(written)
    if !active {
        // Peer-provoked output: our SETTINGS, acks/RSTs/431s within the
        // control budget, credit WINDOW_UPDATEs, one GOAWAY.
        check(written.count <= 4096 + bytes.count / 8, "output grew beyond the control-frame budget: \(written.count)")
    }
    if conn.isFinished && conn.connectionFailure != nil {
        let after = [UInt8](repeating: 0, count: 64)
        let (event, used) = after.withUnsafeBytes { conn.nextEvent(in: $0, now: Instant(nanoseconds: 0)) }
        check(event == nil && used == 64, "a failed connection still reads")
    }
    return (events, written)
}

/// Every frame the connection wrote must parse.
func checkOutputFrames(_ out: [UInt8]) {
    var parser = FrameParser(maxFrameSize: 16_777_215, expectPreface: false)
    var at = 0
    while at < out.count {
        let event: FrameParser.Event
        do {
            event = try out[at...].withUnsafeBytes { try parser.nextEvent(in: $0) }
        } catch {
            fatalError("invariant broken: connection wrote a bad frame: \(error)")
        }
        switch event {
        case .frame(_, let n): at += n
        case .needMoreData: fatalError("invariant broken: connection wrote a partial frame")
        case .prefaceReceived, .streamError: fatalError("invariant broken: connection wrote a bad frame")
        }
    }
}

func fuzzConnection(_ mode: UInt8, _ payload: UnsafeRawBufferPointer) {
    var bytes = ConnectionPreface.bytes
    if mode & 4 != 0 { bytes += [0, 0, 0, 4, 0, 0, 0, 0, 0] }
    bytes += payload
    let active = mode & 8 != 0
    let whole = runConnection(bytes, chunk: bytes.count, active: active)
    let single = runConnection(bytes, chunk: 1, active: active)
    let odd = runConnection(bytes, chunk: 7, active: active)
    for (run, how) in [(single, "byte-at-a-time feeding"), (odd, "7-byte chunks")] {
        if floodedFirst(whole.0, run.0) || floodedFirst(run.0, whole.0) { continue }
        check(whole.0 == run.0, "\(how) changed the events")
        check(whole.1 == run.1, "\(how) changed the output")
    }
}

/// Whether `flooded` ended with the control-frame flood error after the
/// events `other` began with. The flood counts our answers still unwritten,
/// and an active run takes the output after each chunk it feeds: fed in
/// pieces, the same answers are written between them and never pile up,
/// so that run reads on (to another verdict, or none). Passive runs never
/// take output and agree exactly.
func floodedFirst(_ flooded: [EventSummary], _ other: [EventSummary]) -> Bool {
    guard let last = flooded.last, last.controlFlood, other.count >= flooded.count - 1 else { return false }
    return Array(other.prefix(flooded.count - 1)) == flooded.dropLast()
}

func fuzzOne(_ input: UnsafeRawBufferPointer) {
    guard let mode = input.first else { return }
    let bytes = UnsafeRawBufferPointer(rebasing: input[1...])
    if mode & 3 == 3 {
        fuzzConnection(mode, bytes)
    } else if mode & 1 == 0 {
        fuzzHPACK(bytes)
    } else {
        let whole = frameEvents(bytes, chunk: bytes.count)
        let single = frameEvents(bytes, chunk: 1)
        check(whole.0 == single.0 && whole.1 == single.1, "byte-at-a-time feeding changed the events")
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's `main` for this executable (see FuzzSupport).
@_cdecl("fuzz_hpack_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runLibFuzzer(argc, argv, fuzz)
}
#else
// A declaration rather than statements, so the file also parses in the
// -parse-as-library mode of the fuzzing build (where this branch is
// inactive but must still be valid library code). In a plain build it is
// top-level code and runs at start-up.
let replayStatus: Never = replay(CommandLine.arguments.dropFirst()) { _, bytes in fuzzOne(bytes) }
#endif
