// Request streams through the session (RFC 9114 §4.1–§4.3, §6.1): events,
// splitting, frame order, malformed messages, content-length, limits,
// cancellation and admission.

import XCTest
import Core
import HTTPFields
@testable import HTTP3

/// Joins consecutive `.data` events of one stream, so runs fed in different
/// pieces compare equal.
func normalized(_ events: [Ev]) -> [Ev] {
    var out: [Ev] = []
    for e in events {
        if case .data(let id, let s, let end) = e, case .data(let pid, let ps, false)? = out.last, pid == id {
            out[out.count - 1] = .data(id, ps + s, end: end)
        } else {
            out.append(e)
        }
    }
    return out
}

final class H3SessionRequestTests: XCTestCase {
    let getHead = [":method: GET", ":scheme: https", ":authority: a.example", ":path: /"]
    let postHead = [":method: POST", ":scheme: https", ":authority: a.example", ":path: /up"]

    func testGetWithFinInTheSameBytes() {
        let g = Glue()
        g.deliver(0, Wire.headers(Wire.get), fin: true)
        XCTAssertEqual(g.take(), [.request(0, getHead, end: true)])
        XCTAssertEqual(g.session.openRequestCount, 1, "the response is still to come")
    }

    // A request with every frame kind a request stream may carry (§4.1:
    // unknown and reserved frames "MAY be sent on a request ... stream
    // before, after, or interleaved"), fed whole, at every split point, and a
    // byte at a time: the same events.
    func testPostWithBodyTrailersAndUnknownFramesSplitEverywhere() {
        let wire = Wire.frame(H3Grease.value(4), [1, 2]) + Wire.headers(Wire.post("/up", [("content-length", "11")]))
            + Wire.data("hello") + Wire.frame(0x21, []) + Wire.data("") + Wire.data(" world")
            + Wire.frame(0x4242, [7, 7, 7]) + Wire.headers([("x-checksum", "abc")])
        let expected: [Ev] = [.request(0, postHead + ["content-length: 11"], end: false), .data(0, "hello world", end: false),
                              .trailers(0, ["x-checksum: abc"])]
        let whole = Glue()
        whole.deliver(0, wire, fin: true)
        XCTAssertEqual(normalized(whole.take()), expected)
        XCTAssertEqual(whole.session.openRequestCount, 1)
        for cut in 0 ... wire.count {
            let g = Glue()
            g.deliver(0, Array(wire[..<cut]))
            g.deliver(0, Array(wire[cut...]), fin: true)
            XCTAssertEqual(normalized(g.take()), expected, "cut at \(cut)")
        }
        let bytewise = Glue()
        bytewise.deliver(0, wire, fin: true, pieceSize: 1)
        XCTAssertEqual(normalized(bytewise.take()), expected)
    }

    /// The end of the request is reported once, on the last piece of body
    /// when the FIN comes with it, or as an empty `.data` otherwise.
    /// The sessions of a thread decode into one shared list
    /// (H3HeaderScratch): interleaved requests and trailers on two
    /// connections each get their own fields, and the list a session
    /// decoded into is not what a head it reported still shows.
    func testSessionsSharingAHeaderScratchKeepTheirOwnFields() {
        let scratch = H3HeaderScratch()
        let a = Glue(headerScratch: scratch)
        let b = Glue(headerScratch: scratch)
        a.deliver(0, Wire.headers(Wire.post("/up", [("content-length", "3")])), fin: false)
        b.deliver(0, Wire.headers(Wire.get), fin: true)
        a.deliver(0, Wire.data("abc") + Wire.headers([("x-checksum", "abc")]), fin: true)
        b.deliver(4, Wire.headers(Wire.post("/up", [])), fin: false)
        XCTAssertEqual(a.take(), [.request(0, postHead + ["content-length: 3"], end: false), .data(0, "abc", end: false),
                                  .trailers(0, ["x-checksum: abc"])])
        XCTAssertEqual(b.take(), [.request(0, getHead, end: true), .request(4, postHead, end: false)])
    }

    func testEndOfRequestIsReportedOnce() {
        let body = Wire.headers(Wire.post()) + Wire.data("abc")
        let together = Glue()
        together.deliver(0, body, fin: true)
        XCTAssertEqual(together.take(), [.request(0, postHead, end: false), .data(0, "abc", end: true)])
        let apart = Glue()
        apart.deliver(0, body)
        apart.deliver(0, [], fin: true)
        apart.deliver(0, [], fin: true)
        XCTAssertEqual(apart.take(), [.request(0, postHead, end: false), .data(0, "abc", end: false), .data(0, "", end: true)])
        let afterUnknown = Glue()
        afterUnknown.deliver(0, body + Wire.frame(0x21, [0]), fin: true)
        XCTAssertEqual(afterUnknown.take(), [.request(0, postHead, end: false), .data(0, "abc", end: false), .data(0, "", end: true)])
    }

    /// The request streams a WebTransport registry made later is told of
    /// (H3Connection.makeWebTransport): those closed, oldest first and as
    /// many as `closedStreamMemory`, then those open.
    func testRememberedRequestIDs() {
        var limits = H3Limits()
        limits.closedStreamMemory = 3
        let s = H3Session(limits: limits)
        let get = Wire.headers(Wire.get)
        for id: UInt64 in [0, 4, 8, 12, 16, 20] {
            get.withUnsafeBytes { _ = s.receive(streamID: id, $0, fin: true) }
        }
        XCTAssertEqual(s.rememberedRequestIDs(), [0, 4, 8, 12, 16, 20])
        for id: UInt64 in [8, 0, 16, 4] { s.remove(id) }
        XCTAssertEqual(s.rememberedRequestIDs(), [0, 16, 4, 12, 20], "the three closed last, then the open ones")
        var ids = ClosedStreamIDs(capacity: 3)
        for id: UInt64 in [1, 2, 3, 4] { ids.remember(id) }
        ids.forget(3)
        XCTAssertEqual(ids.remembered, [2, 4])
    }

    /// `.data` points into the caller's bytes: no copy of the body.
    func testDataIsAViewOfTheCallersBytes() {
        let s = H3Session(limits: H3Limits())
        let wire = Wire.headers(Wire.post()) + Wire.data("payload")
        wire.withUnsafeBytes { p in
            var (e, n) = s.receive(streamID: 0, p, fin: false)
            guard case .request? = e else { return XCTFail("\(String(describing: e))") }
            (e, _) = s.receive(streamID: 0, UnsafeRawBufferPointer(rebasing: p[n...]), fin: false)
            guard case .data(_, let bytes, false)? = e else { return XCTFail("\(String(describing: e))") }
            XCTAssertEqual(bytes.baseAddress, p.baseAddress! + wire.count - 7)
            XCTAssertEqual(bytes.count, 7)
        }
    }

    // §4.1: "a DATA frame before any HEADERS frame, or a HEADERS or DATA
    // frame after the trailing HEADERS frame, is considered invalid"
    // (H3_FRAME_UNEXPECTED); §7.2.4/§7.2.6/§7.2.3/§7.2.7 control frames on a
    // request stream; §7.2.5 PUSH_PROMISE from a client; §7.2.8 HTTP/2 types.
    func testFramesInTheWrongPlaceAreFrameUnexpected() {
        let head = Wire.headers(Wire.post())
        let trailers = Wire.headers([("x-t", "1")])
        let cases: [([UInt8], H3Error)] = [
            (Wire.data("x"), .dataBeforeHeaders),
            (Wire.frame(0x21, []) + Wire.data(""), .dataBeforeHeaders),
            (head + trailers + Wire.data("x"), .frameAfterTrailers),
            (head + trailers + trailers, .frameAfterTrailers),
            (Wire.frame(0x04, []), .controlFrameOnRequestStream),
            (head + Wire.frame(0x07, [0]), .controlFrameOnRequestStream),
            (head + Wire.frame(0x03, [0]), .controlFrameOnRequestStream),
            (head + Wire.frame(0x0d, [0]), .controlFrameOnRequestStream),
            (head + Wire.frame(0x05, [0, 0, 0]), .pushPromiseFromClient),
            (head + Wire.frame(0x09, []), .http2FrameType),
            (Wire.frame(0x02, [0]), .http2FrameType),
        ]
        for (wire, error) in cases {
            let g = Glue()
            g.deliver(0, wire)
            XCTAssertEqual(g.take().last, .error(0, error), "\(error)")
            XCTAssertEqual(error.code, .frameUnexpected)
            XCTAssertTrue(g.session.isFinished)
        }
    }

    // §7.1: "if the last frame on the stream was truncated, this MUST be
    // treated as a connection error of type H3_FRAME_ERROR"; §4.1: a stream
    // that ends without a complete head is H3_REQUEST_INCOMPLETE.
    func testTruncatedStreams() {
        let head = Wire.headers(Wire.post())
        let cut = Glue()
        cut.deliver(0, Array(head.dropLast()), fin: true)
        XCTAssertEqual(cut.take(), [.error(0, .frameTruncatedAtEnd)])
        let midData = Glue()
        midData.deliver(0, head + Array(Wire.data("abc").dropLast()), fin: true)
        XCTAssertEqual(midData.take(), [.request(0, postHead, end: false), .data(0, "ab", end: false), .error(0, .frameTruncatedAtEnd)])
        XCTAssertEqual(H3Error.frameTruncatedAtEnd.code, .frameError)
        for wire in [[UInt8](), Wire.frame(0x21, [1])] {
            let g = Glue()
            g.deliver(0, wire, fin: true)
            XCTAssertEqual(g.take(), [.error(0, .requestIncomplete)])
            XCTAssertEqual(g.session.openRequestCount, 0)
            XCTAssertNil(g.session.connectionFailure, "a stream error only")
        }
        XCTAssertEqual(H3Error.requestIncomplete.code, .requestIncomplete)
    }

    // §4.1.2, §4.2, §4.3: the shared field rules → stream error
    // H3_MESSAGE_ERROR; the connection carries on and the application never
    // sees the request.
    func testMalformedRequestsAreStreamErrors() {
        let cases: [([(String, String)], RequestFieldError)] = [
            (Wire.get + [("Upper", "x")], .invalidFieldName),
            (Wire.get + [("connection", "close")], .connectionSpecificField),
            (Wire.get + [("transfer-encoding", "chunked")], .connectionSpecificField),
            (Wire.get + [("te", "gzip")], .teNotTrailers),
            ([(":scheme", "https"), (":authority", "a"), (":path", "/")], .missingMethod),
            ([(":method", "GET"), (":authority", "a"), (":path", "/")], .missingSchemeOrPath),
            ([(":method", "GET"), ("x", "1"), (":scheme", "https"), (":path", "/")], .pseudoAfterRegular),
            ([(":status", "200")] + Wire.get, .unknownPseudo),
            (Wire.get + [("x", "a\u{0}b")], .invalidFieldValue),
            ([(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":authority", "a"), (":path", "/")],
             .protocolNotEnabled),
            (Wire.post("/", [("content-length", "1, 1")]), .contentLengthList),
        ]
        for (fields, rule) in cases {
            let g = Glue()
            g.deliver(0, Wire.headers(fields), fin: true)
            g.deliver(4, Wire.headers(Wire.get), fin: true)
            XCTAssertEqual(g.take(), [.error(0, H3Error(rule)), .request(4, getHead, end: true)], "\(rule)")
            XCTAssertEqual(H3Error(rule).code, .messageError)
        }
        let trailers = Glue()
        trailers.deliver(0, Wire.headers(Wire.post()) + Wire.headers([(":path", "/")]), fin: true)
        XCTAssertEqual(trailers.take(), [.request(0, postHead, end: false), .error(0, H3Error(.pseudoInTrailers))])
    }

    // RFC 9220 §3 / RFC 8441 §4: extended CONNECT when we announced
    // SETTINGS_ENABLE_CONNECT_PROTOCOL.
    func testExtendedConnectWhenEnabled() {
        var l = H3Limits()
        l.enableConnectProtocol = true
        let g = Glue(l)
        g.deliver(0, Wire.headers([(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"),
                                   (":authority", "a.example"), (":path", "/chat")]))
        XCTAssertEqual(g.take(), [.request(0, [":method: CONNECT", ":scheme: https", ":authority: a.example", ":path: /chat",
                                               ":protocol: websocket"], end: false)])
    }

    // §4.1.2: "A request ... is malformed if the value of the Content-Length
    // header field does not equal the sum of the DATA frame lengths
    // received".
    func testContentLengthAgainstData() {
        let head = Wire.headers(Wire.post("/up", [("content-length", "3")]))
        let h = postHead + ["content-length: 3"]
        let more = Glue()
        more.deliver(0, head + Wire.data("ab") + Wire.data("cd"))
        XCTAssertEqual(more.take(), [.request(0, h, end: false), .data(0, "ab", end: false), .error(0, .contentLengthMismatch)])
        let less = Glue()
        less.deliver(0, head + Wire.data("ab"), fin: true)
        // The short body's bytes are delivered before the error, whether the
        // FIN comes with them or after (fuzz-h3-session:
        // regression-short-body-with-fin).
        XCTAssertEqual(less.take(), [.request(0, h, end: false), .data(0, "ab", end: false), .error(0, .contentLengthMismatch)])
        let lessThenFin = Glue()
        lessThenFin.deliver(0, head + Wire.data("ab"))
        lessThenFin.deliver(0, [], fin: true)
        XCTAssertEqual(lessThenFin.take(), [.request(0, h, end: false), .data(0, "ab", end: false), .error(0, .contentLengthMismatch)])
        let none = Glue()
        none.deliver(0, head, fin: true)
        XCTAssertEqual(none.take(), [.error(0, .contentLengthMismatch)], "a head that ends the stream short of its length")
        let beforeTrailers = Glue()
        beforeTrailers.deliver(0, head + Wire.data("ab") + Wire.headers([("x", "1")]))
        XCTAssertEqual(beforeTrailers.take(), [.request(0, h, end: false), .data(0, "ab", end: false), .error(0, .contentLengthMismatch)])
        let exact = Glue()
        exact.deliver(0, head + Wire.data("a") + Wire.data("bc"), fin: true)
        XCTAssertEqual(normalized(exact.take()), [.request(0, h, end: false), .data(0, "abc", end: true)])
        XCTAssertEqual(H3Error.contentLengthMismatch.code, .messageError)
    }

    // §4.2.2: a head over our SETTINGS_MAX_FIELD_SECTION_SIZE is answered
    // 431 by the session; trailers over it reset the stream.
    func testFieldSectionSizeLimit() throws {
        var l = H3Limits()
        l.maxFieldSectionSize = 200
        // 4 pseudo-header fields: (7+3)+(7+5)+(10+9)+(5+1) + 4*32 = 175.
        let g = Glue(l)
        g.deliver(0, Wire.headers(Wire.get), fin: true)
        g.deliver(4, Wire.headers(Wire.get + [("x-pad", String(repeating: "p", count: 20))]))
        g.deliver(4, Wire.data("late bytes are dropped"))
        let events = g.take()
        XCTAssertEqual(events.first, .request(0, getHead, end: true))
        guard case .headTooLarge(4, let response)? = events.last, events.count == 2 else { return XCTFail("\(events)") }
        XCTAssertEqual(try Parse.requestStream(response), [.headers([[":status", "431"]])])
        XCTAssertEqual(g.session.openRequestCount, 1)
        let t = Glue(l)
        t.deliver(0, Wire.headers(Wire.post()) + Wire.headers([("x-pad", String(repeating: "p", count: 200))]))
        XCTAssertEqual(t.take(), [.request(0, postHead, end: false), .error(0, .fieldSectionTooLarge)])
        XCTAssertEqual(H3Error.fieldSectionTooLarge.code, .messageError)
    }

    /// H3Limits.maxHeadersFrameBytes: a longer HEADERS frame is refused on
    /// its frame header, before anything is buffered.
    func testHeadersFrameOverTheLimit() {
        var l = H3Limits()
        l.maxHeadersFrameBytes = 100
        let g = Glue(l)
        g.deliver(0, Wire.varint(0x01) + Wire.varint(101))
        g.deliver(4, Wire.headers(Wire.get), fin: true)
        XCTAssertEqual(g.take(), [.error(0, .headersFrameTooLarge), .request(4, getHead, end: true)])
        XCTAssertEqual(H3Error.headersFrameTooLarge.code, .excessiveLoad)
    }

    /// H3Limits.maxConcurrentStreams: one more is H3_REQUEST_REJECTED; a
    /// stream counts until both its request and its response are done.
    func testConcurrentStreamLimit() {
        var l = H3Limits()
        l.maxConcurrentStreams = 2
        let g = Glue(l)
        g.deliver(0, Wire.headers(Wire.get), fin: true)
        g.opened(4)
        g.opened(8)
        XCTAssertEqual(g.take(), [.request(0, getHead, end: true), .error(8, .tooManyRequestStreams)])
        XCTAssertEqual(H3Error.tooManyRequestStreams.code, .requestRejected)
        g.deliver(8, Wire.headers(Wire.get), fin: true)
        XCTAssertEqual(g.take(), [], "a refused stream's bytes are dropped")
        var out: [UInt8] = []
        g.session.beginHeaders(streamID: 0, status: 204)
        XCTAssertTrue(g.session.endHeaders(into: &out))
        g.session.endResponse(streamID: 0)
        XCTAssertEqual(g.session.openRequestCount, 1)
        g.deliver(12, Wire.headers(Wire.get), fin: true)
        XCTAssertEqual(g.take(), [.request(12, getHead, end: true)])
        g.deliver(16, Wire.headers(Wire.get), fin: true)
        XCTAssertEqual(g.take(), [.error(16, .tooManyRequestStreams)])
    }

    /// RESET_STREAM or STOP_SENDING from the client cancels the request:
    /// `.streamReset`, the stream is forgotten, later bytes are dropped.
    func testClientCancellation() {
        let g = Glue()
        g.deliver(0, Wire.headers(Wire.post()))
        g.deliver(4, Wire.headers(Wire.post()))
        g.reset(0, .requestCancelled)
        g.stopSending(4, H3ErrorCode(rawValue: 0x21))
        XCTAssertEqual(g.take(), [.request(0, postHead, end: false), .request(4, postHead, end: false),
                                  .reset(0, .requestCancelled), .reset(4, H3ErrorCode(rawValue: 0x21))])
        XCTAssertEqual(g.session.openRequestCount, 0)
        XCTAssertFalse(g.session.canSend(streamID: 4))
        let (e, n) = Wire.data("x").withUnsafeBytes { g.session.receive(streamID: 4, $0, fin: false) }
        XCTAssertNil(e)
        XCTAssertEqual(n, 3, "late bytes of a forgotten stream are consumed and dropped")
        XCTAssertNil(g.session.peerReset(streamID: 0, code: .noError), "twice is nothing")
        XCTAssertNil(g.session.peerReset(streamID: 40, code: .noError), "an unknown stream is nothing")
    }

    /// Stream IDs are client-initiated: a server-initiated one is the glue's bug.
    func testStreamKinds() {
        XCTAssertEqual(H3LocalStream(streamID: 3), .control)
        let g = Glue()
        g.deliver(0, [], fin: false)
        XCTAssertEqual(g.take(), [])
        XCTAssertEqual(g.session.openRequestCount, 1, "a stream opens with its first (even empty) delivery")
    }
}
