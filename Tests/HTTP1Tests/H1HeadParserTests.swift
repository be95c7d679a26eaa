import Core
import XCTest

@testable import HTTP1

/// The parser as a whole: a complete request, what the head reports, and
/// the incremental contract. Rules with their own file are tested there.
final class H1HeadParserTests: XCTestCase {
    func testSimpleGetIsAccepted() throws {
        let r = try XCTUnwrap(assertAccepted("GET /index.html?a=1&b=2 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\n\r\n"))
        XCTAssertEqual(r.head.method, .get)
        XCTAssertEqual(text(r.bytes, r.head.methodSpan), "GET")
        XCTAssertEqual(text(r.bytes, r.head.target), "/index.html?a=1&b=2")
        XCTAssertEqual(text(r.bytes, r.head.path), "/index.html")
        XCTAssertEqual(text(r.bytes, r.head.query), "a=1&b=2")
        XCTAssertEqual(r.head.version, .http11)
        XCTAssertEqual(r.head.framing, H1BodyFraming.none)
        XCTAssertTrue(r.head.keepAlive)
        XCTAssertFalse(r.head.expectContinue)
        XCTAssertFalse(r.head.upgrade)
        XCTAssertEqual(r.head.host.map { text(r.bytes, $0) }, "example.com")
        XCTAssertEqual(r.fields, [
            .init(name: "Host", value: "example.com", token: .host),
            .init(name: "User-Agent", value: "t", token: .other),
        ])
    }

    func testHeadWithoutFieldsIsAcceptedOnHTTP10() throws {
        let r = try XCTUnwrap(assertAccepted("GET / HTTP/1.0\r\n\r\n"))
        XCTAssertEqual(r.head.version, .http10)
        XCTAssertNil(r.head.host)
        XCTAssertFalse(r.head.keepAlive)
        XCTAssertEqual(r.fields, [])
    }

    func testHeadLengthStopsAtEmptyLineAndIgnoresPipelinedRequest() throws {
        let first = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
        let second = "GET /b HTTP/1.1\r\nHost: h\r\n\r\n"
        let bytes = Array(first + second)
        var parser = H1HeadParser(limits: H1Limits())
        let table = H1HeaderTable(capacity: 100)
        let one = try XCTUnwrap(parseHead(&parser, bytes, table).head)
        XCTAssertEqual(one.headLength, first.utf8.count)
        XCTAssertEqual(text(bytes, one.path), "/a")
        parser.reset()
        let rest = Array(bytes[one.headLength...])
        let two = try XCTUnwrap(parseHead(&parser, rest, table).head)
        XCTAssertEqual(text(rest, two.path), "/b")
    }

    func testIncompleteHeadIsIncompleteAtEveryPrefix() {
        let bytes = Array("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n")
        let table = H1HeaderTable(capacity: 100)
        for n in 0..<bytes.count {
            var parser = H1HeadParser(limits: H1Limits())
            XCTAssertEqual(parseHead(&parser, Array(bytes[..<n]), table).result, .incomplete, "prefix \(n)")
        }
    }

    func testFieldValuesAreTrimmedAndKeepTheirCase() throws {
        let r = try XCTUnwrap(assertAccepted("GET / HTTP/1.1\r\nHOST:\t h \t\r\nX-Empty:\r\nX-Inner: a  b\r\n\r\n"))
        XCTAssertEqual(r.fields, [
            .init(name: "HOST", value: "h", token: .host),
            .init(name: "X-Empty", value: "", token: .other),
            .init(name: "X-Inner", value: "a  b", token: .other),
        ])
    }

    func testObsTextInFieldValueIsAccepted() throws {
        let bytes = Array("GET / HTTP/1.1\r\nHost: h\r\nX-Latin: caf") + [0xE9, 0xFF] + Array("\r\n\r\n")
        let outcome = feedThreeWays(bytes)
        XCTAssertEqual(outcome.fields.count, 2)
        XCTAssertNotNil(outcome.head)
    }

    func testFailureIsStickyUntilReset() {
        var parser = H1HeadParser(limits: H1Limits())
        let table = H1HeaderTable(capacity: 100)
        XCTAssertEqual(parseHead(&parser, Array("GET / HTTP/1.1\n"), table).error, .bareLF)
        XCTAssertEqual(parseHead(&parser, Array("GET / HTTP/1.1\r\nHost: h\r\n\r\n"), table).error, .bareLF)
        parser.reset()
        XCTAssertNotNil(parseHead(&parser, Array("GET / HTTP/1.1\r\nHost: h\r\n\r\n"), table).head)
    }

    func testFailureLeavesHeaderTableEmpty() {
        var parser = H1HeadParser(limits: H1Limits())
        let table = H1HeaderTable(capacity: 100)
        _ = parseHead(&parser, Array("GET / HTTP/1.1\r\nHost: h\r\n\r\n"), table)
        XCTAssertEqual(table.count, 1)
        parser.reset()
        _ = parseHead(&parser, Array("GET / HTTP/1.1\r\nHost: h\r\nHost: i\r\n\r\n"), table)
        XCTAssertEqual(table.count, 0)
    }

    func testHeaderTableSmallerThanFieldsIsRejected() {
        var parser = H1HeadParser(limits: H1Limits())
        let table = H1HeaderTable(capacity: 1)
        let outcome = parseHead(&parser, Array("GET / HTTP/1.1\r\nHost: h\r\nA: b\r\n\r\n"), table)
        XCTAssertEqual(outcome.error?.status, 431)
        XCTAssertEqual(outcome.error, .tooManyFields)
    }

    /// The h2 connection preface arriving on an HTTP/1 port.
    func testHTTP2PrefaceIsRejectedWith505() {
        assertRejected("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, .unsupportedVersion)
    }

    /// A value type small enough to return by value; the error is a status
    /// and a static string.
    func testResultSizesStaySmall() {
        XCTAssertLessThanOrEqual(MemoryLayout<H1Error>.size, 32)
        XCTAssertLessThanOrEqual(MemoryLayout<H1RequestHead>.size, 96)
        XCTAssertLessThanOrEqual(MemoryLayout<H1HeadParser>.size, 256)
        XCTAssertLessThanOrEqual(MemoryLayout<H1ChunkedDecoder>.size, 80)
    }
}
