import Core
import XCTest

@testable import HTTP1

/// Host, Content-Length, Transfer-Encoding, Expect, Connection and Upgrade.
final class FieldSemanticsTests: XCTestCase {
    private func post(_ fields: String, version: String = "HTTP/1.1", host: Bool = true) -> String {
        "POST /p \(version)\r\n" + (host ? "Host: h\r\n" : "") + fields + "\r\n"
    }

    private func framing(_ request: String, file: StaticString = #filePath, line: UInt = #line) -> H1BodyFraming? {
        assertAccepted(request, file: file, line: line)?.head.framing
    }

    // MARK: Host (RFC 9112 §3.2, RFC 9110 §7.2)

    func testHTTP11WithoutHostIsRejected() {
        assertRejected("GET / HTTP/1.1\r\n\r\n", 400, .missingHost)
    }

    func testMoreThanOneHostIsRejected() {
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400, .multipleHost)
        assertRejected("GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n", 400, .multipleHost)
    }

    func testHTTP10WithoutHostIsAccepted() throws {
        let r = try XCTUnwrap(assertAccepted("GET / HTTP/1.0\r\n\r\n"))
        XCTAssertNil(r.head.host)
    }

    func testValidHostValuesAreAccepted() {
        for host in ["example.com", "example.com:8080", "EXAMPLE.com.", "127.0.0.1", "127.0.0.1:1", "[::1]", "[2001:db8::1]:443",
                     "[::ffff:192.0.2.1]", "xn--bcher-kva.example", "a%20b", "a_b~c!$&'()*+,;=", "h:", ""] {
            let r = assertAccepted("GET / HTTP/1.1\r\nHost: \(host)\r\n\r\n")
            XCTAssertEqual(r.flatMap { r in r.head.host.map { text(r.bytes, $0) } }, host, host)
        }
    }

    func testInvalidHostValuesAreRejected() {
        for host in ["exa mple.com", "user@example.com", "example.com:http", "example.com:65536", "example.com:123456", "a/b", "a?b",
                     "[::1", "[::1]x", "[zz::1]", "[1]", "a%2", "a%zz", "h:1:2", "\"h\""] {
            let outcome = feedThreeWays(Array("GET / HTTP/1.1\r\nHost: \(host)\r\n\r\n"))
            XCTAssertEqual(outcome.error, .invalidHost, host)
            XCTAssertEqual(outcome.error?.status, 400, host)
        }
    }

    func testInvalidHostOnHTTP10IsRejected() {
        assertRejected("GET / HTTP/1.0\r\nHost: a b\r\n\r\n", 400, .invalidHost)
    }

    // MARK: Content-Length (RFC 9110 §8.6, RFC 9112 §6.3)

    func testContentLengthIsAccepted() {
        XCTAssertEqual(framing(post("Content-Length: 42\r\n")), .contentLength(42))
        XCTAssertEqual(framing(post("Content-Length: 0\r\n")), .contentLength(0))
        XCTAssertEqual(framing(post("content-length:007\r\n")), .contentLength(7))
    }

    func testLargestContentLengthIsAccepted() {
        XCTAssertEqual(framing(post("Content-Length: 9223372036854775807\r\n")), .contentLength(Int64.max))
    }

    func testContentLengthOverflowingInt64IsRejected() {
        assertRejected(post("Content-Length: 9223372036854775808\r\n"), 400, .invalidContentLength)
        assertRejected(post("Content-Length: 99999999999999999999999\r\n"), 400, .invalidContentLength)
    }

    func testContentLengthWithSignIsRejected() {
        assertRejected(post("Content-Length: +5\r\n"), 400, .invalidContentLength)
        assertRejected(post("Content-Length: -5\r\n"), 400, .invalidContentLength)
    }

    func testContentLengthWithInnerSpaceIsRejected() {
        assertRejected(post("Content-Length: 1 2\r\n"), 400, .invalidContentLength)
    }

    func testNonNumericContentLengthIsRejected() {
        assertRejected(post("Content-Length: 0x10\r\n"), 400, .invalidContentLength)
        assertRejected(post("Content-Length: 1.0\r\n"), 400, .invalidContentLength)
        assertRejected(post("Content-Length: \r\n"), 400, .invalidContentLength)
    }

    func testOWSAroundContentLengthIsNotPartOfTheValue() {
        // RFC 9112 §5.1: OWS before and after the field value is excluded.
        XCTAssertEqual(framing(post("Content-Length:5\r\n")), .contentLength(5))
        XCTAssertEqual(framing(post("Content-Length: \t 5 \t \r\n")), .contentLength(5))
    }

    // RFC 9110 §8.6 lets a recipient of "Content-Length: 42, 42" reject it or
    // replace it with the single value; DESIGN principle 7 picks rejection.
    func testContentLengthListOfIdenticalValuesIsRejected() {
        assertRejected(post("Content-Length: 5, 5\r\n"), 400, .contentLengthList)
        assertRejected(post("Content-Length: 5,5\r\n"), 400, .contentLengthList)
        assertRejected(post("Content-Length: 5 ,\t5\r\n"), 400, .contentLengthList)
        assertRejected(post("Content-Length: 5,5,05\r\n"), 400, .contentLengthList)
    }

    func testContentLengthListOfDifferingValuesIsRejected() {
        assertRejected(post("Content-Length: 5, 6\r\n"), 400, .contentLengthList)
    }

    func testContentLengthListWithEmptyElementIsRejected() {
        assertRejected(post("Content-Length: 5,\r\n"), 400, .contentLengthList)
        assertRejected(post("Content-Length: ,5\r\n"), 400, .contentLengthList)
        assertRejected(post("Content-Length: ,\r\n"), 400, .contentLengthList)
        assertRejected(post("Content-Length: x, 5\r\n"), 400, .contentLengthList)
    }

    func testContentLengthInTwoIdenticalFieldLinesIsRejected() {
        assertRejected(post("Content-Length: 5\r\nContent-Length: 5\r\n"), 400, .repeatedContentLength)
        assertRejected(post("Content-Length: 5\r\ncontent-length:5\r\n"), 400, .repeatedContentLength)
        assertRejected(post("Content-Length: 0\r\nX-Between: y\r\nContent-Length: 0\r\n"), 400, .repeatedContentLength)
    }

    func testContentLengthInTwoDifferingFieldLinesIsRejected() {
        assertRejected(post("Content-Length: 5\r\nContent-Length: 6\r\n"), 400, .repeatedContentLength)
        assertRejected(post("Content-Length: 5\r\nContent-Length: 5, 5\r\n"), 400, .repeatedContentLength)
    }

    func testAnInvalidFirstContentLengthLineIsNamedBeforeTheRepeat() {
        assertRejected(post("Content-Length: x\r\nContent-Length: 5\r\n"), 400, .invalidContentLength)
    }

    func testNoContentLengthOrTransferEncodingMeansNoBody() {
        XCTAssertEqual(framing(post("")), H1BodyFraming.none)
    }

    // MARK: Transfer-Encoding (RFC 9112 §6.1, §6.3)

    func testChunkedTransferEncodingIsAccepted() {
        XCTAssertEqual(framing(post("Transfer-Encoding: chunked\r\n")), .chunked)
        XCTAssertEqual(framing(post("transfer-encoding: CHUNKED\r\n")), .chunked)
    }

    func testContentLengthWithTransferEncodingIsRejected() {
        assertRejected(post("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"), 400, .contentLengthWithTransferEncoding)
        assertRejected(post("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"), 400, .contentLengthWithTransferEncoding)
        assertRejected(post("Transfer-Encoding: gzip, chunked\r\nContent-Length: 5\r\n"), 400, .contentLengthWithTransferEncoding)
    }

    func testTransferEncodingInTwoFieldLinesIsRejected() {
        assertRejected(post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"), 400, .repeatedTransferEncoding)
        assertRejected(post("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"), 400, .repeatedTransferEncoding)
    }

    func testChunkedNotLastIsRejected() {
        assertRejected(post("Transfer-Encoding: chunked, gzip\r\n"), 400, .chunkedNotLast)
    }

    func testOnlyOtherCodingsAreRejected() {
        assertRejected(post("Transfer-Encoding: gzip\r\n"), 400, .chunkedNotLast)
        assertRejected(post("Transfer-Encoding: identity\r\n"), 400, .chunkedNotLast)
    }

    func testChunkedTwiceIsRejected() {
        assertRejected(post("Transfer-Encoding: chunked, chunked\r\n"), 400, .chunkedRepeated)
        assertRejected(post("Transfer-Encoding: chunked, gzip, chunked\r\n"), 400, .chunkedRepeated)
    }

    func testOtherCodingsBeforeChunkedAreRejectedWith501() {
        assertRejected(post("Transfer-Encoding: gzip, chunked\r\n"), 501, .unsupportedTransferCoding)
        assertRejected(post("Transfer-Encoding: deflate , chunked\r\n"), 501, .unsupportedTransferCoding)
    }

    func testEmptyOrGarbageTransferEncodingIsRejected() {
        assertRejected(post("Transfer-Encoding: \r\n"), 400, .invalidTransferEncoding)
        assertRejected(post("Transfer-Encoding: ,chunked\r\n"), 400, .invalidTransferEncoding)
        assertRejected(post("Transfer-Encoding: chunked,\r\n"), 400, .invalidTransferEncoding)
        assertRejected(post("Transfer-Encoding: chunked;x=1\r\n"), 400, .invalidTransferEncoding)
        assertRejected(post("Transfer-Encoding: \"chunked\"\r\n"), 400, .invalidTransferEncoding)
        assertRejected(post("Transfer-Encoding: chunked chunked\r\n"), 400, .invalidTransferEncoding)
    }

    func testTransferEncodingOnHTTP10IsRejected() {
        assertRejected(post("Transfer-Encoding: chunked\r\n", version: "HTTP/1.0"), 400, .transferEncodingInHTTP10)
        assertRejected(post("Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", version: "HTTP/1.0", host: false),
                       400, .transferEncodingInHTTP10)
    }

    // MARK: Expect (RFC 9110 §10.1.1)

    func testExpect100ContinueIsRecognised() {
        XCTAssertEqual(assertAccepted(post("Expect: 100-continue\r\nContent-Length: 3\r\n"))?.head.expectContinue, true)
        XCTAssertEqual(assertAccepted(post("Expect: 100-CONTINUE\r\n"))?.head.expectContinue, true)
    }

    func testOtherExpectationIsRejectedWith417() {
        assertRejected(post("Expect: 200-ok\r\n"), 417, .unsupportedExpectation)
        assertRejected(post("Expect: 100-continue, x\r\n"), 417, .unsupportedExpectation)
        assertRejected(post("Expect: 100-continue\r\nExpect: foo\r\n"), 417, .unsupportedExpectation)
    }

    func testExpectOnHTTP10IsIgnored() {
        let r = assertAccepted(post("Expect: 100-continue\r\n", version: "HTTP/1.0"))
        XCTAssertEqual(r?.head.expectContinue, false)
        XCTAssertEqual(assertAccepted(post("Expect: foo\r\n", version: "HTTP/1.0"))?.head.expectContinue, false)
    }

    func testEmptyExpectIsIgnored() {
        XCTAssertEqual(assertAccepted(post("Expect: \r\n"))?.head.expectContinue, false)
    }

    func testFramingErrorWinsOverExpectation() {
        assertRejected(post("Expect: foo\r\nContent-Length: x\r\n"), 400, .invalidContentLength)
    }

    // MARK: Connection (RFC 9112 §9.3) and Upgrade

    func testHTTP11IsPersistentByDefault() {
        XCTAssertEqual(assertAccepted(post(""))?.head.keepAlive, true)
    }

    func testConnectionCloseEndsHTTP11Persistence() {
        XCTAssertEqual(assertAccepted(post("Connection: close\r\n"))?.head.keepAlive, false)
        XCTAssertEqual(assertAccepted(post("Connection: foo, CLOSE\r\n"))?.head.keepAlive, false)
        XCTAssertEqual(assertAccepted(post("Connection: keep-alive\r\nConnection: close\r\n"))?.head.keepAlive, false)
    }

    func testHTTP10IsPersistentOnlyWithKeepAlive() {
        XCTAssertEqual(assertAccepted(post("", version: "HTTP/1.0", host: false))?.head.keepAlive, false)
        XCTAssertEqual(assertAccepted(post("Connection: Keep-Alive\r\n", version: "HTTP/1.0", host: false))?.head.keepAlive, true)
        XCTAssertEqual(assertAccepted(post("Connection: keep-alive, close\r\n", version: "HTTP/1.0"))?.head.keepAlive, false)
    }

    func testUpgradeNeedsBothFieldAndConnectionOption() {
        XCTAssertEqual(assertAccepted(post("Upgrade: websocket\r\nConnection: Upgrade\r\n"))?.head.upgrade, true)
        XCTAssertEqual(assertAccepted(post("Upgrade: websocket\r\nConnection: keep-alive, upgrade\r\n"))?.head.upgrade, true)
        XCTAssertEqual(assertAccepted(post("Upgrade: websocket\r\n"))?.head.upgrade, false)
        XCTAssertEqual(assertAccepted(post("Connection: upgrade\r\n"))?.head.upgrade, false)
    }
}
