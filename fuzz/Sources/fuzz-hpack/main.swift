// libFuzzer target for the HTTP/2 input path: HPACK decoding and the frame
// parser (see fuzz/README.md for building and running).
//
// The first input byte picks the mode; the rest is the payload:
//  * even: HPACK. The payload is split into header blocks at 0xff 0xfe
//    markers and decoded in order by one decoder (table state carries over),
//    with a small list limit so the 431 and bomb paths are reachable. Checks:
//    no crash; every field span lies in the arena; a failed block leaves the
//    list unchanged; the table never exceeds its maximum size; fields that
//    decoded are re-encoded and decode back to the same bytes.
//  * odd: frames. The payload is fed to a FrameParser (preface not expected)
//    whole and a byte at a time; both must yield the same events and verdict,
//    and every span must lie inside the consumed frame.
//
// Built with -D FUZZING, -parse-as-library and -sanitize=fuzzer it defines
// LLVMFuzzerTestOneInput; built plainly it replays files given as arguments.

import Core
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

func fuzzOne(_ input: UnsafeRawBufferPointer) {
    guard let mode = input.first else { return }
    let bytes = UnsafeRawBufferPointer(rebasing: input[1...])
    if mode & 1 == 0 {
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

// SwiftPM links every executable with `main` aliased to `<module>_main`
// (--defsym main=fuzz_hpack_main), so libFuzzer's own main is never linked
// in; this stands in for it and starts libFuzzer through its public driver
// entry point (declared here because the target has no C module; the
// signature uses only pointer and int arguments, passed alike by both
// calling conventions).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@_cdecl("fuzz_hpack_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, fuzz)
}
#else
// A declaration rather than statements, so the file also parses in the
// -parse-as-library mode of the fuzzing build (where this branch is
// inactive but must still be valid library code). In a plain build it is
// top-level code and runs at start-up.
let replayStatus: Never = replay(CommandLine.arguments.dropFirst())
#endif

/// Replay: runs the checks on each file named on the command line.
func replay(_ paths: ArraySlice<String>) -> Never {
    var unreadable = 0
    for path in paths {
        guard let file = fopen(path, "rb") else {
            print("cannot open \(path)")
            unreadable += 1
            continue
        }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if n <= 0 { break }
            contents += chunk[..<n]
        }
        fclose(file)
        contents.withUnsafeBytes { fuzzOne($0) }
    }
    print("checked \(paths.count - unreadable) inputs")
    exit(unreadable == 0 ? 0 : 1)
}
