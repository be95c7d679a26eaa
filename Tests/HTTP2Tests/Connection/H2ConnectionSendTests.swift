// Sending responses: heads, 1xx, trailers, splitting, field hygiene
// (RFC 9113 §6.2, §6.10, §8.1, §8.2.2).

import XCTest
import Core
@testable import HTTP2

final class H2ConnectionSendTests: XCTestCase {
    func testWholeRequestAndResponseWithTrailersBothWays() {
        let h = H2Harness()
        _ = h.drain()
        var events = h.feed(h.headers(1, h.post(extra: [("content-type", "application/json")]), endStream: false))
        events += h.feed(h.data(1, bytes("{\"a\":")) + h.data(1, bytes("1}")))
        events += h.feed(h.headers(1, [("x-sum", "42")], endStream: true))
        var post = getHead("/upload", fields: [["content-type", "application/json"]])
        post.method = "POST"
        var trailers = Head(H2RequestHead())
        trailers.fields = [["x-sum", "42"]]
        XCTAssertEqual(events, [.request(1, post, endStream: false),
                                .data(1, bytes("{\"a\":"), flowControlled: 5, endStream: false),
                                .data(1, bytes("1}"), flowControlled: 2, endStream: false),
                                .trailers(1, trailers)])
        h.conn.consumed(streamID: 1, 7)
        h.respond(1, status: 200, [("content-type", "text/plain")])
        XCTAssertEqual(h.send(1, bytes("ok")), 2)
        h.trailers(1, [("grpc-status", "0")])
        XCTAssertEqual(h.conn.openStreamCount, 0)
        XCTAssertEqual(h.drain(), [
            .headers(1, [[":status", "200"], ["content-type", "text/plain"]], endStream: false),
            .data(1, bytes("ok"), endStream: false),
            .headers(1, [["grpc-status", "0"]], endStream: true),
        ])
    }

    // §8.1: "one or more ... 1xx ... followed by the final response".
    func testInformationalResponsesBeforeTheFinalOne() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.post(extra: [("expect", "100-continue")]), endStream: false))
        _ = h.drain()
        h.respond(1, status: 100, endStream: true)  // END_STREAM is never set on a 1xx
        h.respond(1, status: 103, [("link", "</a.css>; rel=preload")])
        h.respond(1, status: 201, endStream: true)
        XCTAssertEqual(h.drain(), [
            .headers(1, [[":status", "100"]], endStream: false),
            .headers(1, [[":status", "103"], ["link", "</a.css>; rel=preload"]], endStream: false),
            .headers(1, [[":status", "201"]], endStream: true),
        ])
    }

    // §8.2.2: connection-specific fields must not be sent; names lower-cased.
    func testConnectionSpecificFieldsAreDroppedAndNamesLowerCased() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        _ = h.drain()
        h.respond(1, status: 200, [("Connection", "close"), ("Keep-Alive", "5"), ("Transfer-Encoding", "chunked"),
                                   ("Upgrade", "h2c"), ("proxy-connection", "x"), ("X-Custom", "V"),
                                   ("Set-Cookie", "s=1")], endStream: true)
        XCTAssertEqual(h.drain(), [.headers(1, [[":status", "200"], ["x-custom", "V"], ["set-cookie", "s=1"]], endStream: true)])
    }

    // §8.2.1: "A field value MUST NOT start or end with an ASCII whitespace
    // character": the value goes out without it (Django's WSGI Set-Cookie
    // starts with a space), in interim heads, final heads and trailers.
    func testFieldValuesGoOutWithoutSurroundingWhitespace() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        _ = h.drain()
        h.respond(1, status: 103, [("link", " </a.css>; rel=preload\t")])
        h.respond(1, status: 200, [("set-cookie", " flavour=oatmeal; Path=/"), ("x-tabs", "\t \tin  side \t"),
                                   ("x-blank", " \t "), ("x-plain", "v")])
        h.trailers(1, [("x-checksum", "42 ")])
        XCTAssertEqual(h.drain(), [
            .headers(1, [[":status", "103"], ["link", "</a.css>; rel=preload"]], endStream: false),
            .headers(1, [[":status", "200"], ["set-cookie", "flavour=oatmeal; Path=/"], ["x-tabs", "in  side"],
                         ["x-blank", ""], ["x-plain", "v"]], endStream: false),
            .headers(1, [["x-checksum", "42"]], endStream: true),
        ])
    }

    func testLargeHeadIsSplitIntoContinuationAtThePeersMaxFrameSize() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        _ = h.drain()
        let big = String(repeating: "v", count: 40_000)
        h.respond(1, status: 200, [("x-big", big)], endStream: true)
        XCTAssertEqual(h.drain(), [.headers(1, [[":status", "200"], ["x-big", big]], endStream: true)])
        XCTAssertEqual(h.lastBlockFrames, 3)
        let types = h.writtenHeaders.suffix(3).map(\.type)
        XCTAssertEqual(types, [.headers, .continuation, .continuation])
        XCTAssertEqual(h.writtenHeaders.suffix(3).map(\.length).max(), 16384)
    }

    func testResponseHeadersUseThePeersHeaderTableSize() {
        let h = H2Harness()
        _ = h.feed(h.settings([Setting(.headerTableSize, 0)]))
        h.clientDecoder.setMaxTableSizeSetting(0)
        _ = h.feed(h.headers(1, h.get()))
        h.respond(1, status: 200, [("x-a", "1")], endStream: true)
        // The decoder insists on the size update at the start of the block.
        XCTAssertEqual(h.drain().last, .headers(1, [[":status", "200"], ["x-a", "1"]], endStream: true))
        XCTAssertEqual(h.clientDecoder.table.maxSize, 0)
    }

    func testHPACKContextCarriesAcrossResponses() {
        let h = H2Harness()
        for id: UInt32 in [1, 3] {
            _ = h.feed(h.headers(id, h.get()))
            h.respond(id, status: 200, [("server", "peregrine"), ("content-type", "text/html")], endStream: true)
        }
        XCTAssertEqual(h.drain().filter { if case .headers = $0 { return true } else { return false } }, [
            .headers(1, [[":status", "200"], ["server", "peregrine"], ["content-type", "text/html"]], endStream: true),
            .headers(3, [[":status", "200"], ["server", "peregrine"], ["content-type", "text/html"]], endStream: true),
        ])
        XCTAssertGreaterThan(h.clientDecoder.table.count, 0)
    }

    func testSendsOnUnknownStreamsAreDiscarded() {
        let h = H2Harness()
        _ = h.drain()
        h.respond(9, status: 200, [("x", "y")])
        XCTAssertEqual(h.send(9, [1, 2, 3], endStream: true), 3)
        h.trailers(9, [("a", "b")])
        h.conn.resetStream(streamID: 9, code: .cancel)
        h.conn.consumed(streamID: 9, 10)
        XCTAssertEqual(h.conn.sendWindow(streamID: 9), 0)
        XCTAssertEqual(h.drain(), [])
        // And HPACK did not move: the next real response decodes.
        _ = h.feed(h.headers(1, h.get()))
        h.respond(1, status: 200, [("x", "y")], endStream: true)
        XCTAssertEqual(h.drain(), [.headers(1, [[":status", "200"], ["x", "y"]], endStream: true)])
    }

    func testWindowOpenedOnlyForStreamsThatCanSend() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        XCTAssertEqual(h.feed(h.windowUpdate(1, 5)), [])  // no head yet
        h.respond(1, status: 200)
        XCTAssertEqual(h.feed(h.windowUpdate(1, 5)), [.window(1)])
        _ = h.send(1, [], endStream: true)
        XCTAssertEqual(h.feed(h.windowUpdate(1, 5)), [])  // closed
    }
}
