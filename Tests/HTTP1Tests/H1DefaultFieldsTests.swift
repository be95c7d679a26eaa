import XCTest
import Core

@testable import HTTP1

/// `--header`/`--server-header` lines in the HTTP/1.1 writers: after the
/// application's fields and before the server's own, in both the response
/// head and the server's error responses; `--no-date-header` leaves the
/// date out of the latter.
final class H1DefaultFieldsTests: XCTestCase {
    private static let date: StaticString = "Sun, 06 Nov 1994 08:49:37 GMT"
    private let defaults = DefaultResponseFields([(Array("x-a".utf8), Array("1".utf8)),
                                                  (Array("server".utf8), Array("p".utf8))])

    func testDefaultsFollowTheApplicationsFieldsAndPrecedeTheDate() {
        let framing = H1ResponseFraming(version: .http11, isHead: false, requestKeepAlive: true, status: 200,
                                        contentLength: 2, trailers: false, applicationClose: false, stopping: false)
        let text = withFields([StaticField("content-type", "text/plain")]) { fields in
            let h = H1ResponseHead(status: 200, reason: staticBytes("OK"), fields: fields, framing: framing,
                                   date: staticBytes(H1DefaultFieldsTests.date), defaults: defaults.lines(except: 0b10))
            return writtenText(length: h.length) { h.write(into: $0) }
        }
        XCTAssertEqual(text, "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-a: 1\r\n"
                       + "date: Sun, 06 Nov 1994 08:49:37 GMT\r\ncontent-length: 2\r\n\r\n")
    }

    func testErrorResponseCarriesTheDefaults() {
        let r = H1ErrorResponse(status: 400, extraField: nil, date: staticBytes(H1DefaultFieldsTests.date),
                                defaults: defaults.lines(except: 0))
        XCTAssertEqual(writtenText(length: r.length) { r.write(into: $0) },
                       "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 12\r\n"
                       + "connection: close\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\nx-a: 1\r\nserver: p\r\n\r\nBad Request\n")
    }

    /// `--no-date-header`: no date line at all.
    func testErrorResponseWithoutADate() {
        let r = H1ErrorResponse(status: 405, extraField: "allow: GET, HEAD", date: nil)
        XCTAssertEqual(writtenText(length: r.length) { r.write(into: $0) },
                       "HTTP/1.1 405 Method Not Allowed\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 19\r\n"
                       + "connection: close\r\nallow: GET, HEAD\r\n\r\nMethod Not Allowed\n")
    }
}
