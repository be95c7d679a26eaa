// Session flow control of the current draft (draft-ietf-webtrans-http3 §5),
// as a value: limits crossed, credit steps, capsule ordering.

import XCTest
@testable import HTTP3

final class WebTransportFlowControlTests: XCTestCase {
    private func settings(data: UInt64, bidi: UInt64, uni: UInt64) -> H3WebTransportSettings {
        var s = H3WebTransportSettings()
        s.initialMaxData = data
        s.initialMaxStreamsBidi = bidi
        s.initialMaxStreamsUni = uni
        return s
    }

    // A kind we gave no streams (initial 0) never gets any: credit comes
    // back in steps of half the initial window, and a window of 0 has none.
    func testZeroWindowNeverRaises() {
        var f = WebTransportFlowControl(local: settings(data: 0, bidi: 1, uni: 0), peer: settings(data: 0, bidi: 0, uni: 0))
        XCTAssertThrowsError(try f.peerOpenedStream(bidirectional: false))
        XCTAssertThrowsError(try f.receivedData(1))
        XCTAssertNoThrow(try f.receivedData(0))
        XCTAssertNil(f.consumedData(0))
        XCTAssertNil(f.peerStreamFinished(bidirectional: false))
    }

    func testStreamCreditStepsByHalfAWindow() throws {
        var f = WebTransportFlowControl(local: settings(data: 1, bidi: 4, uni: 1), peer: settings(data: 0, bidi: 0, uni: 0))
        for _ in 0..<4 { try f.peerOpenedStream(bidirectional: true) }
        XCTAssertThrowsError(try f.peerOpenedStream(bidirectional: true), "the fifth")
        XCTAssertNil(f.peerStreamFinished(bidirectional: true), "1 + 4 = 5 is less than 4 + 2")
        XCTAssertEqual(f.peerStreamFinished(bidirectional: true), 6)
        try f.peerOpenedStream(bidirectional: true)
        try f.peerOpenedStream(bidirectional: true)
        XCTAssertThrowsError(try f.peerOpenedStream(bidirectional: true))
        // A window of 1: every finished stream gives one back.
        try f.peerOpenedStream(bidirectional: false)
        XCTAssertEqual(f.peerStreamFinished(bidirectional: false), 2)
    }

    // §5.6.2: the limit never goes past 2^60.
    func testStreamLimitIsCappedAt2To60() {
        var f = WebTransportFlowControl(local: settings(data: 1, bidi: WebTransportCapsule.maxStreamCount, uni: 0),
                                        peer: settings(data: 0, bidi: 0, uni: 0))
        XCTAssertNil(f.peerStreamFinished(bidirectional: true))
        XCTAssertEqual(f.localMaxStreams.bidi, WebTransportCapsule.maxStreamCount)
    }

    // The client's limits: initial from its SETTINGS; each capsule must
    // increase on the last capsule (not on the setting); the effective limit
    // never shrinks.
    func testPeerLimitsFromSettingsThenCapsules() throws {
        var f = WebTransportFlowControl(local: settings(data: 1, bidi: 1, uni: 1), peer: settings(data: 10, bidi: 2, uni: 0))
        XCTAssertEqual(f.sendAllowance, 10)
        try f.receiveMaxData(5)
        XCTAssertEqual(f.sendAllowance, 10, "a capsule below the setting does not shrink it")
        XCTAssertThrowsError(try f.receiveMaxData(5))
        try f.receiveMaxData(20)
        f.didSend(20)
        XCTAssertEqual(f.sendAllowance, 0)
        XCTAssertEqual(f.dataBlocked(), 20)
        XCTAssertNil(f.dataBlocked(), "once per limit")
        XCTAssertFalse(f.openStream(bidirectional: false))
        XCTAssertEqual(f.streamsBlocked(bidirectional: false), 0)
        XCTAssertNil(f.streamsBlocked(bidirectional: false))
        XCTAssertTrue(f.openStream(bidirectional: true))
        XCTAssertTrue(f.openStream(bidirectional: true))
        XCTAssertFalse(f.openStream(bidirectional: true))
        try f.receiveMaxStreams(bidirectional: true, 3)
        XCTAssertThrowsError(try f.receiveMaxStreams(bidirectional: true, 3))
        XCTAssertTrue(f.openStream(bidirectional: true))
    }
}
