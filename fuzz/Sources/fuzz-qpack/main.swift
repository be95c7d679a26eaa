// libFuzzer target for the HTTP/3 input path without QUIC: QPACK (field
// sections and the encoder stream, RFC 9204) and the HTTP/3 frame reader
// (RFC 9114 §7) (see fuzz/README.md for building and running).
//
// The first input byte picks the mode; the rest is the payload:
//  * even: QPACK. The payload is cut into chunks at 0xff 0xfe markers; a
//    chunk whose first byte is even is encoder-stream bytes (the rest of the
//    chunk), an odd one is a field section on the next request stream. One
//    decoder with a bounded table (capacity 256, 2 blocked streams, 512-byte
//    sections) takes them in order, decoding released sections after each
//    encoder chunk. The same run is repeated with every encoder chunk fed
//    split at a point derived from the input (bit 1 of the mode byte: a byte
//    at a time). Checks: no crash; both runs give the same verdicts, fields,
//    table and decoder-stream bytes (split invariance); spans lie in the
//    arena; a failed section leaves the list as it was; the table stays
//    within its capacity and the capacity within the maximum; blocked
//    sections never exceed the limit; every decoded section re-encodes with
//    QPACKEncoder (static table and literals) and decodes back to the same
//    fields.
//  * odd: frames. The payload is read by an H3FrameReader (bit 1: control
//    stream, else request stream) whole and a byte at a time; both must give
//    the same events and verdict, and no read may consume more than it was
//    given.
//
// Built with -D FUZZING, -parse-as-library and -sanitize=fuzzer it defines
// LLVMFuzzerTestOneInput; built plainly it replays files given as arguments.

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

/// What one QPACK run observed, for comparing runs.
struct Trace: Equatable {
    var outcomes: [String] = []
    var decoderStream: [UInt8] = []
    var tableSize = 0
    var insertCount = 0
}

func fields(_ list: HeaderList) -> [[UInt8]] {
    list.fields.flatMap { [Array(list.bytes[$0.name.start ..< $0.name.end]), Array(list.bytes[$0.value.start ..< $0.value.end])] }
}

func decoded(_ d: inout QPACKDecoder, section: UnsafeRawBufferPointer?, stream: UInt64, trace: inout Trace) -> Bool {
    var list = HeaderList()
    list.removeAll()
    do {
        if let section {
            guard try d.decodeFieldSection(section, stream: stream, into: &list) else {
                trace.outcomes.append("blocked \(stream)")
                check(d.blockedStreamCount <= d.maxBlockedStreams, "blocked streams over the limit")
                return true
            }
        } else {
            try d.decodeUnblocked(stream: stream, into: &list)
        }
    } catch {
        check(list.count == 0 && list.bytes.isEmpty, "failed section left fields behind")
        trace.outcomes.append("\(stream) \(error)")
        return !error.isConnectionError
    }
    for f in list.fields {
        check(f.name.end <= list.bytes.count && f.value.end <= list.bytes.count, "span outside arena")
    }
    trace.outcomes.append("\(stream) \(fields(list))")
    roundTrip(list)
    return true
}

/// Static-table-and-literal encoding of a decoded section decodes back.
func roundTrip(_ list: HeaderList) {
    var out: [UInt8] = []
    let encoder = QPACKEncoder()
    encoder.beginSection(into: &out)
    list.bytes.withUnsafeBytes { all in
        for f in list.fields {
            encoder.encode(name: UnsafeRawBufferPointer(rebasing: all[f.name.start ..< f.name.end]),
                           value: UnsafeRawBufferPointer(rebasing: all[f.value.start ..< f.value.end]),
                           neverIndexed: f.isNeverIndexed, into: &out)
        }
    }
    var d = QPACKDecoder(maxTableCapacity: 0, maxBlockedStreams: 0, maxFieldSectionSize: Int.max / 2)
    var again = HeaderList()
    do {
        let done = try out.withUnsafeBytes { (s) throws(H3Error) in try d.decodeFieldSection(s, stream: 0, into: &again) }
        check(done, "a static-only section blocked")
    } catch {
        fatalError("re-encoded section does not decode: \(error)")
    }
    check(fields(again) == fields(list), "round trip changed the fields")
    check(zip(again.fields, list.fields).allSatisfy { $0.isNeverIndexed == $1.isNeverIndexed }, "round trip lost the N bit")
}

func runQPACK(_ chunks: [UnsafeRawBufferPointer], split: (Int) -> [Int]) -> Trace {
    var d = QPACKDecoder(maxTableCapacity: 256, maxBlockedStreams: 2, maxFieldSectionSize: 512)
    var trace = Trace()
    var stream: UInt64 = 0
    for chunk in chunks where !chunk.isEmpty {
        let body = UnsafeRawBufferPointer(rebasing: chunk[1...])
        if chunk[0] & 1 == 0 {
            var last = 0
            do {
                for cut in split(body.count) + [body.count] {
                    try d.feedEncoderStream(UnsafeRawBufferPointer(rebasing: body[last ..< cut]))
                    last = cut
                }
            } catch {
                trace.outcomes.append("encoder \(error)")
                break
            }
            check(d.table.size <= d.table.capacity && d.table.capacity <= d.maxTableCapacity, "table over capacity")
            var ok = true
            for s in d.takeUnblockedStreams() where ok { ok = decoded(&d, section: nil, stream: s, trace: &trace) }
            if !ok { break }
        } else {
            if !decoded(&d, section: body, stream: stream, trace: &trace) { break }
            stream += 4
            if stream % 16 == 0 { d.cancelStream(stream - 8) }
        }
    }
    d.takeDecoderStreamBytes(into: &trace.decoderStream)
    trace.tableSize = d.table.size
    trace.insertCount = d.table.insertCount
    return trace
}

func fuzzQPACK(_ bytes: UnsafeRawBufferPointer, byteAtATime: Bool, seed: Int) {
    var chunks: [UnsafeRawBufferPointer] = []
    var start = 0
    var i = 0
    while i <= bytes.count {
        if i == bytes.count || (i + 1 < bytes.count && bytes[i] == 0xff && bytes[i + 1] == 0xfe) {
            chunks.append(UnsafeRawBufferPointer(rebasing: bytes[start ..< i]))
            start = i + 2
            i += 2
            continue
        }
        i += 1
    }
    let whole = runQPACK(chunks) { _ in [] }
    let split = runQPACK(chunks) { n in
        byteAtATime ? Array(0 ..< n) : (n == 0 ? [] : [(seed * 7 + n / 3) % n])
    }
    check(whole == split, "split changed the outcome:\n\(whole)\n\(split)")
}

enum FrameSeen: Equatable { case event(String), data([UInt8]), error(String) }

func readFrames(_ bytes: UnsafeRawBufferPointer, control: Bool, step: Int) -> [FrameSeen] {
    var r = H3FrameReader(kind: control ? .control : .request, limits: .init(maxHeadersLength: 256, maxSettingsLength: 64))
    var seen: [FrameSeen] = []
    var piece = 0
    while piece < bytes.count {
        let end = min(bytes.count, piece + step)
        let p = UnsafeRawBufferPointer(rebasing: bytes[piece ..< end])
        var i = 0
        while i < p.count {
            do {
                let (event, n) = try r.read(UnsafeRawBufferPointer(rebasing: p[i...]))
                check(n <= p.count - i && (n > 0 || event != nil), "consumed more than given, or made no progress")
                switch event {
                case .data(let range)?:
                    check(range.upperBound <= n, "DATA outside the consumed bytes")
                    let b = Array(p[i + range.lowerBound ..< i + range.upperBound])
                    if case .data(let a)? = seen.last { seen[seen.count - 1] = .data(a + b) } else { seen.append(.data(b)) }
                case .headers?: seen.append(.event("headers \(r.payload)"))
                case let e?: seen.append(.event("\(e)"))
                case nil: break
                }
                i += n
            } catch {
                seen.append(.error("\(error)"))
                return seen
            }
        }
        piece = end
    }
    do { try r.finish(); seen.append(.event("end")) } catch { seen.append(.error("\(error)")) }
    return seen
}

func fuzzOne(_ input: UnsafeRawBufferPointer) {
    guard let mode = input.first else { return }
    let payload = UnsafeRawBufferPointer(rebasing: input[1...])
    if mode & 1 == 0 {
        fuzzQPACK(payload, byteAtATime: mode & 2 != 0, seed: Int(mode >> 2))
    } else {
        let control = mode & 2 != 0
        let whole = readFrames(payload, control: control, step: max(payload.count, 1))
        let bytewise = readFrames(payload, control: control, step: 1)
        check(whole == bytewise, "byte-at-a-time changed the frames:\n\(whole)\n\(bytewise)")
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's `main` for this executable (see FuzzSupport).
@_cdecl("fuzz_qpack_main")
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
