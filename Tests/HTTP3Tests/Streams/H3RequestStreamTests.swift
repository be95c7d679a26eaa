// Request streams (RFC 9114 §4.1): frame order, the shared field rules
// (§4.1.2, §4.2, §4.3) as H3_MESSAGE_ERROR, content-length against DATA.

import XCTest
import HTTPFields
@testable import HTTP3

final class H3RequestStreamTests: XCTestCase {
    private let base: [(String, String)] = [(":method", "POST"), (":scheme", "https"), (":authority", "a.example"), (":path", "/up")]

    private func headersFrame(_ fields: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        QPACKEncoder().section(fields).withUnsafeBytes { H3FrameEncoder.appendHeaders($0, to: &out) }
        return out
    }

    private func dataFrame(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        H3FrameEncoder.appendDataHeader(length: s.utf8.count, to: &out)
        return out + Array(s.utf8)
    }

    /// Drives a stream through `wire`: decodes each field section with a
    /// static-only decoder, collects heads and body. Throws what the stream throws.
    private func run(_ wire: [UInt8], fin: Bool = true, connect: Bool = false, cut: Int? = nil) throws -> (heads: [RequestHead], body: [UInt8]) {
        var s = H3RequestStream(allowConnectProtocol: connect)
        var decoder = QPACKDecoder(maxTableCapacity: 0)
        var heads: [RequestHead] = []
        var body: [UInt8] = []
        let pieces = cut.map { [Array(wire[..<$0]), Array(wire[$0...])] } ?? [wire]
        for piece in pieces {
            try piece.withUnsafeBytes { (p: UnsafeRawBufferPointer) throws in
                var i = 0
                while i < p.count {
                    let (event, n) = try s.read(UnsafeRawBufferPointer(rebasing: p[i...]))
                    switch event {
                    case .fieldSection(let trailers)?:
                        var list = HeaderList()
                        let done = try s.fieldSectionBytes.withUnsafeBytes { try decoder.decodeFieldSection($0, stream: 0, into: &list) }
                        XCTAssertTrue(done)
                        heads.append(trailers ? try s.acceptTrailers(list) : try s.acceptHead(list))
                    case .body(let r)?:
                        body += p[i + r.lowerBound ..< i + r.upperBound]
                    case nil:
                        break
                    }
                    i += n
                }
            }
        }
        if fin { try s.finish() }
        return (heads, body)
    }

    func testHeadersDataTrailersWholeAndSplitAtEveryByte() throws {
        let wire = headersFrame(base + [("content-length", "10")]) + hex("21 01 00") + dataFrame("hello") + dataFrame("world")
            + headersFrame([("x-checksum", "abc")])
        for cut in [nil] + (0 ... wire.count).map(Optional.some) {
            let (heads, body) = try run(wire, cut: cut)
            XCTAssertEqual(heads.count, 2)
            XCTAssertEqual(heads[0].withBytes(of: heads[0].method) { Array($0) }, Array("POST".utf8))
            XCTAssertEqual(heads[0].contentLength, 10)
            XCTAssertEqual(heads[1].fields.count, 1)
            XCTAssertEqual(body, Array("helloworld".utf8))
        }
    }

    // §4.1: "a DATA frame before any HEADERS frame ... is considered invalid".
    func testDataBeforeHeadersIsFrameUnexpected() {
        XCTAssertThrowsH3(.dataBeforeHeaders) { _ = try run(dataFrame("x") + headersFrame(base)) }
        XCTAssertThrowsH3(.dataBeforeHeaders) { _ = try run(hex("00 00")) }
        XCTAssertEqual(H3Error.dataBeforeHeaders.code, .frameUnexpected)
        XCTAssertTrue(H3Error.dataBeforeHeaders.isConnectionError)
    }

    // §4.1: "a HEADERS or DATA frame after the trailing HEADERS frame".
    func testFramesAfterTrailersAreFrameUnexpected() {
        let head = headersFrame(base) + headersFrame([("x-t", "1")])
        XCTAssertThrowsH3(.frameAfterTrailers) { _ = try run(head + headersFrame([("x-t", "2")])) }
        XCTAssertThrowsH3(.frameAfterTrailers) { _ = try run(head + dataFrame("late")) }
    }

    // §4.3.1, §4.2, §4.1.2: malformed heads are stream errors H3_MESSAGE_ERROR.
    func testMalformedHeadsAreMessageErrors() {
        let cases: [([(String, String)], RequestFieldError)] = [
            ([(":method", "GET"), (":scheme", "https"), (":authority", "a"), (":path", "/"), (":path", "/2")], .duplicatePseudo),
            ([(":method", "GET"), ("accept", "*/*"), (":scheme", "https"), (":authority", "a"), (":path", "/")], .pseudoAfterRegular),
            ([(":scheme", "https"), (":authority", "a"), (":path", "/")], .missingMethod),
            ([(":method", "GET"), (":authority", "a")], .missingSchemeOrPath),
            ([(":method", "GET"), (":scheme", "https"), (":authority", "a"), (":path", "")], .invalidPath),
            ([(":method", "GET"), (":scheme", "https"), (":path", "/")], .missingAuthority),
            ([(":method", "GET"), (":scheme", "https"), (":authority", "a"), (":path", "/"), (":status", "200")], .unknownPseudo),
            (base + [("Accept", "*/*")], .invalidFieldName),
            (base + [("x", "a\r\nb")], .invalidFieldValue),
            (base + [("connection", "close")], .connectionSpecificField),
            (base + [("transfer-encoding", "chunked")], .connectionSpecificField),
            (base + [("te", "gzip")], .teNotTrailers),
            (base + [("content-length", "1, 1")], .contentLengthList),
            (base + [("content-length", "-1")], .invalidContentLength),
            ([(":method", "CONNECT"), (":authority", "a.example:443"), (":path", "/")], .connectWithSchemeOrPath),
            ([(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":authority", "a"), (":path", "/")], .protocolNotEnabled),
        ]
        for (fields, rule) in cases {
            XCTAssertThrowsH3(H3Error(rule)) { _ = try run(headersFrame(fields)) }
        }
        XCTAssertEqual(H3Error(RequestFieldError.missingMethod).code, .messageError)
        XCTAssertFalse(H3Error(RequestFieldError.missingMethod).isConnectionError)
        XCTAssertThrowsH3(H3Error(.pseudoInTrailers)) { _ = try run(headersFrame(base) + headersFrame([(":path", "/")])) }
    }

    // RFC 9220: extended CONNECT with :protocol once we sent
    // SETTINGS_ENABLE_CONNECT_PROTOCOL; plain CONNECT needs host:port.
    func testConnectForms() throws {
        let ext = [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":authority", "a.example"), (":path", "/chat")]
        let (heads, _) = try run(headersFrame(ext), connect: true)
        XCTAssertEqual(heads[0].withBytes(of: heads[0].protocolName) { Array($0) }, Array("websocket".utf8))
        XCTAssertNoThrow(try run(headersFrame([(":method", "CONNECT"), (":authority", "a.example:443")])))
        XCTAssertThrowsH3(H3Error(.invalidAuthority)) { _ = try run(headersFrame([(":method", "CONNECT"), (":authority", "a.example")])) }
    }

    // §4.1.2: content-length must equal the sum of DATA payloads.
    func testContentLengthMismatchIsMessageError() {
        let head = headersFrame(base + [("content-length", "3")])
        XCTAssertThrowsH3(.contentLengthMismatch) { _ = try run(head + dataFrame("ab")) }
        XCTAssertThrowsH3(.contentLengthMismatch) { _ = try run(head + dataFrame("abcd"), fin: false) }
        XCTAssertThrowsH3(.contentLengthMismatch) { _ = try run(head + dataFrame("ab") + dataFrame("cd"), fin: false) }
        XCTAssertNoThrow(try run(head + dataFrame("a") + dataFrame("bc")))
        // Refused on the DATA frame header, before any of its payload.
        XCTAssertThrowsH3(.contentLengthMismatch) { _ = try run(head + hex("00 04"), fin: false) }
        XCTAssertEqual(H3Error.contentLengthMismatch.code, .messageError)
    }

    // §4.1: a stream ending before a complete request.
    func testStreamEndingWithoutAHeadIsRequestIncomplete() {
        XCTAssertThrowsH3(.requestIncomplete) { _ = try run([]) }
        XCTAssertThrowsH3(.requestIncomplete) { _ = try run(hex("21 00")) }
        XCTAssertThrowsH3(.frameTruncatedAtEnd) { _ = try run(Array(headersFrame(base).dropLast())) }
    }
}
