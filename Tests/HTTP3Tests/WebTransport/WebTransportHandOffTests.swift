// H3Session hands WebTransport streams to the glue (draft-ietf-webtrans-http3
// §4.2, §4.3; draft-02 §4.1, §4.2): a client bidirectional stream starting
// with the signal 0x41, a unidirectional stream of type 0x54 — only with
// WebTransport on.

import XCTest
@testable import HTTP3

final class WebTransportHandOffTests: XCTestCase {
    private func glue(webTransport: Bool = true) -> Glue {
        var l = H3Limits()
        if webTransport { l.webTransport = WebTransportLimits() }
        let g = Glue(l)
        g.startClient()
        return g
    }

    // 0x41 is a two-byte varint (40 41); then session ID 0, then data.
    func testBidiStreamWithSignalIsHandedOverWholeSplitAndWithTrailingBytes() {
        let stream = hex("40 41 00") + bytes("hello")
        for piece in [stream.count, 1, 2] {
            let g = glue()
            g.deliver(4, stream, pieceSize: piece)
            XCTAssertEqual(g.take(), [.webTransportStream(4, bidirectional: true)], "pieces of \(piece)")
            XCTAssertEqual(g.handedOff[4], hex("00") + bytes("hello"), "the signal consumed, the rest the registry's")
            XCTAssertEqual(g.session.openRequestCount, 0, "not a request stream")
        }
    }

    func testUniStreamOfType0x54IsHandedOver() {
        let stream = hex("40 54 04") + bytes("up")
        for piece in [stream.count, 1] {
            let g = glue()
            g.deliver(2 + 12, stream, pieceSize: piece)
            XCTAssertEqual(g.take(), [.webTransportStream(14, bidirectional: false)])
            XCTAssertEqual(g.handedOff[14], hex("04") + bytes("up"))
        }
    }

    // Bytes offered to the session after a hand-over are dropped (the glue
    // should route them to the registry), never read as HTTP/3.
    func testBytesOfferedAfterAHandOverAreDropped() {
        let g = glue()
        g.deliver(14, hex("40 54 00"))
        g.deliver(4, hex("40 41 00"))
        _ = g.take()
        for id: UInt64 in [14, 4] {
            let rest = hex("00 04 00")  // a DATA or SETTINGS frame if read as HTTP/3
            let (event, n) = rest.withUnsafeBytes { g.session.receive(streamID: id, $0, fin: true) }
            XCTAssertNil(event)
            XCTAssertEqual(n, 3)
        }
        XCTAssertNil(g.session.connectionFailure)
    }

    // The one-byte encoding of a request's first frame (HEADERS, 0x01) is no
    // signal: an ordinary request goes on as before with WebTransport on.
    func testOrdinaryRequestIsUnaffected() {
        let g = glue()
        g.deliver(0, Wire.headers(Wire.get), fin: true)
        XCTAssertEqual(g.take(), [.request(0, [":method: GET", ":scheme: https", ":authority: a.example", ":path: /"], end: true)])
    }

    // A request whose first frame type is a two-byte varint (a reserved
    // type, 0x1f * 10 + 0x21 = 0x157: 41 57), split after its first byte:
    // the kept byte goes to the frame reader before the rest.
    func testRequestStartingWithATwoByteFrameTypeSplitIsUnaffected() {
        let stream = hex("41 57 02 aa bb") + Wire.headers(Wire.get)
        for piece in [1, 2, stream.count] {
            let g = glue()
            g.deliver(0, stream, fin: true, pieceSize: piece)
            XCTAssertEqual(g.take(), [.request(0, [":method: GET", ":scheme: https", ":authority: a.example", ":path: /"], end: true)],
                           "pieces of \(piece)")
        }
    }

    // A stream ending inside the first varint ends inside a frame header,
    // as without WebTransport (RFC 9114 §7.1: H3_FRAME_ERROR).
    func testStreamEndingInsideTheSignalIsAFrameError() {
        let g = glue()
        g.deliver(0, hex("40"), fin: true)
        XCTAssertEqual(g.take(), [.error(0, .frameTruncatedAtEnd)])
    }

    // Off: 0x41 is an unknown frame type on a request stream (the length
    // byte 0x00, then garbage), and type 0x54 an unknown stream type.
    func testOffTheSignalIsNotSpecial() {
        let g = glue(webTransport: false)
        g.deliver(6 + 8, hex("40 54 04"))
        XCTAssertEqual(g.take(), [.ignored(14, .streamCreationError)])
        g.deliver(0, hex("40 41 00") + Wire.headers(Wire.get), fin: true)
        XCTAssertEqual(g.take().count, 1)
        XCTAssertNil(g.handedOff[0])
    }

    // Only the very first bytes count: WT_STREAM (0x41) as a frame anywhere
    // else is a connection error H3_FRAME_ERROR (draft-ietf-webtrans-http3
    // §4.3); with WebTransport off it is an unknown frame type, skipped.
    func testWTStreamFrameLaterInARequestStreamIsFrameError() {
        let g = glue()
        g.deliver(0, Wire.headers(Wire.get) + hex("40 41 00"), fin: true)
        XCTAssertEqual(g.take().last, .error(0, .misplacedWebTransportStream))
        XCTAssertEqual(H3Error.misplacedWebTransportStream.code, .frameError)

        let off = glue(webTransport: false)
        off.deliver(0, Wire.headers(Wire.get) + hex("40 41 00"), fin: true)
        XCTAssertEqual(off.take(), [.request(0, [":method: GET", ":scheme: https", ":authority: a.example", ":path: /"], end: false),
                                    .data(0, "", end: true)])
    }

    func testWTStreamFrameOnTheControlStreamIsFrameError() {
        var l = H3Limits()
        l.webTransport = WebTransportLimits()
        let g = Glue(l)
        g.deliver(2, Wire.control(H3Settings(), extra: hex("40 41 00")))
        XCTAssertEqual(g.take(), [.settings(H3Settings()), .error(2, .misplacedWebTransportStream)])
    }

    // After our GOAWAY a session may still get new WebTransport streams
    // (§4.7); a new request there is still refused (RFC 9114 §5.2), once
    // its first bytes show what it is.
    func testAfterGoAwayWebTransportStreamsAreHandedOverAndRequestsRefused() {
        let g = glue()
        g.deliver(0, Wire.headers(Wire.get))
        _ = g.take()
        g.session.goAway()
        g.opened(4)
        g.opened(8)
        XCTAssertEqual(g.take(), [], "not refused before their bytes")
        g.deliver(4, hex("40 41 00") + bytes("x"))
        g.deliver(8, Wire.headers(Wire.get), fin: true)
        XCTAssertEqual(g.take(), [.webTransportStream(4, bidirectional: true), .error(8, .requestAfterGoaway)])
    }

    func testUnclassifiedStreamsPastGoAwayDoNotHoldTheShutdown() {
        let g = glue()
        g.session.goAway()
        g.opened(0)
        XCTAssertTrue(g.session.isFinished, "stream 0 past GOAWAY 0 may be WebTransport; it holds nothing up")
        let off = glue(webTransport: false)
        off.session.goAway()
        off.opened(0)
        XCTAssertEqual(off.take(), [.error(0, .requestAfterGoaway)])
    }
}
