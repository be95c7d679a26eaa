import Core
import XCTest

@testable import HTTP1

/// RFC 9112 §3: method, request-target forms, HTTP-version.
final class RequestLineTests: XCTestCase {
    private func request(_ line: String, host: String = "h") -> String {
        "\(line)\r\nHost: \(host)\r\n\r\n"
    }

    // MARK: Method (RFC 9112 §3.1, RFC 9110 §9.1)

    func testKnownMethodsAreRecognised() {
        let cases: [(String, H1Method)] = [
            ("GET", .get), ("HEAD", .head), ("POST", .post), ("PUT", .put), ("DELETE", .delete),
            ("OPTIONS", .options), ("TRACE", .trace), ("PATCH", .patch),
        ]
        for (name, method) in cases {
            let r = assertAccepted(request("\(name) / HTTP/1.1"))
            XCTAssertEqual(r?.head.method, method, name)
        }
    }

    func testUnknownMethodTokenIsOther() throws {
        let r = try XCTUnwrap(assertAccepted(request("PROPFIND /dav HTTP/1.1")))
        XCTAssertEqual(r.head.method, .other)
        XCTAssertEqual(text(r.bytes, r.head.methodSpan), "PROPFIND")
    }

    func testMethodIsCaseSensitive() throws {
        let r = try XCTUnwrap(assertAccepted(request("get / HTTP/1.1")))
        XCTAssertEqual(r.head.method, .other)
    }

    func testMethodWithNonTokenCharacterIsRejected() {
        assertRejected(request("GE(T / HTTP/1.1"), 400, .invalidMethod)
        assertRejected(request("GET\t/ HTTP/1.1"), 400, .invalidMethod)
    }

    func testMissingMethodIsRejected() {
        assertRejected(request(" / HTTP/1.1"), 400, .invalidMethod)
    }

    func testOverlongMethodIsRejectedWith501() {
        assertRejected(request(String(repeating: "M", count: 65) + " / HTTP/1.1"), 501, .methodTooLong)
        assertAccepted(request(String(repeating: "M", count: 64) + " / HTTP/1.1"))
    }

    // MARK: Separators

    func testDoubleSpaceBeforeTargetIsRejected() {
        assertRejected(request("GET  / HTTP/1.1"), 400, .emptyTarget)
    }

    func testDoubleSpaceBeforeVersionIsRejected() {
        assertRejected(request("GET /  HTTP/1.1"), 400, .malformedVersion)
    }

    func testTrailingSpaceAfterVersionIsRejected() {
        assertRejected(request("GET / HTTP/1.1 "), 400, .malformedVersion)
    }

    func testMissingVersionIsRejected() {
        assertRejected("GET /\r\nHost: h\r\n\r\n", 400, .invalidTargetByte)
        assertRejected("GET / \r\nHost: h\r\n\r\n", 400, .malformedVersion)
    }

    // MARK: Request-target bytes and length

    func testTargetWithControlByteIsRejected() {
        assertRejected(request("GET /a\u{01}b HTTP/1.1"), 400, .invalidTargetByte)
        assertRejected(request("GET /a\u{7F}b HTTP/1.1"), 400, .invalidTargetByte)
        assertRejected(request("GET /a\tb HTTP/1.1"), 400, .invalidTargetByte)
    }

    func testTargetWithNonASCIIByteIsRejected() {
        assertRejected(request("GET /caf\u{E9} HTTP/1.1"), 400, .invalidTargetByte)
    }

    func testEightThousandOctetTargetIsAccepted() throws {
        let path = "/" + String(repeating: "p", count: 7999)
        let r = try XCTUnwrap(assertAccepted(request("GET \(path) HTTP/1.1")))
        XCTAssertEqual(r.head.target.count, 8000)
    }

    func testTargetAtMaxTargetBytesIsAccepted() {
        var limits = H1Limits()
        limits.maxTargetBytes = 20
        assertAccepted(request("GET /" + String(repeating: "a", count: 19) + " HTTP/1.1"), limits: limits)
    }

    func testTargetLongerThanMaxTargetBytesIsRejectedWith414() {
        var limits = H1Limits()
        limits.maxTargetBytes = 20
        assertRejected(request("GET /" + String(repeating: "a", count: 20) + " HTTP/1.1"), 414, .targetTooLong, limits: limits)
    }

    func testLongTargetIsRejectedWith414BeforeTheLineEnds() {
        assertRejected("GET /" + String(repeating: "a", count: 16 * 1024), 414, .targetTooLong)
    }

    // MARK: origin-form (RFC 9112 §3.2.1)

    func testOriginFormWithoutQueryHasEmptyQuery() throws {
        let r = try XCTUnwrap(assertAccepted(request("GET /a/b HTTP/1.1")))
        XCTAssertEqual(text(r.bytes, r.head.path), "/a/b")
        XCTAssertEqual(r.head.query.count, 0)
    }

    func testOriginFormEmptyQueryAfterQuestionMark() throws {
        let r = try XCTUnwrap(assertAccepted(request("GET /a? HTTP/1.1")))
        XCTAssertEqual(text(r.bytes, r.head.path), "/a")
        XCTAssertEqual(r.head.query.count, 0)
    }

    func testOriginFormQueryMayContainQuestionMarks() throws {
        let r = try XCTUnwrap(assertAccepted(request("GET /a?b?c=/d HTTP/1.1")))
        XCTAssertEqual(text(r.bytes, r.head.path), "/a")
        XCTAssertEqual(text(r.bytes, r.head.query), "b?c=/d")
    }

    func testFragmentIsLeftOutOfPathAndQuery() throws {
        let r = try XCTUnwrap(assertAccepted(request("GET /a?q=1#frag HTTP/1.1")))
        XCTAssertEqual(text(r.bytes, r.head.target), "/a?q=1#frag")
        XCTAssertEqual(text(r.bytes, r.head.path), "/a")
        XCTAssertEqual(text(r.bytes, r.head.query), "q=1")
        let s = try XCTUnwrap(assertAccepted(request("GET /a#f?x HTTP/1.1")))
        XCTAssertEqual(text(s.bytes, s.head.path), "/a")
        XCTAssertEqual(s.head.query.count, 0)
    }

    func testPercentEncodedPathIsPassedRaw() throws {
        let r = try XCTUnwrap(assertAccepted(request("GET /a%20b%2F HTTP/1.1")))
        XCTAssertEqual(text(r.bytes, r.head.path), "/a%20b%2F")
    }

    // MARK: absolute-form (RFC 9112 §3.2.2)

    func testAbsoluteFormIsAcceptedAndItsAuthorityIsTheHost() throws {
        let r = try XCTUnwrap(assertAccepted(request("GET http://example.com:8080/p/q?x=1 HTTP/1.1", host: "other")))
        XCTAssertEqual(text(r.bytes, r.head.target), "http://example.com:8080/p/q?x=1")
        XCTAssertEqual(text(r.bytes, r.head.path), "/p/q")
        XCTAssertEqual(text(r.bytes, r.head.query), "x=1")
        XCTAssertEqual(r.head.host.map { text(r.bytes, $0) }, "example.com:8080")
    }

    func testAbsoluteFormSchemeIsCaseInsensitive() throws {
        let r = try XCTUnwrap(assertAccepted(request("GET HTTPS://Example.com/x HTTP/1.1")))
        XCTAssertEqual(text(r.bytes, r.head.path), "/x")
    }

    func testAbsoluteFormWithoutPathHasSlashPath() throws {
        let r = try XCTUnwrap(assertAccepted(request("GET http://example.com HTTP/1.1")))
        XCTAssertEqual(text(r.bytes, r.head.path), "/")
        XCTAssertEqual(r.head.query.count, 0)
        let q = try XCTUnwrap(assertAccepted(request("GET http://example.com?a=b HTTP/1.1")))
        XCTAssertEqual(text(q.bytes, q.head.path), "/")
        XCTAssertEqual(text(q.bytes, q.head.query), "a=b")
    }

    func testAbsoluteFormWithIPv6AuthorityIsAccepted() throws {
        let r = try XCTUnwrap(assertAccepted(request("GET http://[::1]:80/ HTTP/1.1")))
        XCTAssertEqual(r.head.host.map { text(r.bytes, $0) }, "[::1]:80")
    }

    func testAbsoluteFormWithEmptyHostIsRejected() {
        assertRejected(request("GET http:///path HTTP/1.1"), 400, .invalidTargetAuthority)
        assertRejected(request("GET http://:80/path HTTP/1.1"), 400, .invalidTargetAuthority)
    }

    func testAbsoluteFormWithUserinfoIsRejected() {
        assertRejected(request("GET http://user@example.com/ HTTP/1.1"), 400, .invalidTargetAuthority)
    }

    func testAbsoluteFormStillRequiresHostOnHTTP11() {
        assertRejected("GET http://example.com/ HTTP/1.1\r\n\r\n", 400, .missingHost)
    }

    func testOtherSchemeIsRejected() {
        assertRejected(request("GET ftp://example.com/ HTTP/1.1"), 400, .invalidTargetForm)
        assertRejected(request("GET http:/x HTTP/1.1"), 400, .invalidTargetForm)
    }

    // MARK: authority-form (RFC 9112 §3.2.3)

    func testConnectWithAuthorityFormIsAccepted() throws {
        let r = try XCTUnwrap(assertAccepted(request("CONNECT example.com:443 HTTP/1.1", host: "example.com:443")))
        XCTAssertEqual(r.head.method, .connect)
        XCTAssertEqual(text(r.bytes, r.head.target), "example.com:443")
        XCTAssertEqual(r.head.path.count, 0)
    }

    func testConnectWithoutPortIsRejected() {
        assertRejected(request("CONNECT example.com HTTP/1.1"), 400, .invalidTargetAuthority)
        assertRejected(request("CONNECT example.com: HTTP/1.1"), 400, .invalidTargetAuthority)
    }

    func testConnectWithOriginFormIsRejected() {
        assertRejected(request("CONNECT /x HTTP/1.1"), 400, .invalidTargetAuthority)
    }

    func testAuthorityFormWithoutConnectIsRejected() {
        assertRejected(request("GET example.com:443 HTTP/1.1"), 400, .invalidTargetForm)
    }

    // MARK: asterisk-form (RFC 9112 §3.2.4)

    func testOptionsWithAsteriskIsAccepted() throws {
        let r = try XCTUnwrap(assertAccepted(request("OPTIONS * HTTP/1.1")))
        XCTAssertEqual(text(r.bytes, r.head.path), "*")
        XCTAssertEqual(r.head.query.count, 0)
    }

    func testAsteriskWithoutOptionsIsRejected() {
        assertRejected(request("GET * HTTP/1.1"), 400, .invalidTargetForm)
    }

    func testAsteriskFollowedByMoreIsRejected() {
        assertRejected(request("OPTIONS *x HTTP/1.1"), 400, .invalidTargetForm)
    }

    // MARK: HTTP-version (RFC 9112 §2.3, RFC 9110 §6.2)

    func testHTTP11And10AreAccepted() {
        XCTAssertEqual(assertAccepted(request("GET / HTTP/1.1"))?.head.version, .http11)
        XCTAssertEqual(assertAccepted(request("GET / HTTP/1.0"))?.head.version, .http10)
    }

    func testHigherHTTP1MinorVersionIsTreatedAs11() {
        XCTAssertEqual(assertAccepted(request("GET / HTTP/1.2"))?.head.version, .http11)
        XCTAssertEqual(assertAccepted(request("GET / HTTP/1.9"))?.head.version, .http11)
    }

    func testOtherMajorVersionIsRejectedWith505() {
        assertRejected(request("GET / HTTP/2.0"), 505, .unsupportedVersion)
        assertRejected(request("GET / HTTP/0.9"), 505, .unsupportedVersion)
        assertRejected(request("GET / HTTP/3.0"), 505, .unsupportedVersion)
    }

    func testMalformedVersionIsRejected() {
        for version in ["HTTP/1", "HTTP/1.", "HTTP/11", "http/1.1", "HTTP/1.1.", "HTTP/1.x", "HTTPS/1.1", "HTTP-1.1", "HTTP/1.10"] {
            let outcome = feedThreeWays(Array(request("GET / \(version)")))
            XCTAssertEqual(outcome.error, .malformedVersion, version)
            XCTAssertEqual(outcome.error?.status, 400, version)
        }
    }

    func testVersionIsJudgedBeforeTarget() {
        assertRejected(request("GET bogus HTTP/2.0"), 505, .unsupportedVersion)
    }

    func testBadRequestLineIsRejectedBeforeTheHeadEnds() {
        assertRejected("GET / HTTP/2.0\r\nHost: h\r\n", 505, .unsupportedVersion)
        assertRejected("GET nowhere HTTP/1.1\r\n", 400, .invalidTargetForm)
    }
}
