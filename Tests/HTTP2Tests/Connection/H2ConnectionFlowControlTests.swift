// Flow control both ways (RFC 9113 §5.2, §6.9).

import XCTest
import Core
@testable import HTTP2

final class H2ConnectionFlowControlTests: XCTestCase {
    private func limits(stream: Int, connection: Int = 1 << 20) -> H2Limits {
        var l = H2Limits()
        l.initialStreamWindow = stream
        l.connectionWindow = connection
        return l
    }

    // MARK: receiving

    func testWindowUpdatesOnlyAfterConsumedAndBatchedAtHalfAWindow() {
        let h = H2Harness(limits: limits(stream: 1000, connection: 100_000))
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        _ = h.drain()
        XCTAssertEqual(h.feed(h.data(1, Array(repeating: 1, count: 600))).count, 1)
        XCTAssertEqual(h.drain(), [], "nothing returned before the application consumed")
        h.conn.consumed(streamID: 1, 400)
        XCTAssertEqual(h.drain(), [])
        h.conn.consumed(streamID: 1, 100)
        XCTAssertEqual(h.drain(), [.windowUpdate(1, 500)])
        h.conn.consumed(streamID: 1, 1000)  // clamped to what was delivered: 100 left
        XCTAssertEqual(h.drain(), [])
    }

    func testConnectionWindowUpdateAtHalfTheConnectionWindow() {
        let h = H2Harness(limits: limits(stream: 65535, connection: 65535))
        for id: UInt32 in [1, 3] { _ = h.feed(h.headers(id, h.post(), endStream: false)) }
        _ = h.drain()
        _ = h.feed(h.data(1, Array(repeating: 1, count: 16000)) + h.data(3, Array(repeating: 1, count: 16000))
                   + h.data(3, Array(repeating: 1, count: 1000)))
        h.conn.consumed(streamID: 1, 16000)
        XCTAssertEqual(h.drain(), [])
        h.conn.consumed(streamID: 3, 17000)
        XCTAssertEqual(h.drain(), [.windowUpdate(0, 33000)])
    }

    // §6.9.1: "A receiver MAY respond with a stream error or connection error
    // of type FLOW_CONTROL_ERROR if it is unable to accept a frame."
    func testDataBeyondTheStreamWindowIsStreamFlowControlError() {
        let h = H2Harness(limits: limits(stream: 100))
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        _ = h.drain()
        // Before our SETTINGS were acknowledged the default 65535 applied;
        // the harness acknowledged them, so 100 it is.
        XCTAssertEqual(h.feed(h.data(1, Array(repeating: 0, count: 100))).count, 1)
        XCTAssertEqual(h.feed(h.data(1, [0])), [.reset(1, .flowControlError)])
        XCTAssertEqual(h.drain(), [.rst(1, .flowControlError)])
        XCTAssertFalse(h.conn.isClosing)
    }

    func testSmallStreamWindowAllowsTheDefaultUntilAcknowledged() {
        let h = H2Harness(limits: limits(stream: 100), handshake: false)
        _ = h.feed(ConnectionPreface.bytes + h.settings([]))
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        XCTAssertEqual(h.feed(h.data(1, Array(repeating: 0, count: 1000))).count, 1)
        // The ack shrinks the window by 65535 - 100: now far below zero.
        _ = h.feed(h.settingsAck())
        XCTAssertEqual(h.feed(h.data(1, [0])), [.reset(1, .flowControlError)])
    }

    func testDataBeyondTheConnectionWindowIsConnectionFlowControlError() {
        let h = H2Harness(limits: limits(stream: 65535, connection: 65535))
        for id: UInt32 in [1, 3, 5, 7, 9] { _ = h.feed(h.headers(id, h.post(), endStream: false)) }
        for id: UInt32 in [1, 3, 5, 7] {
            XCTAssertEqual(h.feed(h.data(id, Array(repeating: 0, count: 16383))).count, 1)
        }
        XCTAssertEqual(h.feed(h.data(9, Array(repeating: 0, count: 4))).connectionError, .flowControlError)
    }

    func testPaddingCountsAndIsReturnedThroughConsumed() {
        let h = H2Harness(limits: limits(stream: 300, connection: 65535))
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        _ = h.drain()
        XCTAssertEqual(h.feed(h.data(1, [1, 2], padLength: 200)), [.data(1, [1, 2], flowControlled: 203, endStream: false)])
        XCTAssertEqual(h.drain(), [])
        // The padding share (201 octets with the Pad Length octet) at once:
        // over half the stream window.
        h.conn.consumed(streamID: 1, 201)
        XCTAssertEqual(h.drain(), [.windowUpdate(1, 201)])
        h.conn.consumed(streamID: 1, 2)
        h.conn.consumed(streamID: 1, 1)  // more than delivered: ignored
        XCTAssertEqual(h.feed(h.data(1, Array(repeating: 0, count: 298))).count, 1)  // exactly the window
    }

    func testPaddingOfAnEmptyFrameIsReturnedByTheConnection() {
        let h = H2Harness(limits: limits(stream: 300, connection: 65535))
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        _ = h.drain()
        XCTAssertEqual(h.feed(h.data(1, [], padLength: 199)), [])  // no event
        XCTAssertEqual(h.drain(), [.windowUpdate(1, 200)])
    }

    func testDroppedDataStillCountsOnTheConnection() {
        let h = H2Harness(limits: limits(stream: 65535, connection: 65535))
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        h.conn.resetStream(streamID: 1, code: .cancel)
        _ = h.drain()
        for _ in 0 ..< 3 { XCTAssertEqual(h.feed(h.data(1, Array(repeating: 0, count: 16000))), []) }
        // Credit returned at once (the bytes are gone), so more fits.
        XCTAssertEqual(h.drain(), [.windowUpdate(0, 48000)])
        XCTAssertEqual(h.feed(h.data(1, Array(repeating: 0, count: 16000))), [])
        XCTAssertFalse(h.conn.isClosing)
    }

    func testUnconsumedBodyOfAResetStreamReturnsToTheConnection() {
        let h = H2Harness(limits: limits(stream: 65535, connection: 65535))
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        _ = h.feed(h.data(1, Array(repeating: 0, count: 16000)) + h.data(1, Array(repeating: 0, count: 16000))
                   + h.data(1, Array(repeating: 0, count: 1000)))
        _ = h.drain()
        XCTAssertEqual(h.feed(h.rst(1, .cancel)), [.reset(1, .cancel)])
        XCTAssertEqual(h.drain(), [.windowUpdate(0, 33000)])
        h.conn.consumed(streamID: 1, 33000)  // too late: ignored
        XCTAssertEqual(h.drain(), [])
    }

    // MARK: sending

    func testSendDataIsLimitedByTheStreamWindow() {
        let h = H2Harness()
        _ = h.feed(h.settings([Setting(.initialWindowSize, 10)]))
        _ = h.feed(h.headers(1, h.get()))
        h.respond(1, status: 200)
        _ = h.drain()
        XCTAssertEqual(h.conn.sendWindow(streamID: 1), 10)
        XCTAssertEqual(h.send(1, Array(repeating: 1, count: 25), endStream: true), 10)
        XCTAssertEqual(h.conn.sendWindow(streamID: 1), 0)
        XCTAssertEqual(h.send(1, Array(repeating: 1, count: 15), endStream: true), 0)
        XCTAssertEqual(h.drain(), [.data(1, Array(repeating: 1, count: 10), endStream: false)])
        XCTAssertEqual(h.feed(h.windowUpdate(1, 100)), [.window(1)])
        XCTAssertEqual(h.send(1, Array(repeating: 1, count: 15), endStream: true), 15)
        XCTAssertEqual(h.drain(), [.data(1, Array(repeating: 1, count: 15), endStream: true)])
        XCTAssertEqual(h.conn.openStreamCount, 0)
    }

    func testSendDataIsLimitedByTheConnectionWindow() {
        let h = H2Harness()
        _ = h.feed(h.settings([Setting(.initialWindowSize, 100_000)]))
        for id: UInt32 in [1, 3] {
            _ = h.feed(h.headers(id, h.get()))
            h.respond(id, status: 200)
        }
        _ = h.drain()
        XCTAssertEqual(h.send(1, Array(repeating: 1, count: 60_000)), 60_000)
        XCTAssertEqual(h.conn.sendWindow(streamID: 3), 5535)
        XCTAssertEqual(h.send(3, Array(repeating: 2, count: 10_000)), 5535)
        let out = h.drain()
        XCTAssertEqual(out.count, 5)  // 16384 * 3 + 10848, then 5535
        XCTAssertEqual(h.feed(h.windowUpdate(0, 1000)), [.window(0)])
        XCTAssertEqual(h.conn.sendWindow(streamID: 3), 1000)
    }

    func testDataIsSplitAtThePeersMaxFrameSize() {
        let h = H2Harness()
        _ = h.feed(h.settings([Setting(.maxFrameSize, 20_000)]))
        _ = h.feed(h.headers(1, h.get()))
        h.respond(1, status: 200)
        _ = h.drain()
        XCTAssertEqual(h.send(1, Array(repeating: 1, count: 50_000), endStream: true), 50_000)
        let out = h.drain()
        XCTAssertEqual(out.map { if case .data(_, let b, let e) = $0 { return "\(b.count)\(e ? "E" : "")" } else { return "?" } },
                       ["20000", "20000", "10000E"])
    }

    func testEmptyEndStreamNeedsNoWindow() {
        let h = H2Harness()
        _ = h.feed(h.settings([Setting(.initialWindowSize, 0)]))
        _ = h.feed(h.headers(1, h.get()))
        h.respond(1, status: 200)
        XCTAssertEqual(h.send(1, [], endStream: true), 0)
        XCTAssertEqual(h.drain().last, .data(1, [], endStream: true))
        XCTAssertEqual(h.conn.openStreamCount, 0)
    }

    // §6.9.2: a change of SETTINGS_INITIAL_WINDOW_SIZE shifts open streams'
    // windows, possibly below zero.
    func testInitialWindowSizeChangeRebasesStreamSendWindows() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        h.respond(1, status: 200)
        XCTAssertEqual(h.send(1, Array(repeating: 0, count: 1000)), 1000)
        XCTAssertEqual(h.feed(h.settings([Setting(.initialWindowSize, 500)])), [])
        XCTAssertEqual(h.conn.sendWindow(streamID: 1), 0)  // 500 - 1000 < 0
        XCTAssertEqual(h.feed(h.windowUpdate(1, 600)), [.window(1)])
        XCTAssertEqual(h.conn.sendWindow(streamID: 1), 100)
        XCTAssertEqual(h.feed(h.settings([Setting(.initialWindowSize, 1500)])), [.window(0)])
        XCTAssertEqual(h.conn.sendWindow(streamID: 1), 1100)
    }

    // §6.9.1: "A sender MUST NOT allow a flow-control window to exceed 2^31-1
    // octets. If a sender receives a WINDOW_UPDATE that causes a flow-control
    // window to exceed this maximum, it MUST terminate either the stream or
    // the connection, as appropriate."
    func testWindowOverflow() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        _ = h.drain()
        XCTAssertEqual(h.feed(h.windowUpdate(1, 0x7fff_ffff)), [.reset(1, .flowControlError)])
        XCTAssertEqual(h.drain(), [.rst(1, .flowControlError)])
        XCTAssertEqual(h.feed(h.windowUpdate(0, 0x7fff_0000)), [.window(0)])
        XCTAssertEqual(h.feed(h.windowUpdate(0, 0x1_0000)).connectionError, .flowControlError)
    }

    func testInitialWindowSizeOverflowIsConnectionFlowControlError() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        _ = h.feed(h.windowUpdate(1, 0x7fff_0000))
        XCTAssertEqual(h.feed(h.settings([Setting(.initialWindowSize, 0x7fff_ffff)])).connectionError, .flowControlError)
    }
}
