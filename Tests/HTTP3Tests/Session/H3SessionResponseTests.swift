// Responses and shutdown through the session (RFC 9114 §4.1, §4.2, §4.2.2,
// §5.2, §7.2.1, §7.2.2, §7.2.6): the bytes it gives the glue, read back with
// the module's own readers; GOAWAY and the end of the connection.

import XCTest
import Core
import HTTPFields
@testable import HTTP3

final class H3SessionResponseTests: XCTestCase {
    let getHead = [":method: GET", ":scheme: https", ":authority: a.example", ":path: /"]

    private func head(_ s: H3Session, _ id: UInt64, _ status: Int, _ fields: [(String, String)] = [],
                      into out: inout [UInt8]) -> Bool {
        s.beginHeaders(streamID: id, status: status)
        for (n, v) in fields {
            Array(n.utf8).withUnsafeBytes { nb in Array(v.utf8).withUnsafeBytes { vb in s.addField(name: nb, value: vb) } }
        }
        return s.endHeaders(into: &out)
    }

    private func trailers(_ s: H3Session, _ id: UInt64, _ fields: [(String, String)], into out: inout [UInt8]) -> Bool {
        s.beginTrailers(streamID: id)
        for (n, v) in fields {
            Array(n.utf8).withUnsafeBytes { nb in Array(v.utf8).withUnsafeBytes { vb in s.addField(name: nb, value: vb) } }
        }
        return s.endHeaders(into: &out)
    }

    private func body(_ s: H3Session, _ id: UInt64, _ text: String, into out: inout [UInt8]) {
        XCTAssertTrue(s.writeDataHeader(streamID: id, length: text.utf8.count, into: &out))
        out += Array(text.utf8)
    }

    // §4.1: interim responses, one final head, content in DATA frames,
    // trailers; names lower-cased, connection-specific fields dropped (§4.2),
    // parsed back by H3FrameReader and a QPACK decoder.
    func testResponseFramesReadBack() throws {
        let g = Glue()
        g.deliver(0, Wire.headers(Wire.get), fin: true)
        _ = g.take()
        let s = g.session
        var out: [UInt8] = []
        XCTAssertTrue(head(s, 0, 103, [("Link", "</s.css>; rel=preload")], into: &out))
        XCTAssertTrue(head(s, 0, 200, [("Content-Type", "text/plain"), ("Connection", "close"), ("Transfer-Encoding", "chunked"),
                                        ("Keep-Alive", "5"), ("Upgrade", "h2c"), ("Proxy-Connection", "x"), ("x-long", String(repeating: "v", count: 300))],
                           into: &out))
        body(s, 0, "hello ", into: &out)
        body(s, 0, "world", into: &out)
        XCTAssertTrue(trailers(s, 0, [("X-Checksum", "42")], into: &out))
        s.endResponse(streamID: 0)
        XCTAssertEqual(try Parse.requestStream(out), [
            .headers([[":status", "103"], ["link", "</s.css>; rel=preload"]]),
            .headers([[":status", "200"], ["content-type", "text/plain"], ["x-long", String(repeating: "v", count: 300)]]),
            .data("hello "), .data("world"),
            .headers([["x-checksum", "42"]]),
        ])
        XCTAssertEqual(s.openRequestCount, 0, "request read to its FIN and response ended: the stream is gone")
        XCTAssertFalse(s.canSend(streamID: 0))
    }

    /// RFC 9204 §4.5.2 / §4.5.4: the static table is used where it can be
    /// (":status 200" is one byte), and set-cookie carries the 'N' bit.
    func testResponseHeadEncoding() throws {
        let g = Glue()
        g.deliver(0, Wire.headers(Wire.get), fin: true)
        var out: [UInt8] = []
        XCTAssertTrue(head(g.session, 0, 200, [("set-cookie", "id=1")], into: &out))
        // HEADERS, length, RIC 0, Base 0, :status 200 = static 25 (0xc0|25),
        // set-cookie = static name 14 with N (0x50|0x20|14), then the value.
        XCTAssertEqual(Array(out.prefix(6)), [0x01, UInt8(out.count - 2), 0x00, 0x00, 0xd9, 0x7e])
        let frames = try Parse.requestStream(out)
        XCTAssertEqual(frames, [.headers([[":status", "200"], ["set-cookie", "id=1"]])])
    }

    /// RFC 9110 §5.5: a field value neither starts nor ends with whitespace,
    /// and RFC 9114 §4.1.2 makes a response carrying one malformed; the
    /// session sends the value without it (Django's WSGI Set-Cookie starts
    /// with a space), in heads, interim heads and trailers alike. Whitespace
    /// inside the value stays; a value of only whitespace becomes empty.
    func testFieldValuesGoOutWithoutSurroundingWhitespace() throws {
        let g = Glue()
        g.deliver(0, Wire.headers(Wire.get), fin: true)
        _ = g.take()
        let s = g.session
        var out: [UInt8] = []
        XCTAssertTrue(head(s, 0, 103, [("link", " </a.css>; rel=preload\t")], into: &out))
        XCTAssertTrue(head(s, 0, 200, [("set-cookie", " flavour=oatmeal; Path=/"), ("x-tabs", "\t \tin  side \t"),
                                        ("x-blank", " \t "), ("x-plain", "v")], into: &out))
        XCTAssertTrue(trailers(s, 0, [("x-checksum", "42 ")], into: &out))
        s.endResponse(streamID: 0)
        XCTAssertEqual(try Parse.requestStream(out), [
            .headers([[":status", "103"], ["link", "</a.css>; rel=preload"]]),
            .headers([[":status", "200"], ["set-cookie", "flavour=oatmeal; Path=/"], ["x-tabs", "in  side"],
                      ["x-blank", ""], ["x-plain", "v"]]),
            .headers([["x-checksum", "42"]]),
        ])
    }

    // §4.2.2: "An implementation that has received this parameter SHOULD NOT
    // send an HTTP message header that exceeds the indicated size": endHeaders
    // refuses and leaves the response where it was, so a smaller head can go.
    func testPeerMaxFieldSectionSize() throws {
        let g = Glue()
        g.startClient(settings: H3Settings(maxFieldSectionSize: 100))
        g.deliver(0, Wire.headers(Wire.get), fin: true)
        _ = g.take()
        var out: [UInt8] = []
        // :status 200 is 7 + 3 + 32 = 42; x-a: 20 bytes + 3 + 32 = 55 → 97.
        XCTAssertTrue(head(g.session, 0, 103, [("x-a", String(repeating: "a", count: 20))], into: &out))
        XCTAssertFalse(head(g.session, 0, 200, [("x-a", String(repeating: "a", count: 26))], into: &out), "103 bytes")
        XCTAssertEqual(try Parse.requestStream(out).count, 1, "nothing appended for the refused head")
        XCTAssertTrue(head(g.session, 0, 500, into: &out), "the head may be sent again, smaller")
        XCTAssertFalse(trailers(g.session, 0, [("x-t", String(repeating: "t", count: 100))], into: &out))
        XCTAssertTrue(trailers(g.session, 0, [("x-t", "1")], into: &out))
        XCTAssertEqual(try Parse.requestStream(out).count, 3)
    }

    /// Sends on a stream the session no longer has append nothing.
    func testSendsOnAGoneStreamAppendNothing() {
        let g = Glue()
        g.deliver(0, Wire.headers(Wire.get))
        g.reset(0)
        var out: [UInt8] = []
        XCTAssertTrue(head(g.session, 0, 200, [("x", "y")], into: &out))
        XCTAssertFalse(g.session.writeDataHeader(streamID: 0, length: 5, into: &out))
        g.session.endResponse(streamID: 0)
        XCTAssertEqual(out, [])
        XCTAssertTrue(head(g.session, 44, 200, into: &out), "never opened")
        XCTAssertEqual(out, [])
    }

    /// A complete response before the request ended (§4.1): `stopReading`
    /// drops the rest of the request and the stream closes.
    func testStopReadingAfterACompleteResponse() {
        let g = Glue()
        g.deliver(0, Wire.headers(Wire.post()) + Wire.data("part"))
        var out: [UInt8] = []
        XCTAssertTrue(head(g.session, 0, 413, into: &out))
        g.session.endResponse(streamID: 0)
        XCTAssertEqual(g.session.openRequestCount, 1, "the request is still open")
        g.session.stopReading(streamID: 0)
        XCTAssertEqual(g.session.openRequestCount, 0)
        g.deliver(0, Wire.data("more"), fin: true)
        XCTAssertEqual(g.take().count, 2, "request and first data only")
    }

    // §5.2: GOAWAY carries the first request stream we will not process; new
    // streams at or above it are rejected (H3_REQUEST_REJECTED); the
    // connection is finished when the last accepted stream ends.
    func testGoAwayRejectsLaterStreamsAndFinishes() throws {
        let g = Glue()
        _ = g.output(.control)
        g.deliver(0, Wire.headers(Wire.get), fin: true)
        g.opened(8)  // 4 is implicitly open too; its bytes come later
        g.opened(4)
        g.session.goAway()
        XCTAssertEqual(g.session.goAwayID, 12)
        XCTAssertEqual(try Parse.laterControlFrames(g.output(.control)), [.goaway(12)])
        XCTAssertTrue(g.session.isClosing)
        g.deliver(12, Wire.headers(Wire.get), fin: true)
        g.deliver(4, Wire.headers(Wire.get), fin: true)
        XCTAssertEqual(g.take(), [.request(0, getHead, end: true), .error(12, .requestAfterGoaway), .request(4, getHead, end: true)])
        XCTAssertEqual(H3Error.requestAfterGoaway.code, .requestRejected)
        var out: [UInt8] = []
        for id: UInt64 in [0, 4] {
            XCTAssertFalse(g.session.isFinished)
            XCTAssertTrue(head(g.session, id, 204, into: &out))
            g.session.endResponse(streamID: id)
        }
        XCTAssertFalse(g.session.isFinished, "stream 8 was opened and is still owed a response")
        g.session.resetStream(streamID: 8)
        XCTAssertTrue(g.session.isFinished)
        g.session.goAway()
        XCTAssertEqual(g.output(.control), [], "the same identifier is not sent again")
    }

    // §5.2: "An endpoint that is attempting to gracefully shut down a
    // connection can send a GOAWAY frame with a value set to the maximum
    // possible value (2^62-4 for servers)" — then the real one; identifiers
    // never increase.
    func testTwoStepGoAway() throws {
        let g = Glue()
        _ = g.output(.control)
        g.session.goAway(announceOnly: true)
        XCTAssertFalse(g.session.isFinished, "requests may still be in flight")
        g.deliver(0, Wire.headers(Wire.get), fin: true)
        g.deliver(4, Wire.headers(Wire.get), fin: true)
        XCTAssertEqual(g.take().count, 2, "both accepted")
        g.session.goAway()
        g.session.goAway(announceOnly: true)
        XCTAssertEqual(try Parse.laterControlFrames(g.output(.control)),
                       [.goaway(H3Session.maxGoAwayID), .goaway(8)])
        XCTAssertEqual(g.session.goAwayID, 8)
        g.deliver(8, Wire.headers(Wire.get), fin: true)
        XCTAssertEqual(g.take(), [.error(8, .requestAfterGoaway)])
        let idle = Glue()
        idle.session.goAway()
        XCTAssertEqual(idle.session.goAwayID, 0, "§5.2: zero if no requests were processed")
        XCTAssertTrue(idle.session.isFinished)
    }
}
