// libFuzzer target for the HTTP/1 request parsers (see fuzz/README.md).
//
// Each input is fed to H1HeadParser and — when it yields a chunked head, the
// bytes after the head; otherwise the input itself — to H1ChunkedDecoder.
// Beyond "no crash", it traps when an invariant breaks:
//
//  * every span handed out lies inside the input (and inside the head);
//  * a complete head is well-formed (fields are tokens / valid values,
//    HTTP/1.0 is never chunked, ...);
//  * parsing split at a point derived from the input, a byte at a time, or
//    with bytes appended gives exactly the whole-buffer result;
//  * chunked decoding whole, split, and a byte at a time yields the same
//    body bytes and the same verdict.
//
// Built with -D FUZZING, -parse-as-library and -sanitize=fuzzer this file
// defines LLVMFuzzerTestOneInput and the entry point libFuzzer runs from.
// Built plainly it is a replay tool: `fuzz-http1 FILE...` runs the same
// checks on each file and exits 0 if none trapped.

import Core
import FuzzSupport
import HTTP1

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

// MARK: Head

struct HeadSnapshot: Equatable {
    var result: H1HeadResult
    var fields: [ByteSpan]
    var tokens: [UInt8]
}

func parseHead(_ parser: inout H1HeadParser, _ bytes: UnsafeRawBufferPointer, _ table: H1HeaderTable) -> HeadSnapshot {
    let result = parser.parse(bytes, headers: table)
    var fields: [ByteSpan] = []
    var tokens: [UInt8] = []
    if case .complete = result {
        for i in 0..<table.count {
            fields.append(table.name(i))
            fields.append(table.value(i))
            tokens.append(table.token(i).rawValue)
        }
    } else if case .failed = result {
        check(table.count == 0, "table left filled on failure")
    }
    return HeadSnapshot(result: result, fields: fields, tokens: tokens)
}

func within(_ span: ByteSpan, _ limit: Int) -> Bool {
    span.offset >= 0 && span.length >= 0 && span.end <= limit
}

func checkHead(_ head: H1RequestHead, _ snapshot: HeadSnapshot, _ bytes: UnsafeRawBufferPointer) {
    let n = head.headLength
    check(n >= 4 && n <= bytes.count, "headLength \(n) outside input of \(bytes.count)")
    check(bytes[n - 1] == 0x0A && bytes[n - 2] == 0x0D && bytes[n - 3] == 0x0A && bytes[n - 4] == 0x0D,
          "head does not end in CRLF CRLF")
    for span in [head.methodSpan, head.target, head.path, head.query] + snapshot.fields {
        check(within(span, n), "span \(span) outside head of \(n)")
    }
    if let host = head.host { check(within(host, n), "host span outside head") }
    check(!head.methodSpan.isEmpty && !head.target.isEmpty, "empty method or target")
    check(H1Field.isToken(UnsafeRawBufferPointer(rebasing: bytes[head.methodSpan.start..<head.methodSpan.end])),
          "method not a token")
    check(head.query.isEmpty || (head.query.start >= head.target.start && head.query.end <= head.target.end),
          "query outside target")
    if head.version == .http10 {
        check(head.framing != .chunked && !head.expectContinue, "HTTP/1.0 chunked or expecting")
    }
    if case .contentLength(let length) = head.framing { check(length >= 0, "negative Content-Length") }
    for i in stride(from: 0, to: snapshot.fields.count, by: 2) {
        let name = snapshot.fields[i], value = snapshot.fields[i + 1]
        let nameBytes = UnsafeRawBufferPointer(rebasing: bytes[name.start..<name.end])
        let valueBytes = UnsafeRawBufferPointer(rebasing: bytes[value.start..<value.end])
        check(H1Field.isToken(nameBytes), "field name not a token")
        check(!nameBytes.contains(0x5F), "underscore name stored")
        check(H1Field.isValidValue(valueBytes), "invalid field value stored")
        if let first = valueBytes.first, let last = valueBytes.last {
            check(first != 0x20 && first != 0x09 && last != 0x20 && last != 0x09, "value not trimmed")
        }
    }
}

/// Returns the head when one parsed, after checking every head invariant.
func fuzzHead(_ bytes: UnsafeRawBufferPointer) -> H1RequestHead? {
    var limits = H1Limits()
    // Small limits, chosen by the input, so short inputs reach them; the
    // defaults get exercised too.
    if let first = bytes.first, first & 1 == 1 {
        limits.maxHeadBytes = 256
        limits.maxHeaderCount = 6
        limits.maxTargetBytes = 40
    }
    let table = H1HeaderTable(capacity: limits.maxHeaderCount)
    var whole = H1HeadParser(limits: limits)
    let expected = parseHead(&whole, bytes, table)
    check(parseHead(&whole, bytes, table) == expected, "repeated call differs")

    // Split at a point derived from the input.
    let cut = bytes.isEmpty ? 0 : (Int(bytes[0]) &* 131 &+ Int(bytes[bytes.count / 2])) % (bytes.count + 1)
    var split = H1HeadParser(limits: limits)
    let prefix = parseHead(&split, UnsafeRawBufferPointer(rebasing: bytes[..<cut]), table)
    if case .incomplete = prefix.result {
        check(parseHead(&split, bytes, table) == expected, "split at \(cut) differs")
    } else {
        check(prefix == expected, "prefix of \(cut) decided differently")
    }

    // A byte at a time through one parser.
    var stepper = H1HeadParser(limits: limits)
    var last = HeadSnapshot(result: .incomplete, fields: [], tokens: [])
    for n in 0...bytes.count {
        last = parseHead(&stepper, UnsafeRawBufferPointer(rebasing: bytes[..<n]), table)
        if case .incomplete = last.result { continue }
        break
    }
    check(last == expected, "byte at a time differs")

    switch expected.result {
    case .incomplete:
        return nil
    case .failed(let error):
        check([400, 413, 414, 417, 431, 501, 505].contains(error.status), "unexpected status \(error.status)")
        checkExtraBytes(bytes, limits, table, expected)
        return nil
    case .complete(let head):
        checkExtraBytes(bytes, limits, table, expected)
        checkHead(head, expected, bytes)
        return head
    }
}

/// Bytes after a decided head (a pipelined request) never change the verdict.
func checkExtraBytes(_ bytes: UnsafeRawBufferPointer, _ limits: H1Limits, _ table: H1HeaderTable, _ expected: HeadSnapshot) {
    var longer = Array(bytes)
    longer += [0x47, 0x45, 0x54, 0x20, 0x0A, 0x0D, 0x00, 0xFF]
    var parser = H1HeadParser(limits: limits)
    let got = longer.withUnsafeBytes { parseHead(&parser, $0, table) }
    check(got == expected, "extra bytes changed the verdict")
}

// MARK: Chunked body

struct BodyOutcome: Equatable {
    var body: [UInt8] = []
    /// .end(total consumed) or .failed; nil while incomplete.
    var verdict: H1ChunkedStep? = nil
}

/// Decodes `input` arriving in pieces — the first ending at `firstCut`, then
/// `piece` bytes at a time (0: the rest at once) — keeping the unconsumed
/// bytes as a window into `input`, as a server's read buffer would.
func decode(_ input: UnsafeRawBufferPointer, firstCut: Int, piece: Int, limits: H1Limits) -> BodyOutcome {
    var decoder = H1ChunkedDecoder(limits: limits)
    var outcome = BodyOutcome()
    var start = 0
    var fed = Swift.min(firstCut, input.count)
    while true {
        while true {
            let window = UnsafeRawBufferPointer(rebasing: input[start..<fed])
            let step = decoder.decode(window)
            switch step {
            case .data(let span, let consumed):
                check(span.length > 0 && span.offset >= 0 && span.end <= consumed && consumed <= window.count,
                      "data span \(span) / consumed \(consumed) outside window of \(window.count)")
                outcome.body += window[span.start..<span.end]
                start += consumed
                continue
            case .needMoreData(let consumed):
                check(consumed >= 0 && consumed <= window.count, "consumed \(consumed) outside window")
                start += consumed
                if consumed > 0 { continue }
            case .end(let consumed):
                check(consumed >= 0 && consumed <= window.count && decoder.isFinished, "bad end")
                outcome.verdict = .end(consumed: start + consumed)
                return outcome
            case .failed(let error):
                check([400, 431].contains(error.status), "unexpected chunked status \(error.status)")
                check(!decoder.isFinished, "failed but finished")
                outcome.verdict = step
                return outcome
            }
            break
        }
        if fed == input.count { return outcome }
        fed = piece == 0 ? input.count : Swift.min(input.count, fed + piece)
    }
}

func fuzzChunked(_ input: UnsafeRawBufferPointer, limits: H1Limits) {
    let whole = decode(input, firstCut: input.count, piece: 0, limits: limits)
    let cut = input.isEmpty ? 0 : Int(input[input.count - 1]) % (input.count + 1)
    check(decode(input, firstCut: cut, piece: 0, limits: limits) == whole, "chunked split at \(cut) differs")
    check(decode(input, firstCut: 0, piece: 1, limits: limits) == whole, "chunked byte at a time differs")
}

func fuzzOne(_ bytes: UnsafeRawBufferPointer) {
    if let head = fuzzHead(bytes), head.framing == .chunked {
        fuzzChunked(UnsafeRawBufferPointer(rebasing: bytes[head.headLength...]), limits: H1Limits())
    } else {
        // Not a chunked request: decode the bytes as a body directly, with
        // small limits so the extension and trailer bounds are reachable.
        var limits = H1Limits()
        limits.maxChunkExtensionBytes = 16
        limits.maxTrailerBytes = 64
        fuzzChunked(bytes, limits: limits)
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's `main` for this executable (see FuzzSupport).
@_cdecl("fuzz_http1_main")
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
