// WebTransportRegistry: data streams and datagrams — headers, holding,
// limits, resets, session flow control (draft-ietf-webtrans-http3 §4.2–§4.6,
// §5; draft-02 §4; RFC 9297 §2.1).

import XCTest
@testable import HTTP3

final class WebTransportStreamsTests: XCTestCase {
    private let gone = WebTransportErrorCode.sessionGone
    private let rejected = WebTransportErrorCode.bufferedStreamRejected
    private let fcError = WebTransportErrorCode.flowControlError

    private func draft02Session() -> WTGlue {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.acceptedSession(0, .draft02)
        return g
    }

    // Session ID 0 (one byte), 64 (two bytes: 40 40), then data; whole, at
    // every split, with the FIN.
    func testStreamHeaderAndDataWholeAndSplit() {
        for piece in [1, 2, 100] {
            let g = WTGlue()
            g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
            g.acceptedSession(64, .draft02)
            g.open(2, bidirectional: false)
            g.deliver(2, hex("40 40") + bytes("abc"), fin: true, pieceSize: piece)
            let got = g.take()
            XCTAssertEqual(got.last, .data(64, 2, piece >= 5 ? "abc" : "c", fin: true), "pieces of \(piece)")
            XCTAssertEqual(got.map { if case .data(_, _, let s, _) = $0 { s } else { "?" } }.joined(), "abc")
            XCTAssertEqual(g.wt.session(ofStream: 2), 64)
        }
    }

    func testEmptyFinIsDelivered() {
        let g = draft02Session()
        g.open(4, bidirectional: true)
        g.deliver(4, hex("00"))
        XCTAssertEqual(g.take(), [])
        g.deliver(4, [], fin: true)
        XCTAssertEqual(g.take(), [.data(0, 4, "", fin: true)])
    }

    // §4.6: streams for a session not yet there are held, their bytes left
    // in QUIC, and released on accept.
    func testStreamBeforeItsSessionIsHeldAndReleased() {
        let g = WTGlue()
        g.open(2, bidirectional: false)
        g.deliver(2, hex("00") + bytes("early"))
        g.open(4, bidirectional: true)
        g.deliver(4, hex("00") + bytes("bidi"), fin: true)
        XCTAssertEqual(g.take(), [])
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.wt.connectReceived(streamID: 0, draft: .draft02)
        XCTAssertEqual(g.take(), [.requested(0, .draft02)])
        g.wt.accept(sessionID: 0)
        XCTAssertEqual(g.take(), [.released(2), .data(0, 2, "early", fin: false), .released(4), .data(0, 4, "bidi", fin: true)])
    }

    // §4.6: "When the number of buffered streams is exceeded, a stream MUST
    // be closed ... with the WT_BUFFERED_STREAM_REJECTED error code."
    func testHeldStreamsOverTheBoundAreRejected() {
        var l = WebTransportLimits()
        l.maxBufferedStreams = 2
        let g = WTGlue(l)
        for id: UInt64 in [2, 6, 10] {
            g.open(id, bidirectional: false)
            g.deliver(id, hex("00"))
        }
        XCTAssertEqual(g.take(), [.abort(10, rejected)])
        g.wt.peerReset(streamID: 6, code: .noError)
        g.open(14, bidirectional: false)
        g.deliver(14, hex("00"))
        XCTAssertEqual(g.take(), [], "a reset freed a slot")
    }

    // A stream for a session that ended: WT_SESSION_GONE.
    func testStreamForAGoneSessionIsAborted() {
        let g = draft02Session()
        _ = g.wt.close(sessionID: 0, code: 0, message: [])
        g.open(2, bidirectional: false)
        g.deliver(2, hex("00") + bytes("late"))
        XCTAssertEqual(g.take(), [.abort(2, gone)])
    }

    // draft-02 §4: a session ID that cannot be a client bidirectional stream
    // is a connection error H3_ID_ERROR.
    func testInvalidSessionIDIsIDError() {
        for sid: UInt8 in [1, 2, 3] {
            let g = WTGlue()
            g.open(2, bidirectional: false)
            g.deliver(2, [sid])
            XCTAssertEqual(g.take(), [.connectionError(.idError)])
            g.datagram([0, 1])
            XCTAssertEqual(g.take(), [], "nothing after the connection error")
        }
    }

    func testStreamEndingInsideItsHeaderIsNothing() {
        let g = draft02Session()
        g.open(2, bidirectional: false)
        g.deliver(2, hex("40"), fin: true)
        XCTAssertEqual(g.take(), [])
        XCTAssertNil(g.wt.session(ofStream: 2))
    }

    // §4.4: reset and STOP_SENDING codes map back to application codes;
    // outside the range (or a reserved codepoint) there is none.
    func testPeerResetAndStopSendingMapCodes() {
        let g = draft02Session()
        g.open(4, bidirectional: true)
        g.deliver(4, hex("00"))
        g.wt.peerReset(streamID: 4, code: WebTransportErrorCode.http3Code(application: 0x1e))
        g.wt.peerStopSending(streamID: 4, code: H3ErrorCode(rawValue: 0x52e4_a40f_a8db))
        g.wt.peerStopSending(streamID: 4, code: .requestCancelled)
        XCTAssertEqual(g.take(), [.reset(0, 4, 0x1e), .stopped(0, 4, 0), .stopped(0, 4, nil)])
        XCTAssertEqual(WebTransportErrorCode.http3Code(application: 0x1e).rawValue, 0x52e4_a40f_a8fa, "skips 0x…a8f9")
    }

    // Our streams: the header, attached to the session, aborted with it.
    func testLocalStreamsBelongToTheSession() {
        let g = draft02Session()
        XCTAssertTrue(g.wt.openStream(sessionID: 0, bidirectional: false))
        XCTAssertEqual(g.wt.localStreamOpened(sessionID: 0, streamID: 3, bidirectional: false), hex("40 54 00"))
        XCTAssertEqual(g.wt.session(ofStream: 3), 0)
        g.wt.peerStopSending(streamID: 3, code: WebTransportErrorCode.http3Code(application: 9))
        XCTAssertEqual(g.take(), [.stopped(0, 3, 9)])
        g.wt.streamFinished(streamID: 3)
        XCTAssertNil(g.wt.session(ofStream: 3))
        XCTAssertFalse(g.wt.openStream(sessionID: 8, bidirectional: true), "no such session")
    }

    // MARK: flow control (current draft §5)

    private func h3Session(_ l: WebTransportLimits, client: H3Settings) -> WTGlue {
        let g = WTGlue(l)
        g.wt.peerSettingsReceived(client)
        g.acceptedSession(0, .h3)
        return g
    }

    // §5.6.2: a stream beyond our WT_MAX_STREAMS closes the session with
    // WT_FLOW_CONTROL_ERROR; finished streams give credit back.
    func testPeerStreamsBeyondTheLimitFailTheSession() {
        var l = WebTransportLimits()
        l.initialMaxStreamsUni = 2
        let g = h3Session(l, client: WTGlue.settings(h3: true, maxData: 1))
        for id: UInt64 in [2, 6] {
            g.open(id, bidirectional: false)
            g.deliver(id, hex("00"))
        }
        XCTAssertEqual(g.take(), [])
        g.open(10, bidirectional: false)
        g.deliver(10, hex("00"))
        XCTAssertEqual(g.take(), [.abort(10, gone), .abort(2, gone), .abort(6, gone), .failed(0, fcError)])
    }

    func testFinishedPeerStreamsRaiseWTMaxStreams() {
        var l = WebTransportLimits()
        l.initialMaxStreamsBidi = 2
        let g = h3Session(l, client: WTGlue.settings(h3: true, maxData: 1))
        for id: UInt64 in [4, 8] {
            g.open(id, bidirectional: true)
            g.deliver(id, hex("00"))
        }
        g.wt.streamFinished(streamID: 4)
        // Limit 1 + 2 = 3 ≥ 2 + 1: WT_MAX_STREAMS (bidi, 0x190b4d3f) = 3.
        XCTAssertEqual(g.wt.takeOutput(sessionID: 0), hex("99 0b 4d 3f 01 03"))
        g.open(12, bidirectional: true)
        g.deliver(12, hex("00"))
        XCTAssertEqual(g.take(), [], "the third is within the raised limit")
    }

    // §5.6.4: stream body beyond WT_MAX_DATA (headers not counted).
    func testDataBeyondTheLimitFailsTheSession() {
        var l = WebTransportLimits()
        l.initialMaxData = 4
        let g = h3Session(l, client: WTGlue.settings(h3: true, maxData: 1))
        g.open(2, bidirectional: false)
        g.deliver(2, hex("00") + bytes("abcd"))
        XCTAssertEqual(g.take(), [.data(0, 2, "abcd", fin: false)])
        g.deliver(2, bytes("e"))
        XCTAssertEqual(g.take(), [.abort(2, gone), .failed(0, fcError)])
    }

    /// The bytes within WT_MAX_DATA are delivered, then the session fails:
    /// the same bytes whether the crossing read is whole or cut
    /// (fuzz-h3-session: regression-wt-flow-limit-split).
    func testTheBytesWithinTheLimitAreDeliveredWhateverTheCuts() {
        var l = WebTransportLimits()
        l.initialMaxData = 4
        var seen: [String] = []
        for cut in [false, true] {
            let g = h3Session(l, client: WTGlue.settings(h3: true, maxData: 1))
            g.open(2, bidirectional: false)
            if cut {
                g.deliver(2, hex("00") + bytes("abc"))
                g.deliver(2, bytes("def"))
            } else {
                g.deliver(2, hex("00") + bytes("abcdef"))
            }
            seen.append(g.take().map { if case .data(_, _, let text, _) = $0 { text } else { "" } }.joined())
        }
        XCTAssertEqual(seen, ["abcd", "abcd"])
        let g = h3Session(l, client: WTGlue.settings(h3: true, maxData: 1))
        g.open(2, bidirectional: false)
        g.deliver(2, hex("00") + bytes("abcdef"), fin: true)
        XCTAssertEqual(g.take(), [.data(0, 2, "abcd", fin: false), .abort(2, gone), .failed(0, fcError)])
    }

    func testConsumedDataRaisesWTMaxData() {
        var l = WebTransportLimits()
        l.initialMaxData = 10
        let g = h3Session(l, client: WTGlue.settings(h3: true, maxData: 1))
        g.open(2, bidirectional: false)
        g.deliver(2, hex("00") + bytes("0123456789"))
        _ = g.take()
        g.wt.dataConsumed(sessionID: 0, count: 4)
        XCTAssertEqual(g.wt.sessionsWithOutput, [], "less than half a window")
        g.wt.dataConsumed(sessionID: 0, count: 1)
        // 5 consumed + 10 = 15: WT_MAX_DATA (0x190b4d3d) = 15.
        XCTAssertEqual(g.wt.takeOutput(sessionID: 0), hex("99 0b 4d 3d 01 0f"))
        g.deliver(2, bytes("abcde"))
        XCTAssertEqual(g.take(), [.data(0, 2, "abcde", fin: false)])
    }

    // Send side: the client's limits, raised by its capsules; blocked once
    // per limit (WT_DATA_BLOCKED 0x190b4d41, WT_STREAMS_BLOCKED 0x190b4d43).
    func testSendSideFollowsTheClientLimits() {
        let g = h3Session(WebTransportLimits(), client: WTGlue.settings(h3: true, maxData: 3, bidi: 1))
        XCTAssertEqual(g.wt.sendAllowance(sessionID: 0), 3)
        g.wt.didSend(sessionID: 0, count: 3)
        XCTAssertEqual(g.wt.sendAllowance(sessionID: 0), 0)
        XCTAssertEqual(g.wt.sendAllowance(sessionID: 0), 0)
        XCTAssertEqual(g.wt.takeOutput(sessionID: 0), hex("99 0b 4d 41 01 03"), "once")
        g.connectData(0, capsule(.maxData(8)))
        XCTAssertEqual(g.wt.sendAllowance(sessionID: 0), 5)

        XCTAssertTrue(g.wt.openStream(sessionID: 0, bidirectional: true))
        XCTAssertFalse(g.wt.openStream(sessionID: 0, bidirectional: true))
        XCTAssertFalse(g.wt.openStream(sessionID: 0, bidirectional: true))
        XCTAssertEqual(g.wt.takeOutput(sessionID: 0), hex("99 0b 4d 43 01 01"), "once")
        g.connectData(0, capsule(.maxStreams(bidirectional: true, 2)))
        XCTAssertTrue(g.wt.openStream(sessionID: 0, bidirectional: true))
        XCTAssertEqual(g.take(), [])
    }

    // MARK: datagrams (RFC 9297 §2.1)

    func testDatagramsAreRoutedByQuarterStreamID() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.acceptedSession(0, .draft02)
        g.acceptedSession(8, .draft02)
        g.datagram(hex("02") + bytes("to 8"))
        g.datagram(hex("00") + bytes("to 0"))
        g.datagram(hex("00"))
        XCTAssertEqual(g.take(), [.datagram(8, "to 8"), .datagram(0, "to 0"), .datagram(0, "")])
        var prefix: [UInt8] = []
        WebTransportRegistry.appendDatagramPrefix(sessionID: 8, to: &prefix)
        XCTAssertEqual(prefix, [2])
    }

    func testDatagramsBeforeTheSessionAreHeldBoundedOldestDropped() {
        var l = WebTransportLimits()
        l.maxBufferedDatagrams = 2
        let g = WTGlue(l)
        for s in ["a", "b", "c"] { g.datagram(hex("00") + bytes(s)) }
        XCTAssertEqual(g.wt.droppedDatagrams, 1)
        XCTAssertEqual(g.wt.heldDatagramsDropped, 1, "counted as a full queue")
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.acceptedSession(0, .draft02)
        XCTAssertEqual(g.events, [.datagram(0, "b"), .datagram(0, "c")])
    }

    func testDatagramForAGoneSessionIsDropped() {
        let g = draft02Session()
        _ = g.wt.close(sessionID: 0, code: 0, message: [])
        g.datagram(hex("00") + bytes("late"))
        XCTAssertEqual(g.take(), [])
        XCTAssertEqual(g.wt.droppedDatagrams, 1)
        XCTAssertEqual(g.wt.goneDatagramsDropped, 1, "counted as for no session")
        XCTAssertFalse(g.wt.canSendDatagram(sessionID: 0))
    }

    // RFC 9297 §2.1: no quarter stream ID, or one over 2^60-1 →
    // H3_DATAGRAM_ERROR.
    func testMalformedDatagramIsDatagramError() {
        // 2^60 as an eight-byte varint: d0 00 … 00.
        for bad in [[], hex("40"), hex("d0 00 00 00 00 00 00 00")] as [[UInt8]] {
            let g = WTGlue()
            g.datagram(bad)
            XCTAssertEqual(g.take(), [.connectionError(H3Datagram.datagramError)], "\(bad)")
        }
    }

    // §5.4: a reset stream's final size counts against WT_MAX_DATA (the
    // header — signal 2 bytes, session ID 1 — excluded).
    func testResetFinalSizeCountsAgainstTheDataLimit() {
        var l = WebTransportLimits()
        l.initialMaxData = 10
        let g = h3Session(l, client: WTGlue.settings(h3: true, maxData: 1))
        g.open(2, bidirectional: false)
        g.deliver(2, hex("00") + bytes("abc"))
        _ = g.take()
        g.wt.peerReset(streamID: 2, code: WebTransportErrorCode.http3Code(application: 1), finalSize: 3 + 11)
        XCTAssertEqual(g.take(), [.abort(2, gone), .failed(0, fcError)])

        let ok = h3Session(l, client: WTGlue.settings(h3: true, maxData: 1))
        ok.open(2, bidirectional: false)
        ok.deliver(2, hex("00") + bytes("abc"))
        _ = ok.take()
        ok.wt.peerReset(streamID: 2, code: WebTransportErrorCode.http3Code(application: 1), finalSize: 3 + 10)
        XCTAssertEqual(ok.take(), [.reset(0, 2, 1)])
        // The 7 bytes never delivered are credited at once: WT_MAX_DATA 17.
        XCTAssertEqual(ok.wt.takeOutput(sessionID: 0), hex("99 0b 4d 3d 01 11"))
        ok.wt.dataConsumed(sessionID: 0, count: 3)
        XCTAssertEqual(ok.wt.sessionsWithOutput, [], "20 is less than half a window above 17")
    }
}
