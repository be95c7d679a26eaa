import XCTest

@testable import HTTP1

final class H1ErrorResponseTests: XCTestCase {
    private static let date: StaticString = "Sun, 06 Nov 1994 08:49:37 GMT"

    private func written(_ status: Int, _ extraField: StaticString? = nil) -> String {
        let r = H1ErrorResponse(status: status, extraField: extraField, date: staticBytes(H1ErrorResponseTests.date))
        return writtenText(length: r.length) { r.write(into: $0) }
    }

    /// The body is the reason phrase and a newline, its length declared, and
    /// the connection closes after it (RFC 9112 §9.6).
    func testErrorResponseIsAClosingTextResponse() {
        XCTAssertEqual(written(413),
                       "HTTP/1.1 413 Content Too Large\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 18\r\n"
                       + "connection: close\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\nContent Too Large\n")
        XCTAssertEqual(written(400),
                       "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 12\r\n"
                       + "connection: close\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\nBad Request\n")
    }

    func testExtraFieldFollowsTheDate() {
        XCTAssertEqual(written(405, "allow: GET, HEAD"),
                       "HTTP/1.1 405 Method Not Allowed\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 19\r\n"
                       + "connection: close\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\nallow: GET, HEAD\r\n\r\nMethod Not Allowed\n")
    }

    /// An unregistered code has an empty reason: the body is just the newline.
    func testUnregisteredCodeHasANewlineBody() {
        XCTAssertEqual(written(599),
                       "HTTP/1.1 599 \r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 1\r\n"
                       + "connection: close\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n\n")
    }
}
