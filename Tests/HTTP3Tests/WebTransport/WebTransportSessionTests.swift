// WebTransportRegistry: sessions — classification by the client's SETTINGS
// and :protocol, limits, accept/refuse, the CONNECT stream's capsules and
// the session's end both ways (draft-ietf-webtrans-http3 §3, §4.7, §5.1,
// §5.2, §6; draft-02 §3, §5).

import XCTest
import Core
@testable import HTTP3

final class WebTransportSessionTests: XCTestCase {
    private let gone = WebTransportErrorCode.sessionGone
    private let fcError = WebTransportErrorCode.flowControlError

    // draft-02 §3.1 / current §3.1: "the server MUST NOT process any incoming
    // WebTransport requests until the client's SETTINGS have been received".
    func testConnectBeforeSettingsIsHeldThenClassified() {
        let g = WTGlue()
        g.wt.connectReceived(streamID: 0, draft: .draft02)
        g.wt.connectReceived(streamID: 4, draft: .h3)
        XCTAssertEqual(g.take(), [], "held")
        XCTAssertNil(g.wt.draft(ofSession: 0))
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true, h3: true, maxData: 10))
        XCTAssertEqual(g.take(), [.requested(0, .draft02), .requested(4, .h3)])
        XCTAssertEqual(g.wt.draft(ofSession: 4), .h3)
    }

    // One server, both drafts, each session by its own :protocol.
    func testBothDraftsOnOneConnection() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true, h3: true, bidi: 5))
        g.acceptedSession(0, .draft02)
        g.acceptedSession(4, .h3)
        XCTAssertTrue(g.wt.isAccepted(sessionID: 0) && g.wt.isAccepted(sessionID: 4))
    }

    // Current §3.1: SETTINGS without the required values make every
    // WebTransport session malformed (H3_MESSAGE_ERROR, RFC 9114 §4.1.2).
    func testSettingsThatDoNotAllowTheDraftRefuseTheSession() {
        for (settings, draft) in [(WTGlue.settings(h3: true), WebTransportDraft.draft02),
                                  (WTGlue.settings(draft02: true), .h3),
                                  (WTGlue.settings(draft02: true, h3: true, datagram: false), .draft02),
                                  (WTGlue.settings(draft02: true, h3: true, datagram: false), .h3)] {
            let g = WTGlue()
            g.wt.peerSettingsReceived(settings)
            g.wt.connectReceived(streamID: 8, draft: draft)
            XCTAssertEqual(g.take(), [.refused(8, .messageError)], "\(draft)")
            XCTAssertEqual(g.wt.sessionCount, 0)
        }
    }

    // §5.2 / draft-02 §3.4: over our limit, H3_REQUEST_REJECTED ("not
    // processed in any way"); a slot frees when a session ends.
    func testSessionLimitRejectsTheOneOver() {
        var l = WebTransportLimits()
        l.maxSessions = 2
        let g = WTGlue(l)
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.acceptedSession(0, .draft02)
        g.wt.connectReceived(streamID: 4, draft: .draft02)
        g.wt.connectReceived(streamID: 8, draft: .draft02)
        XCTAssertEqual(g.take(), [.requested(4, .draft02), .refused(8, .requestRejected)])
        _ = g.wt.close(sessionID: 0, code: 0, message: [])
        g.wt.connectReceived(streamID: 12, draft: .draft02)
        XCTAssertEqual(g.take(), [.requested(12, .draft02)])
    }

    func testHeldBeforeSettingsCountTowardsTheLimit() {
        var l = WebTransportLimits()
        l.maxSessions = 1
        let g = WTGlue(l)
        g.wt.connectReceived(streamID: 0, draft: .h3)
        g.wt.connectReceived(streamID: 4, draft: .h3)
        XCTAssertEqual(g.take(), [.refused(4, .requestRejected)])
    }

    // §5.1: without flow control from the client, "A server that receives
    // more than one session ... MUST reset the excessive CONNECT streams with
    // a H3_REQUEST_REJECTED status".
    func testWithoutClientFlowControlOnlyOneCurrentDraftSession() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(h3: true))
        g.acceptedSession(0, .h3)
        g.wt.connectReceived(streamID: 4, draft: .h3)
        XCTAssertEqual(g.take(), [.refused(4, .requestRejected)])
    }

    // WT_CLOSE_SESSION in: the session ends with its code and message, its
    // streams are aborted with WT_SESSION_GONE (§6).
    func testCloseCapsuleFromPeerEndsSessionAndAbortsItsStreams() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.acceptedSession(0, .draft02)
        g.open(4, bidirectional: true)
        g.deliver(4, hex("00") + bytes("x"))
        XCTAssertEqual(g.take(), [.data(0, 4, "x", fin: false)])
        // Type 0x2843 (two-byte varint 68 43), length 7, code 0x0000002a, "bye".
        let close = hex("68 43 07 00 00 00 2a") + bytes("bye")
        XCTAssertEqual(close, capsule(.closeSession(code: 42, message: bytes("bye"))))
        g.connectData(0, close, fin: true)
        XCTAssertEqual(g.take(), [.abort(4, gone), .closed(0, 42, "bye")])
        XCTAssertFalse(g.wt.isAccepted(sessionID: 0))
    }

    func testCloseCapsuleSplitAtEveryByte() {
        let close = capsule(.closeSession(code: 7, message: bytes("done")))
        for cut in 1..<close.count {
            let g = WTGlue()
            g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
            g.acceptedSession(0, .draft02)
            g.connectData(0, Array(close[..<cut]))
            XCTAssertEqual(g.take(), [], "cut at \(cut)")
            g.connectData(0, Array(close[cut...]))
            XCTAssertEqual(g.take(), [.closed(0, 7, "done")], "cut at \(cut)")
        }
    }

    // §6: "If any additional stream data is received on the CONNECT stream
    // after receiving a WT_CLOSE_SESSION capsule, the stream MUST be reset
    // with code H3_MESSAGE_ERROR."
    func testDataAfterCloseCapsuleIsMessageError() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.acceptedSession(0, .draft02)
        g.connectData(0, capsule(.closeSession(code: 1, message: [])) + hex("00"))
        XCTAssertEqual(g.take(), [.closed(0, 1, ""), .failed(0, .messageError)])

        let later = WTGlue()
        later.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        later.acceptedSession(0, .draft02)
        later.connectData(0, capsule(.closeSession(code: 1, message: [])))
        XCTAssertEqual(later.take(), [.closed(0, 1, "")])
        later.connectData(0, capsule(.drainSession))
        XCTAssertEqual(later.take(), [.failed(0, .messageError)])
        later.connectData(0, [], fin: true)
        XCTAssertEqual(later.take(), [], "the FIN alone is fine")
    }

    /// A capsule that fails to decode (a close message that is not UTF-8)
    /// ends the session with its error, also when a later capsule header in
    /// the same read is too large for the reader (fuzz-h3-session:
    /// regression-wt-first-capsule-error).
    func testTheFirstCapsuleErrorIsTheOneReported() throws {
        let badClose = hex("6843") + [6] + hex("0000000a") + [0xCF, 0xD7]  // WT_CLOSE_SESSION, message not UTF-8
        let huge = hex("00") + hex("bfffffffffffffff")  // a DATAGRAM capsule claiming 2^62 - 1 bytes
        var codes: [String] = []
        for whole in [true, false] {
            let g = WTGlue()
            g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
            g.acceptedSession(0, .draft02)
            if whole {
                g.connectData(0, badClose + huge)
            } else {
                g.connectData(0, badClose)
                g.connectData(0, huge)
            }
            codes.append("\(g.take())")
        }
        XCTAssertEqual(codes[0], codes[1])
    }

    /// The reset for data after the close is asked for once, however the
    /// bytes are cut (fuzz-h3-session found the failure reported again for
    /// each later chunk: fuzz/corpus/h3-session/regression-wt-failed-twice).
    func testDataAfterCloseFailsTheSessionOnceWhateverTheCuts() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.acceptedSession(0, .draft02)
        g.connectData(0, capsule(.closeSession(code: 1, message: [])) + hex("00"))
        XCTAssertEqual(g.take(), [.closed(0, 1, ""), .failed(0, .messageError)])
        g.connectData(0, hex("0102"))
        g.connectData(0, hex("03"), fin: true)
        XCTAssertEqual(g.take(), [], "already failed")

        let h = WTGlue()
        h.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        h.acceptedSession(0, .draft02)
        h.connectData(0, capsule(.closeSession(code: 1, message: [])))
        XCTAssertEqual(h.take(), [.closed(0, 1, "")])
        h.connectData(0, hex("00"))
        h.connectData(0, hex("00"))
        XCTAssertEqual(h.take(), [.failed(0, .messageError)])
    }

    // §6: a clean FIN without the capsule is code 0 and no message; a FIN
    // inside a capsule is malformed (RFC 9297 §3.3).
    func testFinWithoutCapsuleIsCloseZeroAndFinInsideCapsuleIsMessageError() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.acceptedSession(0, .draft02)
        g.connectData(0, [], fin: true)
        XCTAssertEqual(g.take(), [.closed(0, 0, "")])

        let h = WTGlue()
        h.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        h.acceptedSession(0, .draft02)
        h.open(2, bidirectional: false)
        h.deliver(2, hex("00"))
        h.connectData(0, hex("68 43 07 00"), fin: true)
        XCTAssertEqual(h.take(), [.abort(2, gone), .failed(0, .messageError)])
    }

    // A malformed close capsule: a message over 1024 bytes or not UTF-8 →
    // H3_MESSAGE_ERROR (§6); a value shorter than the code the same.
    func testMalformedCloseCapsulesAreMessageErrors() {
        for value in [[0, 0, 0], [0, 0, 0, 0, 0xff], [0, 0, 0, 0] + [UInt8](repeating: 0x61, count: 1025)] as [[UInt8]] {
            let g = WTGlue()
            g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
            g.acceptedSession(0, .draft02)
            var c: [UInt8] = []
            value.withUnsafeBytes { CapsuleWriter.append(type: CapsuleType.closeSession, value: $0, to: &c) }
            g.connectData(0, c)
            XCTAssertEqual(g.take(), [.failed(0, .messageError)], "\(value.count) bytes")
        }
    }

    // Unknown capsule types are skipped (RFC 9297 §3.2), also the prohibited
    // WT_MAX_STREAM_DATA (0x190b4d3e) of the HTTP/2 mapping.
    func testUnknownCapsulesAreSkipped() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.acceptedSession(0, .draft02)
        g.connectData(0, hex("17 03 01 02 03") + hex("80 00 00 21 00") + capsule(.drainSession))
        XCTAssertEqual(g.take(), [.draining(0)])
    }

    // The peer's reset of the CONNECT stream ends the session (§6).
    func testConnectStreamResetEndsSession() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.acceptedSession(0, .draft02)
        g.open(4, bidirectional: true)
        g.deliver(4, hex("00"))
        g.wt.connectStreamReset(sessionID: 0)
        XCTAssertEqual(g.take(), [.abort(4, gone), .closed(0, 0, "")])
    }

    // Our close: queued capsules, then WT_CLOSE_SESSION; our streams and
    // theirs are aborted with WT_SESSION_GONE.
    func testOurCloseReturnsTheCapsuleAndAbortsStreams() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(h3: true, maxData: 100, bidi: 1))
        g.acceptedSession(0, .h3)
        XCTAssertTrue(g.wt.openStream(sessionID: 0, bidirectional: false) == false, "the client allows no uni stream")
        let header = g.wt.localStreamOpened(sessionID: 0, streamID: 1, bidirectional: true)
        XCTAssertEqual(header, hex("40 41 00"))
        let out = g.wt.close(sessionID: 0, code: 0x1234, message: bytes("é"))
        XCTAssertEqual(out, capsule(.streamsBlocked(bidirectional: false, 0)) + hex("68 43 06 00 00 12 34 c3 a9"))
        XCTAssertEqual(g.take(), [.abort(1, gone)])
        XCTAssertEqual(g.wt.close(sessionID: 0, code: 0, message: []), [], "once")
    }

    // Current §3.2: bytes before our 2xx are not capsules yet; they are read
    // on accept, dropped on refusal, and bounded.
    func testEarlyCapsulesAreReadOnAccept() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.wt.connectReceived(streamID: 0, draft: .draft02)
        XCTAssertEqual(g.take(), [.requested(0, .draft02)])
        g.connectData(0, capsule(.datagram(bytes("early"))) + capsule(.drainSession))
        XCTAssertEqual(g.take(), [])
        g.wt.accept(sessionID: 0)
        XCTAssertEqual(g.take(), [.datagram(0, "early"), .draining(0)])
    }

    func testEarlyBytesOverTheBoundFailTheSession() {
        var l = WebTransportLimits()
        l.maxEarlyConnectBytes = 8
        let g = WTGlue(l)
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.wt.connectReceived(streamID: 0, draft: .draft02)
        _ = g.take()
        g.connectData(0, [UInt8](repeating: 0, count: 8))
        XCTAssertEqual(g.take(), [])
        g.connectData(0, [0])
        XCTAssertEqual(g.take(), [.failed(0, .excessiveLoad)])
    }

    func testEarlyFinIsSeenOnAccept() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.wt.connectReceived(streamID: 0, draft: .draft02)
        _ = g.take()
        g.connectData(0, [], fin: true)
        g.wt.accept(sessionID: 0)
        XCTAssertEqual(g.take(), [.closed(0, 0, "")])
    }

    // GOAWAY: WT_DRAIN_SESSION (0x78ae, length 0) for the current draft, an
    // event for the application in both (§4.7).
    func testGoAwayDrainsEverySession() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true, h3: true, uni: 1))
        g.acceptedSession(0, .draft02)
        g.acceptedSession(4, .h3)
        g.wt.goAway()
        XCTAssertEqual(g.take(), [.draining(0), .draining(4)])
        XCTAssertEqual(g.wt.sessionsWithOutput, [4])
        XCTAssertEqual(g.wt.takeOutput(sessionID: 4), hex("80 00 78 ae 00"))
        XCTAssertEqual(g.wt.takeOutput(sessionID: 0), [])
        XCTAssertEqual(g.wt.sessionsWithOutput, [])
        g.wt.goAway()
        XCTAssertEqual(g.take(), [], "once")
        g.wt.connectReceived(streamID: 8, draft: .h3)
        XCTAssertEqual(g.take(), [.requested(8, .h3)])
        g.wt.accept(sessionID: 8)
        XCTAssertEqual(g.take(), [.draining(8)], "accepted after the GOAWAY: drained at once")
        XCTAssertEqual(g.wt.takeOutput(sessionID: 8), hex("80 00 78 ae 00"))
    }

    func testRefusalAbortsHeldStreamsAndDropsHeldDatagrams() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.wt.connectReceived(streamID: 0, draft: .draft02)
        _ = g.take()
        g.open(2, bidirectional: false)
        g.deliver(2, hex("00") + bytes("held"))
        g.datagram(hex("00") + bytes("d"))
        XCTAssertEqual(g.take(), [])
        g.wt.refuse(sessionID: 0)
        XCTAssertEqual(g.take(), [.abort(2, WebTransportErrorCode.bufferedStreamRejected)])
        XCTAssertEqual(g.wt.droppedDatagrams, 1)
        XCTAssertEqual(g.wt.goneDatagramsDropped, 1, "counted as for no session")
    }

    // A CONNECT that turned out to be an ordinary request: what was held for
    // that ID goes.
    func testOrdinaryRequestReleasesNothingAndRejectsHeld() {
        let g = WTGlue()
        g.open(2, bidirectional: false)
        g.deliver(2, hex("08"))
        g.wt.ordinaryRequest(streamID: 8)
        XCTAssertEqual(g.take(), [.abort(2, WebTransportErrorCode.bufferedStreamRejected)])
    }

    // Flow-control capsules must increase (§5.6.2, §5.6.4); WT_MAX_STREAMS
    // over 2^60 is WT_FLOW_CONTROL_ERROR.
    func testFlowControlCapsulesThatDoNotIncreaseFailTheSession() {
        for (first, second) in [(capsule(.maxData(10)), capsule(.maxData(10))),
                                (capsule(.maxStreams(bidirectional: true, 3)), capsule(.maxStreams(bidirectional: true, 2))),
                                (capsule(.maxStreams(bidirectional: false, 3)), capsule(.maxStreams(bidirectional: false, 3)))] {
            let g = WTGlue()
            g.wt.peerSettingsReceived(WTGlue.settings(h3: true, maxData: 1))
            g.acceptedSession(0, .h3)
            g.connectData(0, first)
            XCTAssertEqual(g.take(), [])
            g.connectData(0, second)
            XCTAssertEqual(g.take(), [.failed(0, fcError)])
        }
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(h3: true, maxData: 1))
        g.acceptedSession(0, .h3)
        var big: [UInt8] = []
        QUICVarInt.append((1 << 60) + 1, to: &big)
        var c: [UInt8] = []
        big.withUnsafeBytes { CapsuleWriter.append(type: CapsuleType.maxStreamsBidi, value: $0, to: &c) }
        g.connectData(0, c)
        XCTAssertEqual(g.take(), [.failed(0, fcError)])
    }

    // §5.1: "if flow control is not enabled, an endpoint MUST ignore receipt
    // of any flow control capsules".
    func testFlowControlCapsulesAreIgnoredWithoutFlowControl() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.acceptedSession(0, .draft02)
        g.connectData(0, capsule(.maxData(10)) + capsule(.maxData(5)) + capsule(.dataBlocked(1)))
        XCTAssertEqual(g.take(), [])
        XCTAssertEqual(g.wt.sendAllowance(sessionID: 0), .max)
    }

    // Gone sessions are remembered up to `closedSessionMemory`; past it the
    // oldest is forgotten and a stream naming it is held like any unknown.
    func testClosedSessionMemoryIsBounded() {
        var l = WebTransportLimits()
        l.closedSessionMemory = 1
        let g = WTGlue(l)
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.acceptedSession(0, .draft02)
        g.acceptedSession(4, .draft02)
        _ = g.wt.close(sessionID: 0, code: 0, message: [])
        g.open(2, bidirectional: false)
        g.deliver(2, hex("00"))
        XCTAssertEqual(g.take(), [.abort(2, gone)], "0 remembered")
        _ = g.wt.close(sessionID: 4, code: 0, message: [])
        g.open(6, bidirectional: false)
        g.deliver(6, hex("00"))
        XCTAssertEqual(g.take(), [], "0 forgotten: held")
    }

    // A CONNECT reset while held for SETTINGS: the application never saw it.
    func testResetWhileHeldForSettingsTellsNoOne() {
        let g = WTGlue()
        g.wt.connectReceived(streamID: 0, draft: .h3)
        g.wt.connectStreamReset(sessionID: 0)
        XCTAssertEqual(g.take(), [])
        XCTAssertEqual(g.wt.sessionCount, 0)
        g.wt.peerSettingsReceived(WTGlue.settings(h3: true))
        XCTAssertEqual(g.take(), [])
    }

    func testOnlyTheFirstSettingsCount() {
        let g = WTGlue()
        g.wt.peerSettingsReceived(WTGlue.settings(h3: true))
        g.wt.peerSettingsReceived(WTGlue.settings(draft02: true))
        g.wt.connectReceived(streamID: 0, draft: .draft02)
        XCTAssertEqual(g.take(), [.refused(0, .messageError)])
    }
}
