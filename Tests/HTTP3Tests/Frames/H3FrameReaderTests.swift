// The frame reader (RFC 9114 §7): incremental over any split, frames allowed
// per stream kind (§7.2 table, §6.2.1), payload layout and limits.

import XCTest
@testable import HTTP3

/// Everything a reader produced from `wire` fed in pieces cut at `cuts`.
enum Seen: Equatable {
    case headers([UInt8]), dataHeader(UInt64), data([UInt8]), settings(H3Settings), goaway(UInt64), cancelPush(UInt64), maxPushID(UInt64)
}

func readAll(_ reader: inout H3FrameReader, _ wire: [UInt8], cuts: [Int] = []) throws -> [Seen] {
    var seen: [Seen] = []
    var pieces: [[UInt8]] = []
    var last = 0
    for c in cuts + [wire.count] { pieces.append(Array(wire[last ..< c])); last = c }
    for piece in pieces {
        try piece.withUnsafeBytes { (p: UnsafeRawBufferPointer) throws in
            var i = 0
            repeat {
                let (event, n) = try reader.read(UnsafeRawBufferPointer(rebasing: p[i...]))
                XCTAssertLessThanOrEqual(n, p.count - i)
                switch event {
                case nil: break
                case .headers: seen.append(.headers(reader.payload))
                case .dataHeader(let l): seen.append(.dataHeader(l))
                case .data(let r): seen.append(.data(Array(p[i + r.lowerBound ..< i + r.upperBound])))
                case .settings(let s): seen.append(.settings(s))
                case .goaway(let v): seen.append(.goaway(v))
                case .cancelPush(let v): seen.append(.cancelPush(v))
                case .maxPushID(let v): seen.append(.maxPushID(v))
                }
                i += n
            } while i < p.count
        }
    }
    return seen.reduce(into: []) { acc, s in
        // Join DATA slices so that splits compare equal.
        if case .data(let b) = s, case .data(let a)? = acc.last { acc[acc.count - 1] = .data(a + b) } else { acc.append(s) }
    }
}

final class H3FrameReaderTests: XCTestCase {
    // HEADERS, a reserved frame (§7.2.8), DATA, an unknown frame, empty DATA.
    let requestWire = hex("01 03 000051") + hex("21 02 abcd") + hex("00 05 68656c6c6f") + hex("4040 01 ff") + hex("00 00")
    let requestSeen: [Seen] = [.headers(hex("000051")), .dataHeader(5), .data(Array("hello".utf8)), .dataHeader(0)]

    func testRequestFramesWholeAndSplitAtEveryByte() throws {
        var r = H3FrameReader(kind: .request)
        XCTAssertEqual(try readAll(&r, requestWire), requestSeen)
        XCTAssertTrue(r.isAtFrameBoundary)
        for cut in 0 ... requestWire.count {
            var r = H3FrameReader(kind: .request)
            XCTAssertEqual(try readAll(&r, requestWire, cuts: [cut]), requestSeen, "cut \(cut)")
        }
        var one = H3FrameReader(kind: .request)
        XCTAssertEqual(try readAll(&one, requestWire, cuts: Array(1 ..< requestWire.count)), requestSeen)
    }

    func testControlFramesWholeAndSplit() throws {
        let wire = hex("04 05 0110 074064") + hex("0d 01 05") + hex("07 02 4004") + hex("21 00")
        let expected: [Seen] = [.settings(H3Settings(qpackMaxTableCapacity: 0x10, qpackBlockedStreams: 0x64)), .maxPushID(5), .goaway(4)]
        var whole = H3FrameReader(kind: .control)
        XCTAssertEqual(try readAll(&whole, wire), expected)
        for cut in 0 ... wire.count {
            var r = H3FrameReader(kind: .control)
            XCTAssertEqual(try readAll(&r, wire, cuts: [cut]), expected, "cut \(cut)")
        }
    }

    // §6.2.1: SETTINGS first (even before a reserved frame), and only once.
    func testControlStreamMustStartWithOneSettings() {
        var r = H3FrameReader(kind: .control)
        XCTAssertThrowsH3(.missingSettings) { _ = try readAll(&r, hex("21 00")) }
        r = H3FrameReader(kind: .control)
        XCTAssertThrowsH3(.missingSettings) { _ = try readAll(&r, hex("07 01 00")) }
        r = H3FrameReader(kind: .control)
        XCTAssertThrowsH3(.secondSettings) { _ = try readAll(&r, hex("04 00 04 00")) }
        XCTAssertEqual(H3Error.missingSettings.code, .missingSettings)
    }

    // §7.2.1, §7.2.2, §7.2.5: DATA, HEADERS, PUSH_PROMISE on the control stream.
    func testFramesForbiddenOnTheControlStream() {
        for (wire, e) in [(hex("00 00"), H3Error.dataOnControlStream), (hex("01 00"), .headersOnControlStream),
                          (hex("05 01 00"), .pushPromiseOnControlStream)] {
            var r = H3FrameReader(kind: .control)
            XCTAssertThrowsH3(e) { _ = try readAll(&r, hex("04 00") + wire) }
            XCTAssertEqual(e.code, .frameUnexpected)
        }
    }

    // §7.2.3, §7.2.4, §7.2.6, §7.2.7 on a request stream; §7.2.5 from a client.
    func testFramesForbiddenOnARequestStream() {
        for t: UInt8 in [0x03, 0x04, 0x07, 0x0d] {
            var r = H3FrameReader(kind: .request)
            XCTAssertThrowsH3(.controlFrameOnRequestStream) { _ = try readAll(&r, [t, 0x01, 0x00]) }
        }
        var r = H3FrameReader(kind: .request)
        XCTAssertThrowsH3(.pushPromiseFromClient) { _ = try readAll(&r, hex("05 02 0000")) }
    }

    // §7.2.8: PRIORITY, PING, WINDOW_UPDATE, CONTINUATION.
    func testHTTP2FrameTypesAreFrameUnexpected() {
        for t: UInt8 in [0x02, 0x06, 0x08, 0x09] {
            var r = H3FrameReader(kind: .request)
            XCTAssertThrowsH3(.http2FrameType) { _ = try readAll(&r, [t, 0x00]) }
            var c = H3FrameReader(kind: .control)
            XCTAssertThrowsH3(.http2FrameType) { _ = try readAll(&c, [0x04, 0x00, t, 0x00]) }
        }
    }

    // §7.1: payloads must hold exactly their fields.
    func testSingleIntegerFramesMustHoldExactlyOneInteger() {
        for wire in [hex("07 00"), hex("07 09 000000000000000000"), hex("07 02 0000"), hex("0d 01 40")] {
            var r = H3FrameReader(kind: .control)
            XCTAssertThrowsH3(.framePayloadMismatch) { _ = try readAll(&r, hex("04 00") + wire) }
        }
    }

    // §7.1: a stream may not end inside a frame.
    func testStreamEndingInsideAFrameIsFrameError() throws {
        for wire in [hex("01"), hex("01 03 00"), hex("00 05 6865"), hex("21 04 00")] {
            var r = H3FrameReader(kind: .request)
            _ = try readAll(&r, wire)
            XCTAssertThrowsH3(.frameTruncatedAtEnd) { try r.finish() }
        }
        var r = H3FrameReader(kind: .request)
        _ = try readAll(&r, requestWire)
        XCTAssertNoThrow(try r.finish())
    }

    // Limits: HEADERS beyond the buffer bound (stream error), SETTINGS beyond
    // it (connection error); huge unknown and DATA frames are never buffered.
    func testLengthLimits() throws {
        let limits = H3FrameReader.Limits(maxHeadersLength: 16, maxSettingsLength: 8)
        var r = H3FrameReader(kind: .request, limits: limits)
        XCTAssertThrowsH3(.headersFrameTooLarge) { _ = try readAll(&r, hex("01 11")) }
        XCTAssertFalse(H3Error.headersFrameTooLarge.isConnectionError)
        var c = H3FrameReader(kind: .control, limits: limits)
        XCTAssertThrowsH3(.frameTooLarge) { _ = try readAll(&c, hex("04 09")) }
        var big = H3FrameReader(kind: .request, limits: limits)
        XCTAssertEqual(try readAll(&big, hex("21 ffffffffffffffff 00")), [], "2^62-1 byte reserved frame: skipped, not buffered")
        XCTAssertFalse(big.isAtFrameBoundary)
        var data = H3FrameReader(kind: .request, limits: limits)
        XCTAssertEqual(try readAll(&data, hex("00 ffffffffffffffff 01")), [.dataHeader((1 << 62) - 1), .data([1])])
    }

    func testEncoderOutputReadsBack() throws {
        var out: [UInt8] = []
        let section = hex("0000d9")
        section.withUnsafeBytes { H3FrameEncoder.appendHeaders($0, to: &out) }
        H3FrameEncoder.appendDataHeader(length: 3, to: &out)
        out += [1, 2, 3]
        [UInt8]([9]).withUnsafeBytes { H3FrameEncoder.appendGreaseFrame(3, payload: $0, to: &out) }
        var r = H3FrameReader(kind: .request)
        XCTAssertEqual(try readAll(&r, out), [.headers(section), .dataHeader(3), .data([1, 2, 3])])
        var goaway: [UInt8] = []
        H3FrameEncoder.appendSettings(H3Settings(), to: &goaway)
        H3FrameEncoder.appendGoaway(streamID: 400, to: &goaway)
        var c = H3FrameReader(kind: .control)
        XCTAssertEqual(try readAll(&c, goaway), [.settings(H3Settings()), .goaway(400)])
    }
}
