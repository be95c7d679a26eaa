// Stream states and identifiers (RFC 9113 §5.1, §5.1.1, §5.1.2), and how
// late frames on closed streams are judged.

import XCTest
import Core
@testable import HTTP2

final class H2ConnectionStreamTests: XCTestCase {
    func testGETOpensAHalfClosedRemoteStreamAndTheResponseClosesIt() {
        let h = H2Harness()
        XCTAssertEqual(h.feed(h.headers(1, h.get("/a?b=c"))), [.request(1, getHead("/a?b=c"), endStream: true)])
        XCTAssertEqual(h.conn.openStreamCount, 1)
        h.respond(1, status: 200, [("Content-Type", "text/plain")])
        XCTAssertEqual(h.send(1, bytes("hello"), endStream: true), 5)
        XCTAssertEqual(h.conn.openStreamCount, 0)
        XCTAssertEqual(h.drain(), [.headers(1, [[":status", "200"], ["content-type", "text/plain"]], endStream: false),
                                   .data(1, bytes("hello"), endStream: true)])
    }

    func testPOSTBodyThenEndStreamWhileResponseEnds() {
        let h = H2Harness()
        XCTAssertEqual(h.feed(h.headers(1, h.post(), endStream: false)),
                       [.request(1, { var x = getHead("/upload"); x.method = "POST"; return x }(), endStream: false)])
        XCTAssertEqual(h.feed(h.data(1, bytes("ab"))), [.data(1, bytes("ab"), flowControlled: 2, endStream: false)])
        // Response first: half-closed (local); the body may still come.
        h.respond(1, status: 200, endStream: true)
        XCTAssertEqual(h.conn.openStreamCount, 1)
        XCTAssertEqual(h.feed(h.data(1, bytes("c"), endStream: true)), [.data(1, bytes("c"), flowControlled: 1, endStream: true)])
        XCTAssertEqual(h.conn.openStreamCount, 0)
    }

    // §5.1.1: "Streams initiated by a client MUST use odd-numbered stream identifiers".
    func testEvenStreamIDIsProtocolError() {
        let h = H2Harness()
        XCTAssertEqual(h.feed(h.headers(2, h.get())), [.connectionError(.protocolError, "client stream identifier is even")])
    }

    // §5.1.1: a new stream id must be greater than every earlier one.
    func testDecreasingStreamIDIsProtocolError() {
        let h = H2Harness()
        _ = h.feed(h.headers(5, h.get()))
        XCTAssertEqual(h.feed(h.headers(3, h.get())),
                       [.connectionError(.protocolError, "new stream identifier not greater than earlier ones")])
        XCTAssertEqual(h.drain().last, .goAway(5, .protocolError, "new stream identifier not greater than earlier ones"))
    }

    // §5.1 idle: "Receiving any frame other than HEADERS or PRIORITY on a
    // stream in this state MUST be treated as a connection error of type PROTOCOL_ERROR."
    func testFramesOnIdleStreamsAreProtocolErrors() {
        let frames: [(H2Harness) -> [UInt8]] = [
            { $0.data(1, [1]) }, { $0.rst(1, .cancel) }, { $0.windowUpdate(1, 1) },
            { $0.data(2, [1]) }, { $0.windowUpdate(4, 1) }, { $0.rst(2, .cancel) },
            { $0.windowUpdate(3, 0) },
        ]
        for make in frames {
            let h = H2Harness()
            XCTAssertEqual(h.feed(make(h)).connectionError, .protocolError)
        }
    }

    func testContinuationOnIdleStreamIsProtocolError() {
        let h = H2Harness()
        XCTAssertEqual(h.feed(h.continuation(1, block: [0x82], endHeaders: true)),
                       [.connectionError(.protocolError, "CONTINUATION without a field block in progress")])
    }

    func testPriorityOnIdleStreamIsIgnoredAndDoesNotOpenIt() {
        let h = H2Harness()
        XCTAssertEqual(h.feed(h.priority(7, dependsOn: 0) + h.priority(2, dependsOn: 0)), [])
        XCTAssertEqual(h.feed(h.headers(3, h.get())).count, 1)
        XCTAssertEqual(h.feed(h.headers(7, h.get())).count, 1)
    }

    // §5.1 half-closed (remote): "If an endpoint receives additional frames,
    // other than WINDOW_UPDATE, PRIORITY, or RST_STREAM, for a stream that is
    // in this state, it MUST respond with a stream error of type STREAM_CLOSED."
    func testDataOnHalfClosedRemoteIsStreamClosedStreamError() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        _ = h.drain()
        XCTAssertEqual(h.feed(h.data(1, [1, 2])), [.reset(1, .streamClosed)])
        XCTAssertEqual(h.drain(), [.rst(1, .streamClosed)])
        XCTAssertEqual(h.conn.openStreamCount, 0)
        XCTAssertFalse(h.conn.isClosing)
    }

    func testHeadersOnHalfClosedRemoteIsStreamClosedStreamError() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        _ = h.drain()
        XCTAssertEqual(h.feed(h.headers(1, [("x", "y")])), [.reset(1, .streamClosed)])
        XCTAssertEqual(h.drain(), [.rst(1, .streamClosed)])
    }

    func testWindowUpdatePriorityAndRstAreAllowedOnHalfClosedRemote() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        XCTAssertEqual(h.feed(h.windowUpdate(1, 10) + h.priority(1, dependsOn: 0)), [])  // no head sent yet: no window event
        XCTAssertEqual(h.feed(h.rst(1, .cancel)), [.reset(1, .cancel)])
        XCTAssertEqual(h.conn.openStreamCount, 0)
    }

    // §5.1 closed: DATA after END_STREAM both ways, or after the peer's
    // RST_STREAM, is STREAM_CLOSED (we make it a connection error).
    func testDataAfterStreamClosedIsStreamClosed() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        h.respond(1, status: 204, endStream: true)
        XCTAssertEqual(h.feed(h.data(1, [1])).connectionError, .streamClosed)

        let r = H2Harness()
        _ = r.feed(r.headers(1, r.post(), endStream: false))
        XCTAssertEqual(r.feed(r.rst(1, .cancel)), [.reset(1, .cancel)])
        XCTAssertEqual(r.feed(r.data(1, [1])).connectionError, .streamClosed)
    }

    func testHeadersAfterStreamClosedIsStreamClosed() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        h.respond(1, status: 204, endStream: true)
        XCTAssertEqual(h.feed(h.headers(1, h.get())).connectionError, .streamClosed)
    }

    // §5.1: "An endpoint MUST ignore frames that it receives on closed streams
    // after it has sent a RST_STREAM frame."
    func testFramesAfterOurResetAreIgnored() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        h.conn.resetStream(streamID: 1, code: .cancel)
        XCTAssertEqual(h.drain(), [.rst(1, .cancel)])
        XCTAssertEqual(h.feed(h.data(1, [1, 2, 3]) + h.headers(1, [("x", "y")]) + h.windowUpdate(1, 5)
                              + h.rst(1, .cancel) + h.data(1, [], endStream: true)), [])
        XCTAssertFalse(h.conn.isClosing)
        // The HPACK context stayed in step through the ignored block.
        XCTAssertEqual(h.feed(h.headers(3, h.get())).count, 1)
    }

    func testWindowUpdateAndRstOnClosedStreamsAreIgnored() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        h.respond(1, status: 204, endStream: true)
        XCTAssertEqual(h.feed(h.windowUpdate(1, 100) + h.rst(1, .cancel) + h.priority(1, dependsOn: 0)), [])
        XCTAssertFalse(h.conn.isClosing)
    }

    // §5.1.1: skipped ids are closed implicitly; using one later is an error.
    func testSkippedStreamIDCannotBeUsedLater() {
        let h = H2Harness()
        _ = h.feed(h.headers(5, h.get()))
        XCTAssertEqual(h.feed(h.data(3, [1])).connectionError, .streamClosed)
    }

    // §5.1.2: beyond SETTINGS_MAX_CONCURRENT_STREAMS → REFUSED_STREAM.
    func testStreamsBeyondTheConcurrencyLimitAreRefused() {
        var l = H2Limits()
        l.maxConcurrentStreams = 2
        let h = H2Harness(limits: l)
        _ = h.drain()
        XCTAssertEqual(h.feed(h.headers(1, h.get()) + h.headers(3, h.get())).count, 2)
        XCTAssertEqual(h.feed(h.headers(5, h.get())), [])
        XCTAssertEqual(h.drain(), [.rst(5, .refusedStream)])
        // Its late frames are ignored; a finished stream frees a slot.
        XCTAssertEqual(h.feed(h.data(5, [1])), [])
        h.respond(1, status: 204, endStream: true)
        XCTAssertEqual(h.feed(h.headers(7, h.get())), [.request(7, getHead(), endStream: true)])
    }

    func testPeerResetOfOpenStreamIsReported() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        XCTAssertEqual(h.feed(h.rst(1, HTTP2ErrorCode(rawValue: 0x77))), [.reset(1, HTTP2ErrorCode(rawValue: 0x77))])
        // Sends on it are discarded.
        XCTAssertFalse(h.conn.canSend(streamID: 1))
        h.respond(1, status: 200)
        XCTAssertEqual(h.send(1, [1, 2, 3], endStream: true), 3)
        XCTAssertEqual(h.drain(), [])
    }

    func testServerResetWithNoErrorAfterCompleteResponse() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        h.respond(1, status: 413, endStream: true)
        h.conn.resetStream(streamID: 1, code: .noError)
        XCTAssertEqual(h.drain(), [.headers(1, [[":status", "413"]], endStream: true), .rst(1, .noError)])
        XCTAssertEqual(h.conn.openStreamCount, 0)
    }

    func testPeerGoAwayIsReportedAndStreamsContinue() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        XCTAssertEqual(h.feed(h.goAway(1, .noError)), [.goAway(1, .noError)])
        XCTAssertEqual(h.feed(h.data(1, [9], endStream: true)), [.data(1, [9], flowControlled: 1, endStream: true)])
    }

    // §6.8: after our GOAWAY, HEADERS above its last id are ignored; open
    // streams finish, then the connection is finished.
    func testGracefulGoAway() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        h.conn.goAway()
        XCTAssertTrue(h.conn.isClosing)
        XCTAssertFalse(h.conn.isFinished)
        XCTAssertEqual(h.drain(), [.goAway(1, .noError, "")])
        XCTAssertEqual(h.feed(h.headers(3, h.get()) + h.data(3, [1])), [])
        XCTAssertEqual(h.drain(), [])
        XCTAssertEqual(h.feed(h.data(1, [], endStream: true)), [.data(1, [], flowControlled: 0, endStream: true)])
        h.respond(1, status: 200, endStream: true)
        XCTAssertTrue(h.conn.isFinished)
        h.conn.goAway()  // once only
        XCTAssertEqual(h.drain(), [.headers(1, [[":status", "200"]], endStream: true)])
    }

    func testConnectionErrorIsStickyAndSwallowsInput() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        XCTAssertEqual(h.feed(h.headers(2, h.get()) + h.ping(1)).connectionError, .protocolError)
        XCTAssertEqual(h.unconsumedInput, 0)
        XCTAssertEqual(h.feed(h.ping(2) + h.headers(3, h.get())), [])
        XCTAssertEqual(h.drain(), [.goAway(1, .protocolError, "client stream identifier is even")])
        XCTAssertTrue(h.conn.isFinished)
        XCTAssertEqual(h.conn.openStreamCount, 0)
        h.respond(1, status: 200, endStream: true)
        XCTAssertEqual(h.drain(), [])
    }

    func testClosedStreamMemoryIsBounded() {
        var l = H2Limits()
        l.closedStreamMemory = 2
        let h = H2Harness(limits: l)
        for id: UInt32 in [1, 3, 5] {
            _ = h.feed(h.headers(id, h.post(), endStream: false))
            h.conn.resetStream(streamID: id, code: .cancel)
        }
        XCTAssertEqual(h.feed(h.data(5, [1]) + h.data(3, [1])), [])  // remembered: ignored
        XCTAssertEqual(h.feed(h.data(1, [1])).connectionError, .streamClosed)  // forgotten
    }
}
