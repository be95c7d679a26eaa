import Core
import XCTest

@testable import HTTP1

// Helpers that feed every input three ways (STYLE §7): whole; split at every
// possible boundary (and one byte at a time through a single parser); and
// followed by extra bytes (a pipelined request, or garbage) — and insist on
// the same outcome each time.

extension Array where Element == UInt8 {
    init(_ text: String) { self = Array(text.utf8) }
}

/// What a head parse produced, with the header table copied out as text so
/// outcomes can be compared across buffers.
struct HeadOutcome: Equatable, CustomStringConvertible {
    var result: H1HeadResult
    var fields: [Field]

    struct Field: Equatable {
        var name: String
        var value: String
        var token: HeaderToken
    }

    var description: String { "\(result) \(fields.map { "\($0.name): \($0.value)" })" }

    var head: H1RequestHead? {
        if case .complete(let head) = result { return head }
        return nil
    }
    var error: H1Error? {
        if case .failed(let error) = result { return error }
        return nil
    }
}

func text(_ bytes: [UInt8], _ span: ByteSpan) -> String {
    String(decoding: bytes[span.start..<span.end], as: UTF8.self)
}

func parseHead(_ parser: inout H1HeadParser, _ bytes: [UInt8], _ table: H1HeaderTable) -> HeadOutcome {
    let result = bytes.withUnsafeBytes { parser.parse($0, headers: table) }
    var fields: [HeadOutcome.Field] = []
    if case .complete = result {
        for i in 0..<table.count {
            fields.append(.init(name: text(bytes, table.name(i)), value: text(bytes, table.value(i)), token: table.token(i)))
        }
    }
    return HeadOutcome(result: result, fields: fields)
}

/// Parses `input` whole, split at every boundary, a byte at a time, and
/// followed by extra bytes; fails the test unless every way agrees. Returns
/// the whole-buffer outcome.
@discardableResult
func feedThreeWays(
    _ input: [UInt8], limits: H1Limits = H1Limits(), maxSplits: Int = 600,
    file: StaticString = #filePath, line: UInt = #line
) -> HeadOutcome {
    let table = H1HeaderTable(capacity: limits.maxHeaderCount)
    var whole = H1HeadParser(limits: limits)
    let expected = parseHead(&whole, input, table)

    // Repeating the call after a verdict gives the same verdict.
    XCTAssertEqual(parseHead(&whole, input, table), expected, "repeated call", file: file, line: line)

    // Split in two at every boundary (strided for long inputs).
    let stride = Swift.max(1, input.count / maxSplits)
    for cut in Swift.stride(from: 0, through: input.count, by: stride) {
        var parser = H1HeadParser(limits: limits)
        let first = parseHead(&parser, Array(input[..<cut]), table)
        if case .incomplete = first.result {
        } else if first.error != nil {
            XCTAssertEqual(first, expected, "prefix of \(cut) bytes failed differently", file: file, line: line)
            continue
        } else {
            // A prefix can only complete if it holds the whole head, and then
            // it must agree with the whole buffer.
            XCTAssertEqual(first, expected, "prefix of \(cut) bytes", file: file, line: line)
        }
        let second = parseHead(&parser, input, table)
        XCTAssertEqual(second, expected, "split at \(cut)", file: file, line: line)
    }

    // One byte at a time through one parser.
    var stepper = H1HeadParser(limits: limits)
    var last = HeadOutcome(result: .incomplete, fields: [])
    for n in Swift.stride(from: stride == 1 ? 0 : stride, through: input.count, by: stride) {
        last = parseHead(&stepper, Array(input[..<n]), table)
        if case .incomplete = last.result { continue }
        break
    }
    if case .incomplete = last.result {
        last = parseHead(&stepper, input, table)
    }
    XCTAssertEqual(last, expected, "byte at a time", file: file, line: line)

    // Followed by more bytes: a pipelined request, or garbage.
    if case .incomplete = expected.result { return expected }
    for extra in [Array("GET /next HTTP/1.1\r\nHost: next\r\n\r\n"), [0x0A, 0x0D, 0x00, 0xFF, 0x20]] {
        var parser = H1HeadParser(limits: limits)
        XCTAssertEqual(parseHead(&parser, input + extra, table), expected, "with extra bytes", file: file, line: line)
    }

    // After reset the same parser reaches the same verdict again.
    whole.reset()
    XCTAssertEqual(parseHead(&whole, input, table), expected, "after reset", file: file, line: line)
    return expected
}

/// Asserts that `request` is refused with exactly `status` and `error`, all three ways.
func assertRejected(
    _ request: String, _ status: UInt16, _ error: H1Error, limits: H1Limits = H1Limits(),
    file: StaticString = #filePath, line: UInt = #line
) {
    assertRejected(Array(request), status, error, limits: limits, file: file, line: line)
}

func assertRejected(
    _ request: [UInt8], _ status: UInt16, _ error: H1Error, limits: H1Limits = H1Limits(),
    file: StaticString = #filePath, line: UInt = #line
) {
    XCTAssertEqual(error.status, status, "catalogue status", file: file, line: line)
    let outcome = feedThreeWays(request, limits: limits, file: file, line: line)
    guard let got = outcome.error else {
        return XCTFail("expected \(status) \(error.reason), got \(outcome)", file: file, line: line)
    }
    XCTAssertEqual(got.status, status, "\(got.reason)", file: file, line: line)
    XCTAssertEqual(got, error, file: file, line: line)
}

/// Asserts that `request` is accepted all three ways and returns its head
/// plus the bytes (for reading spans) and fields.
@discardableResult
func assertAccepted(
    _ request: String, limits: H1Limits = H1Limits(),
    file: StaticString = #filePath, line: UInt = #line
) -> (head: H1RequestHead, bytes: [UInt8], fields: [HeadOutcome.Field])? {
    let bytes = Array(request)
    let outcome = feedThreeWays(bytes, limits: limits, file: file, line: line)
    guard let head = outcome.head else {
        XCTFail("expected a complete head, got \(outcome)", file: file, line: line)
        return nil
    }
    XCTAssertEqual(head.headLength, bytes.count, "headLength", file: file, line: line)
    return (head, bytes, outcome.fields)
}

// MARK: Chunked decoding

struct ChunkedOutcome: Equatable {
    enum Verdict: Equatable {
        case end(consumed: Int)
        case failed(H1Error)
        case incomplete
    }
    var body: [UInt8]
    var verdict: Verdict
}

/// Runs a decoder over `input`, delivered in pieces ending at `cuts`, the way
/// a server would: a buffer of unconsumed bytes, `consumed` dropped after
/// each step.
func decodeChunked(_ input: [UInt8], cuts: [Int], limits: H1Limits = H1Limits()) -> ChunkedOutcome {
    var decoder = H1ChunkedDecoder(limits: limits)
    var pending: [UInt8] = []
    var body: [UInt8] = []
    var total = 0
    var fed = 0
    for cut in cuts + [input.count] where cut >= fed {
        pending += input[fed..<cut]
        fed = cut
        while true {
            let step = pending.withUnsafeBytes { decoder.decode($0) }
            switch step {
            case .data(let span, let consumed):
                precondition(span.start >= 0 && span.end <= consumed && consumed <= pending.count && span.count > 0)
                body += pending[span.start..<span.end]
                pending.removeFirst(consumed)
                total += consumed
                continue
            case .needMoreData(let consumed):
                pending.removeFirst(consumed)
                total += consumed
                if consumed > 0 { continue }
            case .end(let consumed):
                precondition(decoder.isFinished)
                return ChunkedOutcome(body: body, verdict: .end(consumed: total + consumed))
            case .failed(let error):
                return ChunkedOutcome(body: body, verdict: .failed(error))
            }
            break
        }
    }
    return ChunkedOutcome(body: body, verdict: .incomplete)
}

/// Decodes `input` whole, split in two at every boundary, one byte at a time
/// and followed by extra bytes; fails unless all agree. Returns the outcome.
@discardableResult
func decodeThreeWays(
    _ input: [UInt8], limits: H1Limits = H1Limits(), file: StaticString = #filePath, line: UInt = #line
) -> ChunkedOutcome {
    let expected = decodeChunked(input, cuts: [], limits: limits)
    for cut in 0...input.count {
        XCTAssertEqual(decodeChunked(input, cuts: [cut], limits: limits), expected, "split at \(cut)", file: file, line: line)
    }
    XCTAssertEqual(decodeChunked(input, cuts: Array(0...input.count), limits: limits), expected, "byte at a time", file: file, line: line)
    if expected.verdict != .incomplete {
        let extra = Array("POST / HTTP/1.1\r\n") + [0x0A, 0x00]
        XCTAssertEqual(decodeChunked(input + extra, cuts: [], limits: limits), expected, "with extra bytes", file: file, line: line)
    }
    return expected
}

func assertChunkedBody(
    _ input: String, decodesTo body: String, limits: H1Limits = H1Limits(),
    file: StaticString = #filePath, line: UInt = #line
) {
    let bytes = Array(input)
    let outcome = decodeThreeWays(bytes, limits: limits, file: file, line: line)
    XCTAssertEqual(outcome, ChunkedOutcome(body: Array(body), verdict: .end(consumed: bytes.count)), file: file, line: line)
}

func assertChunkedRejected(
    _ input: String, _ status: UInt16, _ error: H1Error, limits: H1Limits = H1Limits(),
    file: StaticString = #filePath, line: UInt = #line
) {
    XCTAssertEqual(error.status, status, "catalogue status", file: file, line: line)
    let outcome = decodeThreeWays(Array(input), limits: limits, file: file, line: line)
    XCTAssertEqual(outcome.verdict, .failed(error), file: file, line: line)
}
