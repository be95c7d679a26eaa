// libFuzzer target for the Capsule Protocol reader (RFC 9297 §3.2) and the
// WebTransport capsules (see fuzz/README.md).
//
// Byte 0 picks the reader's value bound (small when odd, so short inputs
// reach `valueTooLarge`); the rest is a CONNECT stream's data. Beyond "no
// crash", it traps when an invariant breaks:
//
//  * the capsules delivered, and the outcome (error or not, at the end of
//    the stream), are the same whole, split at a point derived from the
//    input, and a byte at a time;
//  * each delivered value is within the bound, and delivered capsules are
//    only of the types asked for;
//  * every WebTransport capsule that decodes re-encodes to a capsule that
//    decodes to the same value (a close message over 1024 bytes cannot
//    decode, so nothing is cut);
//  * every HTTP/3 Datagram prefix that parses re-encodes shorter or equal
//    and parses back to the same stream.
//
// Built with -D FUZZING, -parse-as-library and -sanitize=fuzzer this file
// defines LLVMFuzzerTestOneInput and the entry point libFuzzer runs from.
// Built plainly it is a replay tool: `fuzz-capsules FILE...`.

import Core
import FuzzSupport
import HTTP3

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

struct Outcome: Equatable {
    var capsules: [[UInt8]] = []
    var error: CapsuleError?
}

/// Reads `bytes` cut at `cuts` with a fresh reader.
func read(_ bytes: UnsafeRawBufferPointer, cuts: [Int], bound: Int) -> Outcome {
    var reader = CapsuleReader(maxValueLength: bound, delivers: CapsuleType.isWebTransport)
    var out = Outcome()
    var start = 0
    do throws(CapsuleError) {
        for end in cuts + [bytes.count] where end >= start {
            try reader.read(UnsafeRawBufferPointer(rebasing: bytes[start..<end])) { type, value in
                check(CapsuleType.isWebTransport(type), "delivered type \(type) not asked for")
                check(value.count <= bound, "value of \(value.count) over the bound \(bound)")
                var whole: [UInt8] = []
                CapsuleWriter.append(type: type, value: value, to: &whole)
                out.capsules.append(whole)
            }
            start = end
        }
        try reader.finish()
    } catch {
        out.error = error
    }
    return out
}

func checkCapsule(_ wire: [UInt8]) {
    wire.withUnsafeBytes { b in
        let (type, a) = QUICVarInt.decode(b, at: 0)!
        let (length, c) = QUICVarInt.decode(b, at: a)!
        let value = UnsafeRawBufferPointer(rebasing: b[(a + c)...])
        check(UInt64(value.count) == length, "re-encoded length")
        guard let decoded = try? WebTransportCapsule.decode(type: type, value: value) else { return }
        var again: [UInt8] = []
        decoded.append(to: &again)
        again.withUnsafeBytes { r in
            let (t2, a2) = QUICVarInt.decode(r, at: 0)!
            let (_, c2) = QUICVarInt.decode(r, at: a2)!
            let back = try? WebTransportCapsule.decode(type: t2, value: UnsafeRawBufferPointer(rebasing: r[(a2 + c2)...]))
            check(back == decoded, "\(String(describing: decoded)) re-encoded decodes to \(String(describing: back))")
        }
    }
}

func fuzzOne(_ input: UnsafeRawBufferPointer) {
    guard let first = input.first else { return }
    let bound = first & 1 == 1 ? Int(first >> 1) : 16 << 10
    let bytes = UnsafeRawBufferPointer(rebasing: input[1...])
    let whole = read(bytes, cuts: [], bound: bound)
    let split = bytes.isEmpty ? 0 : Int(first) % (bytes.count + 1)
    check(read(bytes, cuts: [split], bound: bound) == whole, "split at \(split) differs from whole")
    if bytes.count <= 512 {
        check(read(bytes, cuts: Array(0..<bytes.count), bound: bound) == whole, "byte at a time differs from whole")
    }
    for c in whole.capsules { checkCapsule(c) }
    if let (stream, start) = try? H3Datagram.parse(bytes) {
        var prefix: [UInt8] = []
        H3Datagram.appendPrefix(streamID: stream, to: &prefix)
        check(prefix.count <= start, "prefix re-encodes longer")
        check(prefix.withUnsafeBytes { (try? H3Datagram.parse($0))?.streamID } == stream, "prefix does not parse back")
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's `main` for this executable (see FuzzSupport).
@_cdecl("fuzz_capsules_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runLibFuzzer(argc, argv, fuzzTestOneInput)
}
#else
let replayStatus: Never = replay(CommandLine.arguments.dropFirst()) { _, bytes in fuzzOne(bytes) }
#endif
