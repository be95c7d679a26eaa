import XCTest

@testable import Supervision

/// The supervisor's /metrics HTTP/1.x answers (MetricsEndpoint), without
/// sockets: a complete head in, the whole response out.
final class MetricsEndpointTests: XCTestCase {
    private func respond(_ head: String) -> String {
        String(decoding: MetricsEndpoint.respond(to: ArraySlice(head.utf8), render: { "body\n" }), as: UTF8.self)
    }

    func testGetMetricsIsTheExposition() {
        XCTAssertEqual(respond("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
                       "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                       + "Content-Length: 5\r\nConnection: close\r\n\r\nbody\n")
        XCTAssertTrue(respond("GET /metrics?name[]=x HTTP/1.0\r\n\r\n").hasPrefix("HTTP/1.1 200 OK\r\n"))
    }

    func testHeadHasTheLengthButNoBody() {
        XCTAssertTrue(respond("HEAD /metrics HTTP/1.1\r\n\r\n").hasSuffix("Content-Length: 5\r\nConnection: close\r\n\r\n"))
    }

    func testOtherPathsAndMethods() {
        XCTAssertTrue(respond("GET / HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 404 Not Found\r\n"))
        XCTAssertTrue(respond("GET /metricsx HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 404 "))
        let post = respond("POST /metrics HTTP/1.1\r\n\r\n")
        XCTAssertTrue(post.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n"))
        XCTAssertTrue(post.contains("\r\nAllow: GET, HEAD\r\n"))
    }

    func testUnreadableRequestLines() {
        for head in ["GET /metrics\r\n\r\n", "GET  /metrics HTTP/1.1\r\n\r\n", "GET /metrics HTTP/2\r\n\r\n", "\r\n\r\n"] {
            XCTAssertTrue(respond(head).hasPrefix("HTTP/1.1 400 Bad Request\r\n"), head)
        }
    }

    /// The head ends at its empty line, CRLF or bare LF (RFC 9112 §2.2).
    func testHeadEnd() {
        XCTAssertNil(MetricsEndpoint.headEnd(Array("GET / HTTP/1.1\r\nHost: x\r\n".utf8)))
        XCTAssertEqual(MetricsEndpoint.headEnd(Array("GET / HTTP/1.1\r\n\r\nrest".utf8)), 18)
        XCTAssertEqual(MetricsEndpoint.headEnd(Array("GET / HTTP/1.1\n\n".utf8)), 16)
    }

    func testResponsesCarryTheirBodyLength() {
        let r = String(decoding: MetricsEndpoint.response(404, "Not Found"), as: UTF8.self)
        XCTAssertTrue(r.hasSuffix("Content-Length: 14\r\nConnection: close\r\n\r\n404 Not Found\n"))
    }
}
