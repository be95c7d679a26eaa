// Connection preface and SETTINGS exchange (RFC 9113 §3.4, §6.5).

import XCTest
import Core
@testable import HTTP2

final class H2ConnectionHandshakeTests: XCTestCase {
    func testInitQueuesOurSettingsAndConnectionWindowUpdate() {
        let h = H2Harness(handshake: false)
        XCTAssertEqual(h.drain(), [
            .settings([Setting(.enablePush, 0), Setting(.maxConcurrentStreams, 100),
                       Setting(.initialWindowSize, 256 * 1024), Setting(.maxHeaderListSize, 16384)]),
            .windowUpdate(0, UInt32((1 << 20) - 65535)),
        ])
    }

    func testNonDefaultLimitsAreAdvertised() {
        var l = H2Limits()
        l.headerTableSize = 0
        l.maxFrameSize = 32768
        l.enableConnectProtocol = true
        l.initialStreamWindow = 65535
        l.connectionWindow = 65535
        let h = H2Harness(limits: l, handshake: false)
        XCTAssertEqual(h.drain(), [
            .settings([Setting(.headerTableSize, 0), Setting(.enablePush, 0), Setting(.maxConcurrentStreams, 100),
                       Setting(.maxFrameSize, 32768), Setting(.maxHeaderListSize, 16384),
                       Setting(.enableConnectProtocol, 1)]),
        ])
    }

    func testPrefaceThenSettingsIsAcknowledged() {
        let h = H2Harness(handshake: false)
        _ = h.drain()
        XCTAssertEqual(h.feed(ConnectionPreface.bytes), [])
        XCTAssertEqual(h.unconsumedInput, 0)
        XCTAssertEqual(h.feed(h.settings([Setting(.maxFrameSize, 20000)])), [])
        XCTAssertEqual(h.drain(), [.settingsAck])
    }

    func testPartialPrefaceWaits() {
        let h = H2Harness(handshake: false)
        XCTAssertEqual(h.feed(Array(ConnectionPreface.bytes[0 ..< 10])), [])
        XCTAssertEqual(h.unconsumedInput, 10)
        XCTAssertFalse(h.conn.isClosing)
    }

    // §3.4: a wrong preface is a connection error PROTOCOL_ERROR.
    func testWrongPrefaceIsProtocolError() {
        let h = H2Harness(handshake: false)
        _ = h.drain()
        let events = h.feed(bytes("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        XCTAssertEqual(events, [.connectionError(.protocolError, "client connection preface mismatch")])
        XCTAssertEqual(h.drain().goAwayCode, .protocolError)
        XCTAssertTrue(h.conn.isFinished)
        XCTAssertEqual(h.unconsumedInput, 0)
    }

    // §3.4: the request line `PRI * HTTP/2.0` with a wrong rest of the
    // preface is an invalid preface too, decided at the first wrong octet.
    func testPRIRequestLineWithAWrongRestIsProtocolError() {
        let h = H2Harness(handshake: false)
        _ = h.drain()
        let events = h.feed(bytes("PRI * HTTP/2.0\r\n\r\nXY\r\n\r\n"))
        XCTAssertEqual(events, [.connectionError(.protocolError, "client connection preface mismatch")])
        XCTAssertEqual(h.drain().goAwayCode, .protocolError)
        XCTAssertTrue(h.conn.isFinished)
    }

    // §3.4: "That is, the connection preface ... MUST be followed by a SETTINGS frame."
    func testFirstFrameOtherThanSettingsIsProtocolError() {
        for first in [H2Harness(handshake: false).ping(1), H2Harness(handshake: false).settingsAck(),
                      rawFrame(.priority, stream: 1, [0, 0, 0, 0, 0, 0, 0, 0, 1])] {
            let h = H2Harness(handshake: false)
            _ = h.drain()
            XCTAssertEqual(h.feed(ConnectionPreface.bytes + first).connectionError, .protocolError)
            XCTAssertEqual(h.drain(), [.goAway(0, .protocolError, "first frame after the preface is not SETTINGS")])
        }
    }

    func testSettingsAckStopsTheTimer() {
        let h = H2Harness(handshake: false)
        h.now = ms(5_000)
        _ = h.feed(ConnectionPreface.bytes + h.settings([]))
        XCTAssertEqual(h.conn.nextDeadline, ms(15_000))
        _ = h.feed(h.settingsAck())
        XCTAssertNil(h.conn.nextDeadline)
        XCTAssertNil(h.conn.expireDeadlines(now: ms(100_000)))
    }

    // §6.5.3: "If the sender of a SETTINGS frame does not receive an
    // acknowledgment within a reasonable amount of time, it MAY issue a
    // connection error of type SETTINGS_TIMEOUT."
    func testSettingsAckTimeoutIsSettingsTimeout() {
        let h = H2Harness(handshake: false)
        _ = h.drain()
        h.now = ms(0)
        _ = h.feed(ConnectionPreface.bytes + h.settings([]))
        XCTAssertNil(h.conn.expireDeadlines(now: ms(9_999)))
        guard case .connectionError(let code, _)? = h.conn.expireDeadlines(now: ms(10_000)) else { return XCTFail() }
        XCTAssertEqual(code, .settingsTimeout)
        XCTAssertEqual(h.drain().last, .goAway(0, .settingsTimeout, "SETTINGS not acknowledged in time"))
        XCTAssertNil(h.conn.nextDeadline)
        XCTAssertTrue(h.conn.isFinished)
    }

    func testEverySettingsFrameIsAcknowledged() {
        let h = H2Harness()
        _ = h.drain()
        _ = h.feed(h.settings([]) + h.settings([Setting(.headerTableSize, 100)]))
        XCTAssertEqual(h.drain(), [.settingsAck, .settingsAck])
    }

    func testUnsolicitedSettingsAckIsIgnored() {
        let h = H2Harness()
        _ = h.drain()
        XCTAssertEqual(h.feed(h.settingsAck()), [])
        XCTAssertEqual(h.drain(), [])
    }

    // §6.5.2: invalid values, each with its code.
    func testInvalidSettingsValuesAreConnectionErrors() {
        let cases: [(Setting, HTTP2ErrorCode)] = [
            (Setting(.enablePush, 2), .protocolError),
            (Setting(.initialWindowSize, 0x8000_0000), .flowControlError),
            (Setting(.maxFrameSize, 16383), .protocolError),
            (Setting(.maxFrameSize, 1 << 24), .protocolError),
            (Setting(.enableConnectProtocol, 2), .protocolError),
        ]
        for (setting, code) in cases {
            let h = H2Harness()
            XCTAssertEqual(h.feed(h.settings([setting])).connectionError, code, "\(setting)")
            XCTAssertEqual(h.drain().goAwayCode, code)
        }
    }

    func testSettingsOnAStreamOrWithBadLengthAreConnectionErrors() {
        let h = H2Harness()
        XCTAssertEqual(h.feed(rawFrame(.settings, stream: 1, [])).connectionError, .protocolError)
        let h2 = H2Harness()
        XCTAssertEqual(h2.feed(rawFrame(.settings, stream: 0, [0, 1, 0])).connectionError, .frameSizeError)
        let h3 = H2Harness()
        XCTAssertEqual(h3.feed(rawFrame(.settings, flags: .ack, stream: 0, [0, 1, 0, 0, 0, 0])).connectionError, .frameSizeError)
    }

    func testUnknownSettingIsIgnored() {
        let h = H2Harness()
        _ = h.drain()
        XCTAssertEqual(h.feed(h.settings([Setting(SettingsParameter(rawValue: 0x99), 7)])), [])
        XCTAssertEqual(h.drain(), [.settingsAck])
    }

    // §6.5.3: our values bind only after the ack — a bigger frame is refused
    // before it, accepted after it.
    func testOurMaxFrameSizeAppliesOnlyOnceAcknowledged() {
        var l = H2Limits()
        l.maxFrameSize = 32768
        let early = H2Harness(limits: l, handshake: false)
        _ = early.feed(ConnectionPreface.bytes + early.settings([]))
        XCTAssertEqual(early.feed(early.ping(1) + rawFrame(FrameType(rawValue: 0x42), stream: 0, Array(repeating: 0, count: 20000))).connectionError,
                       .frameSizeError)
        let late = H2Harness(limits: l)
        XCTAssertEqual(late.feed(rawFrame(FrameType(rawValue: 0x42), stream: 0, Array(repeating: 0, count: 20000))), [])
    }
}
