// Request message validation through the connection (RFC 9113 §8.1–§8.3,
// RFC 8441 §4): malformed requests are stream errors PROTOCOL_ERROR — an
// RST_STREAM and no event.

import XCTest
import Core
@testable import HTTP2

final class RequestValidationTests: XCTestCase {
    private func assertMalformed(_ fields: [(String, String)], _ expected: H2Error, limits: H2Limits = H2Limits(),
                                 endStream: Bool = true, file: StaticString = #filePath, line: UInt = #line) {
        let h = H2Harness(limits: limits)
        _ = h.drain()
        XCTAssertEqual(h.feed(h.headers(1, fields, endStream: endStream)), [], file: file, line: line)
        XCTAssertEqual(h.drain(), [.rst(1, .protocolError)], file: file, line: line)
        XCTAssertFalse(h.conn.isClosing, file: file, line: line)
        XCTAssertEqual(h.conn.openStreamCount, 0, file: file, line: line)
        // The same verdict straight from the validator, to pin the rule.
        var list = HeaderList()
        var enc = HPACKEncoder()
        var dec = HPACKDecoder(maxHeaderListSize: 1 << 20)
        try! enc.encode(fields).withUnsafeBytes { try dec.decode($0, into: &list) }
        var v = RequestValidator(allowProtocol: limits.enableConnectProtocol)
        XCTAssertThrowsError(try v.build(list, trailers: false), file: file, line: line) {
            XCTAssertEqual($0 as? H2Error, expected, file: file, line: line)
        }
    }

    private let base: [(String, String)] = [(":method", "GET"), (":scheme", "https"), (":authority", "a.example"), (":path", "/")]

    func testValidRequestFieldsAndPseudoHeaders() {
        let h = H2Harness()
        let events = h.feed(h.headers(1, base + [("accept", "*/*"), ("x-empty", ""), ("te", "trailers"), ("x-obs", "caf\u{e9}")]))
        var expected = getHead(fields: [["accept", "*/*"], ["x-empty", ""], ["te", "trailers"], ["x-obs", "caf\u{e9}"]], authority: "a.example")
        expected.contentLength = nil
        XCTAssertEqual(events, [.request(1, expected, endStream: true)])
    }

    // §8.3: pseudo-header fields come first.
    func testPseudoHeaderAfterRegularFieldIsMalformed() {
        assertMalformed([(":method", "GET"), ("accept", "*/*"), (":scheme", "https"), (":path", "/")], .pseudoAfterRegular)
    }

    func testUnknownAndResponsePseudoHeadersAreMalformed() {
        assertMalformed(base + [(":foo", "bar")], .unknownPseudo)
        assertMalformed([(":status", "200")] + base, .unknownPseudo)
    }

    func testRepeatedPseudoHeadersAreMalformed() {
        assertMalformed(base + [(":path", "/again")], .duplicatePseudo)
        assertMalformed([(":method", "GET")] + base, .duplicatePseudo)
    }

    // §8.3.1: ":method", ":scheme", ":path" required (non-empty :path).
    func testMissingPseudoHeadersAreMalformed() {
        assertMalformed([(":scheme", "https"), (":path", "/")], .missingMethod)
        assertMalformed([(":method", "GET"), (":path", "/")], .missingSchemeOrPath)
        assertMalformed([(":method", "GET"), (":scheme", "https")], .missingSchemeOrPath)
        assertMalformed([(":method", "GET"), (":scheme", "https"), (":path", "")], .invalidPath)
    }

    func testPathForms() {
        assertMalformed([(":method", "GET"), (":scheme", "https"), (":path", "*")], .invalidPath)
        assertMalformed([(":method", "GET"), (":scheme", "https"), (":path", "http://x/")], .invalidPath)
        assertMalformed([(":method", "GET"), (":scheme", "https"), (":path", "/a b")], .invalidPath)
        let h = H2Harness()
        guard case .request(_, let head, _)? = h.feed(h.headers(1, [(":method", "OPTIONS"), (":scheme", "https"), (":path", "*"),
                                                                    (":authority", "a.example")])).first
        else { return XCTFail() }
        XCTAssertEqual(head.path, "*")
        XCTAssertEqual(head.authority, "a.example")
    }

    // §8.3.1: http and https have a mandatory authority: :authority or host.
    func testWebSchemesNeedAnAuthority() {
        assertMalformed([(":method", "GET"), (":scheme", "https"), (":path", "/")], .missingAuthority)
        assertMalformed([(":method", "GET"), (":scheme", "http"), (":path", "/")], .missingAuthority)
        let h = H2Harness()
        guard case .request(_, let head, _)? = h.feed(h.headers(1, [(":method", "GET"), (":scheme", "urn"), (":path", "/")])).first
        else { return XCTFail("a scheme without a mandatory authority needs none") }
        XCTAssertEqual(head.authority, "")
    }

    func testBadMethodSchemeAndAuthorityAreMalformed() {
        assertMalformed([(":method", "G T"), (":scheme", "https"), (":path", "/")], .invalidMethod)
        assertMalformed([(":method", "GET"), (":scheme", "1http"), (":path", "/")], .invalidScheme)
        assertMalformed([(":method", "GET"), (":scheme", "https"), (":path", "/"), (":authority", "user@host")], .invalidAuthority)
        assertMalformed([(":method", "GET"), (":scheme", "https"), (":path", "/"), (":authority", "host:99999")], .invalidAuthority)
        assertMalformed([(":method", "GET"), (":scheme", "https"), (":path", "/"), (":authority", "")], .invalidAuthority)
    }

    // §8.2.1: upper case in names; invalid characters in names and values.
    func testFieldNameRules() {
        assertMalformed(base + [("Accept", "x")], .invalidFieldName)
        assertMalformed(base + [("a b", "x")], .invalidFieldName)
        assertMalformed(base + [("a:b", "x")], .invalidFieldName)
        assertMalformed(base + [("", "x")], .invalidFieldName)
        assertMalformed(base + [("a\u{7f}", "x")], .invalidFieldName)
    }

    func testFieldValueRules() {
        for bad in ["a\rb", "a\nb", "a\u{0}b", " lead", "trail\t", "a\u{1}b", "a\u{7f}"] {
            assertMalformed(base + [("x", bad)], .invalidFieldValue)
        }
    }

    // §8.2.2 connection-specific fields; te only "trailers".
    func testConnectionSpecificFieldsAreMalformed() {
        for name in ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"] {
            assertMalformed(base + [(name, "x")], .connectionSpecificField)
        }
        assertMalformed(base + [("te", "gzip")], .teNotTrailers)
        assertMalformed(base + [("te", "trailers, deflate")], .teNotTrailers)
    }

    // RFC 9110 §10.1.1: the expectation is read out; its token is case-insensitive.
    func testExpectContinueIsReadOut() {
        let h = H2Harness()
        for (sid, value, expected) in [(1, "100-continue", true), (3, "100-Continue", true), (5, "something-else", false)] {
            guard case .request(_, let head, _)? = h.feed(h.headers(UInt32(sid), base + [("expect", value)], endStream: false)).first
            else { return XCTFail() }
            XCTAssertEqual(head.expectsContinue, expected, value)
        }
        guard case .request(_, let plain, _)? = h.feed(h.headers(7, base, endStream: false)).first else { return XCTFail() }
        XCTAssertFalse(plain.expectsContinue)
    }

    // RFC 9110 §8.6: content-length = 1*DIGIT.
    func testContentLengthIsOneDecimal() {
        let h = H2Harness()
        guard case .request(_, let head, _)? = h.feed(h.headers(1, base + [("content-length", "5")], endStream: false)).first
        else { return XCTFail() }
        XCTAssertEqual(head.contentLength, 5)
        guard case .request(_, let zeros, _)? = h.feed(h.headers(3, base + [("content-length", "007")], endStream: false)).first
        else { return XCTFail() }
        XCTAssertEqual(zeros.contentLength, 7)
    }

    func testContentLengthNotADecimalIsMalformed() {
        assertMalformed(base + [("content-length", "abc")], .invalidContentLength, endStream: false)
        assertMalformed(base + [("content-length", "-1")], .invalidContentLength, endStream: false)
        assertMalformed(base + [("content-length", "+1")], .invalidContentLength, endStream: false)
        assertMalformed(base + [("content-length", "1 2")], .invalidContentLength, endStream: false)
        assertMalformed(base + [("content-length", "")], .invalidContentLength, endStream: false)
        // Surrounding whitespace is no part of any HTTP/2 field value (§8.2.1).
        assertMalformed(base + [("content-length", " 5")], .invalidFieldValue, endStream: false)
    }

    // §8.6 lets a recipient reject "42, 42" or replace it by 42; we reject
    // (RFC 9113 §8.1.1: a malformed request is a stream error PROTOCOL_ERROR).
    func testContentLengthListIsMalformedEvenOfIdenticalValues() {
        assertMalformed(base + [("content-length", "5, 5")], .contentLengthList, endStream: false)
        assertMalformed(base + [("content-length", "5,5")], .contentLengthList, endStream: false)
        assertMalformed(base + [("content-length", "1, 2")], .contentLengthList, endStream: false)
        assertMalformed(base + [("content-length", "5,")], .contentLengthList, endStream: false)
    }

    func testRepeatedContentLengthFieldIsMalformedEvenWithTheSameValue() {
        assertMalformed(base + [("content-length", "5"), ("content-length", "5")], .repeatedContentLength, endStream: false)
        assertMalformed(base + [("content-length", "1"), ("content-length", "2")], .repeatedContentLength, endStream: false)
        assertMalformed(base + [("content-length", "0"), ("accept", "*/*"), ("content-length", "0")], .repeatedContentLength, endStream: false)
    }

    func testNonZeroContentLengthWithEndStreamIsMalformed() {
        let h = H2Harness()
        _ = h.drain()
        XCTAssertEqual(h.feed(h.headers(1, base + [("content-length", "3")], endStream: true)), [])
        XCTAssertEqual(h.drain(), [.rst(1, .protocolError)])
        XCTAssertEqual(h.feed(h.headers(3, base + [("content-length", "0")], endStream: true)).count, 1)
    }

    // §8.3.1: host and :authority must agree; host stands in for :authority.
    func testHostAndAuthority() {
        assertMalformed(base + [("host", "b.example")], .hostMismatch)
        assertMalformed(base + [("host", "a.example"), ("host", "a.example")], .duplicateHost)
        let h = H2Harness()
        guard case .request(_, let head, _)? = h.feed(h.headers(1, base + [("host", "A.Example")])).first else { return XCTFail() }
        XCTAssertEqual(head.authority, "a.example")
        guard case .request(_, let head2, _)? = h.feed(h.headers(3, [(":method", "GET"), (":scheme", "http"), (":path", "/"), ("host", "h.example:8080")])).first
        else { return XCTFail() }
        XCTAssertEqual(head2.authority, "h.example:8080")
        XCTAssertEqual(head2.fields, [["host", "h.example:8080"]])
    }

    // §8.2.3: cookie crumbs are joined with "; " into one field, in place.
    func testCookieCrumbsAreJoined() {
        let h = H2Harness()
        let events = h.feed(h.headers(1, base + [("cookie", "a=1"), ("accept", "*/*"), ("cookie", "b=2"), ("cookie", "c=3")]))
        XCTAssertEqual(events, [.request(1, getHead(fields: [["cookie", "a=1; b=2; c=3"], ["accept", "*/*"]], authority: "a.example"), endStream: true)])
    }

    // §8.5 CONNECT: :authority (host:port), no :scheme / :path.
    func testConnect() {
        let h = H2Harness()
        guard case .request(_, let head, _)? = h.feed(h.headers(1, [(":method", "CONNECT"), (":authority", "db.example:5432")], endStream: false)).first
        else { return XCTFail() }
        XCTAssertEqual(head.method, "CONNECT")
        XCTAssertEqual(head.scheme, "")
        XCTAssertEqual(head.path, "")
        assertMalformed([(":method", "CONNECT"), (":authority", "a:1"), (":path", "/")], .connectWithSchemeOrPath)
        assertMalformed([(":method", "CONNECT"), (":authority", "a:1"), (":scheme", "https")], .connectWithSchemeOrPath)
        assertMalformed([(":method", "CONNECT")], .connectWithoutAuthority)
        assertMalformed([(":method", "CONNECT"), (":authority", "a")], .invalidAuthority)
    }

    // RFC 8441 §4: :protocol only with SETTINGS_ENABLE_CONNECT_PROTOCOL, on CONNECT.
    func testExtendedConnect() {
        let ws: [(String, String)] = [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"),
                                      (":path", "/chat"), (":authority", "a.example")]
        assertMalformed(ws, .protocolNotEnabled, endStream: false)
        var l = H2Limits()
        l.enableConnectProtocol = true
        let h = H2Harness(limits: l)
        guard case .request(_, let head, _)? = h.feed(h.headers(1, ws, endStream: false)).first else { return XCTFail() }
        XCTAssertEqual(head.protocolName, "websocket")
        XCTAssertEqual(head.path, "/chat")
        assertMalformed([(":method", "GET"), (":protocol", "websocket"), (":scheme", "https"), (":path", "/")],
                        .protocolWithoutConnect, limits: l)
        assertMalformed([(":method", "CONNECT"), (":protocol", "websocket"), (":authority", "a")],
                        .missingSchemeOrPath, limits: l)
        assertMalformed([(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":path", "/")],
                        .connectWithoutAuthority, limits: l)
    }

    // §8.1: trailers end the body, carry no pseudo-headers, need END_STREAM.
    func testTrailers() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, base, endStream: false) + h.data(1, [1]))
        XCTAssertEqual(h.feed(h.headers(1, [("x-checksum", "abc")], endStream: true)),
                       [.trailers(1, { var t = Head(H2RequestHead()); t.fields = [["x-checksum", "abc"]]; return t }())])
        XCTAssertEqual(h.feed(h.data(1, [1])), [.reset(1, .streamClosed)])  // half-closed (remote) now
    }

    func testTrailersWithPseudoHeaderOrWithoutEndStreamAreMalformed() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, base, endStream: false) + h.headers(3, base, endStream: false))
        _ = h.drain()
        XCTAssertEqual(h.feed(h.headers(1, [(":path", "/x")], endStream: true)), [.reset(1, .protocolError)])
        XCTAssertEqual(h.feed(h.headers(3, [("x", "y")], endStream: false)), [.reset(3, .protocolError)])
        XCTAssertEqual(h.drain(), [.rst(1, .protocolError), .rst(3, .protocolError)])
    }

    // §8.1.1: content-length must equal the sum of DATA payloads.
    func testContentLengthMismatch() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, base + [("content-length", "3")], endStream: false))
        XCTAssertEqual(h.feed(h.data(1, [1, 2])).count, 1)
        XCTAssertEqual(h.feed(h.data(1, [3, 4])), [.reset(1, .protocolError)])  // too much
        _ = h.feed(h.headers(3, base + [("content-length", "3")], endStream: false))
        XCTAssertEqual(h.feed(h.data(3, [1, 2], endStream: true)), [.reset(3, .protocolError)])  // too little
        _ = h.feed(h.headers(5, base + [("content-length", "3")], endStream: false))
        _ = h.feed(h.data(5, [1, 2]))
        XCTAssertEqual(h.feed(h.headers(5, [("x", "y")])), [.reset(5, .protocolError)])  // trailers end it short
        _ = h.feed(h.headers(7, base + [("content-length", "2")], endStream: false))
        XCTAssertEqual(h.feed(h.data(7, [1], padLength: 5) + h.data(7, [2], endStream: true)),
                       [.data(7, [1], flowControlled: 7, endStream: false), .data(7, [2], flowControlled: 1, endStream: true)])
    }

    // SETTINGS_MAX_HEADER_LIST_SIZE: answered 431 here; then RST(NO_ERROR)
    // when the request was still open.
    func testHeaderListOverTheLimitIsAnswered431() {
        var l = H2Limits()
        l.maxHeaderListSize = 200
        let h = H2Harness(limits: l)
        _ = h.drain()
        let big = base + [("x-big", String(repeating: "b", count: 300))]
        XCTAssertEqual(h.feed(h.headers(1, big, endStream: true)), [])
        XCTAssertEqual(h.drain(), [.headers(1, [[":status", "431"]], endStream: true)])
        XCTAssertEqual(h.feed(h.headers(3, big, endStream: false)), [])
        XCTAssertEqual(h.drain(), [.headers(3, [[":status", "431"]], endStream: true), .rst(3, .noError)])
        XCTAssertEqual(h.feed(h.data(3, [1], endStream: true)), [])  // ignored
        XCTAssertEqual(h.feed(h.headers(5, base)).count, 1)
        XCTAssertFalse(h.conn.isClosing)
    }

    func testTrailersOverTheLimitResetTheStream() {
        var l = H2Limits()
        l.maxHeaderListSize = 200
        let h = H2Harness(limits: l)
        _ = h.feed(h.headers(1, base, endStream: false))
        XCTAssertEqual(h.feed(h.headers(1, [("x-big", String(repeating: "b", count: 300))])), [.reset(1, .protocolError)])
    }
}
