import XCTest
import Core

@testable import HTTP1

final class H1ResponseHeadTests: XCTestCase {
    private static let date: StaticString = "Sun, 06 Nov 1994 08:49:37 GMT"

    /// The head written for `fields` and the framing these inputs decide.
    private func head(_ version: H1Version = .http11, isHead: Bool = false, requestKeepAlive: Bool = true,
                      status: Int = 200, reason: StaticString = "", fields: [StaticField] = [],
                      length: Int64? = nil, trailers: Bool = false, applicationClose: Bool = false,
                      altSvc: StaticString? = nil, file: StaticString = #filePath, line: UInt = #line) -> String {
        let framing = H1ResponseFraming(version: version, isHead: isHead, requestKeepAlive: requestKeepAlive,
                                        status: status, contentLength: length, trailers: trailers,
                                        applicationClose: applicationClose, stopping: false)
        return withFields(fields) { fields in
            // As the exchange decides it (HTTPExchange.ResponsePlan.addsDate).
            let addsDate = !fields.contains { HTTPSemantics.isDateField($0.name) }
            let h = H1ResponseHead(status: status, reason: staticBytes(reason), fields: fields, framing: framing,
                                   date: addsDate ? staticBytes(H1ResponseHeadTests.date) : nil,
                                   altSvc: altSvc.map(staticBytes))
            return writtenText(length: h.length, file: file, line: line) { h.write(into: $0) }
        }
    }

    /// RFC 9114 §3.1.1: HTTP/3 advertised after the date, before the framing.
    func testAltSvcFollowsTheDate() {
        XCTAssertEqual(head(length: 2, altSvc: "h3=\":443\"; ma=86400"),
                       "HTTP/1.1 200 OK\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\nalt-svc: h3=\":443\"; ma=86400\r\n"
                       + "content-length: 2\r\n\r\n")
        XCTAssertEqual(head(fields: [StaticField("date", "x")], trailers: false, applicationClose: true,
                            altSvc: "h3=\":8443\"; ma=86400"),
                       "HTTP/1.1 200 OK\r\ndate: x\r\nalt-svc: h3=\":8443\"; ma=86400\r\n"
                       + "transfer-encoding: chunked\r\nconnection: close\r\n\r\n")
    }

    func testContentLengthHeadWithTheApplicationsReasonAndFields() {
        XCTAssertEqual(head(reason: "OK", fields: [StaticField("content-type", "text/plain"), StaticField("x-a", "1")], length: 5),
                       "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-a: 1\r\n"
                       + "date: Sun, 06 Nov 1994 08:49:37 GMT\r\ncontent-length: 5\r\n\r\n")
    }

    /// RFC 9112 §4: an empty reason is the application's "no reason" (ASGI);
    /// the registry's phrase is written instead, and an unregistered code
    /// keeps the SP with nothing after it.
    func testEmptyReasonUsesTheRegistryPhrase() {
        XCTAssertEqual(head(status: 404, length: 0),
                       "HTTP/1.1 404 Not Found\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\ncontent-length: 0\r\n\r\n")
        XCTAssertEqual(head(status: 599, length: 0),
                       "HTTP/1.1 599 \r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\ncontent-length: 0\r\n\r\n")
        XCTAssertEqual(head(status: 200, reason: "Fine", length: 0),
                       "HTTP/1.1 200 Fine\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\ncontent-length: 0\r\n\r\n")
    }

    /// RFC 9110 §6.6.1: the server's date only when the application sent
    /// none (names compare case-insensitively, RFC 9110 §5.1).
    func testApplicationsDateReplacesTheServers() {
        XCTAssertEqual(head(fields: [StaticField("DaTe", "yesterday")], length: 1),
                       "HTTP/1.1 200 OK\r\nDaTe: yesterday\r\ncontent-length: 1\r\n\r\n")
        // A name that only starts like "date" is not one.
        XCTAssertEqual(head(fields: [StaticField("dated", "x"), StaticField("dat", "y")], length: 1),
                       "HTTP/1.1 200 OK\r\ndated: x\r\ndat: y\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\ncontent-length: 1\r\n\r\n")
    }

    func testUnknownLengthToHTTP11IsChunked() {
        XCTAssertEqual(head(),
                       "HTTP/1.1 200 OK\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\ntransfer-encoding: chunked\r\n\r\n")
        XCTAssertEqual(head(length: 5, trailers: true),
                       "HTTP/1.1 200 OK\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\ntransfer-encoding: chunked\r\n\r\n")
    }

    /// RFC 9112 §9.3: a 1.0 client keeps the connection only if told so.
    func testHTTP10KeepAlive() {
        XCTAssertEqual(head(.http10, length: 2),
                       "HTTP/1.1 200 OK\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\n")
    }

    /// RFC 9112 §6.3 rule 8: no length and no chunking for a 1.0 client —
    /// the body ends when the connection closes.
    func testHTTP10UnknownLengthCloses() {
        XCTAssertEqual(head(.http10),
                       "HTTP/1.1 200 OK\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\nconnection: close\r\n\r\n")
        XCTAssertEqual(head(.http10, requestKeepAlive: false, length: 3),
                       "HTTP/1.1 200 OK\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\ncontent-length: 3\r\nconnection: close\r\n\r\n")
    }

    func testApplicationCloseSaysClose() {
        XCTAssertEqual(head(length: 2, applicationClose: true),
                       "HTTP/1.1 200 OK\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\ncontent-length: 2\r\nconnection: close\r\n\r\n")
    }

    /// RFC 9110 §8.6, §9.3.2: HEAD keeps the length, 204 and 304 drop it,
    /// and neither gets chunked framing.
    func testBodylessResponses() {
        XCTAssertEqual(head(isHead: true, length: 12),
                       "HTTP/1.1 200 OK\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\ncontent-length: 12\r\n\r\n")
        XCTAssertEqual(head(isHead: true),
                       "HTTP/1.1 200 OK\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n")
        XCTAssertEqual(head(status: 204, length: 12),
                       "HTTP/1.1 204 No Content\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n")
        XCTAssertEqual(head(status: 304),
                       "HTTP/1.1 304 Not Modified\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n")
    }

    func testLargeLengthIsWrittenInFull() {
        XCTAssertEqual(head(length: Int64.max),
                       "HTTP/1.1 200 OK\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\ncontent-length: 9223372036854775807\r\n\r\n")
    }
}
