// The session's unidirectional streams (RFC 9114 §6.2, §6.2.1, §6.2.3,
// §7.2.4, §7.2.8; RFC 9204 §4.2): what we open and send first, and what the
// client's control, QPACK and unknown streams may and may not do.

import XCTest
import Core
import HTTPFields
@testable import HTTP3

final class H3SessionStreamsTests: XCTestCase {
    // §6.2.1: "Each side MUST initiate a single control stream at the
    // beginning of the connection and send its SETTINGS frame as the first
    // frame on this stream"; §7.2.4.1 a reserved setting, §7.2.8 a reserved
    // frame; RFC 9204 §4.2 the encoder and decoder stream types.
    func testLocalStreamsStartWithTypesSettingsAndGrease() throws {
        let g = Glue()
        XCTAssertTrue(g.session.hasPendingOutput)
        let control = try Parse.controlStream(g.output(.control))
        XCTAssertEqual(control.type, 0x00)
        XCTAssertEqual(control.events, [.settings(H3Settings(qpackMaxTableCapacity: 4096, qpackBlockedStreams: 100,
                                                             maxFieldSectionSize: 16384))],
                       "the reserved setting and frame are ignored by a conforming reader")
        XCTAssertEqual(g.output(.qpackEncoder), [0x02])
        XCTAssertEqual(g.output(.qpackDecoder), [0x03])
        XCTAssertFalse(g.session.hasPendingOutput, "written once")
        XCTAssertEqual(g.output(.control), [])
        XCTAssertEqual(H3LocalStream.allCases.map(\.streamID), [3, 7, 11])
        XCTAssertEqual(H3LocalStream(streamID: 7), .qpackEncoder)
        XCTAssertNil(H3LocalStream(streamID: 15))
        XCTAssertNil(H3LocalStream(streamID: 4))
    }

    /// The raw control stream: the reserved setting identifier and the
    /// reserved frame type are `0x1f * N + 0x21` and vary with the seed.
    func testGreaseIsReservedAndVariesWithTheSeed() throws {
        var seen: Set<[UInt8]> = []
        for seed: UInt64 in [0, 1, 0x1234_5678_9abc_def0, .max] {
            let g = Glue(greaseSeed: seed)
            let bytes = g.output(.control)
            seen.insert(bytes)
            try bytes.withUnsafeBytes { (p: UnsafeRawBufferPointer) throws in
                var i = 1
                // SETTINGS: walk its parameters; exactly one is reserved.
                let (type, n) = QUICVarInt.decode(p, at: i)!; i += n
                XCTAssertEqual(type, 0x04)
                let (length, m) = QUICVarInt.decode(p, at: i)!; i += m
                let end = i + Int(length)
                var reserved = 0
                while i < end {
                    let (id, a) = QUICVarInt.decode(p, at: i)!; i += a
                    let (_, b) = QUICVarInt.decode(p, at: i)!; i += b
                    if H3Grease.isReserved(id) { reserved += 1 }
                }
                XCTAssertEqual(reserved, 1)
                let (frameType, c) = QUICVarInt.decode(p, at: i)!; i += c
                XCTAssertTrue(H3Grease.isReserved(frameType), "a reserved frame follows SETTINGS")
                let (frameLength, d) = QUICVarInt.decode(p, at: i)!; i += d
                XCTAssertEqual(i + Int(frameLength), p.count)
            }
        }
        XCTAssertEqual(seen.count, 4)
    }

    // RFC 9220 §3: SETTINGS_ENABLE_CONNECT_PROTOCOL only when enabled.
    func testEnableConnectProtocolIsAnnounced() throws {
        var l = H3Limits()
        l.enableConnectProtocol = true
        l.qpackMaxTableCapacity = 0
        l.qpackBlockedStreams = 0
        l.maxFieldSectionSize = 8000
        let g = Glue(l)
        XCTAssertEqual(try Parse.controlStream(g.output(.control)).events,
                       [.settings(H3Settings(maxFieldSectionSize: 8000, enableConnectProtocol: true))])
        XCTAssertEqual(g.session.localSettings.enableConnectProtocol, true)
    }

    // The client's SETTINGS, split at every byte, give one event; unknown and
    // reserved settings and frames are ignored (§7.2.4, §9); MAX_PUSH_ID is
    // accepted and ignored (we never push); GOAWAY is reported.
    func testClientControlStreamSplitAtEveryByte() throws {
        let settings = H3Settings(qpackMaxTableCapacity: 100, maxFieldSectionSize: 900)
        var payload = settings.encodedPayload(grease: H3Grease.value(7), greaseValue: 3)
        payload += Wire.varint(0x4242) + Wire.varint(9)  // unknown setting
        let wire = [0x00] + Wire.frame(0x04, payload) + Wire.frame(H3Grease.value(2), [1, 2, 3])
            + Wire.frame(0x0d, Wire.varint(8)) + Wire.frame(0x21 + 0x1f * 100, []) + Wire.frame(0x07, Wire.varint(4))
            + Wire.frame(0x0d, Wire.varint(9)) + Wire.frame(0x07, Wire.varint(0))
        for size in [wire.count, 1, 2, 3, 5] {
            let g = Glue()
            g.deliver(2, wire, pieceSize: size)
            XCTAssertEqual(g.take(), [.settings(settings), .goAway(4), .goAway(0)], "pieces of \(size)")
            XCTAssertEqual(g.session.peerSettings, settings)
        }
    }

    // §6.2.1: "If the first frame of the control stream is any other frame
    // type, this MUST be treated as a connection error of type
    // H3_MISSING_SETTINGS."
    func testFirstControlFrameMustBeSettings() {
        for first in [Wire.frame(0x07, [0]), Wire.frame(H3Grease.value(1), []), Wire.frame(0x0d, [1])] {
            let g = Glue()
            g.deliver(2, [0x00] + first)
            XCTAssertEqual(g.take(), [.error(2, .missingSettings)])
            XCTAssertEqual(H3Error.missingSettings.code, .missingSettings)
        }
    }

    // §7.2.4: "If an endpoint receives a second SETTINGS frame on the control
    // stream, the endpoint MUST respond with a connection error of type
    // H3_FRAME_UNEXPECTED"; §7.2.1/§7.2.2: DATA and HEADERS on the control
    // stream, H3_FRAME_UNEXPECTED; §7.2.8: HTTP/2 frame types likewise;
    // §7.2.5 PUSH_PROMISE from a client; §7.2.3 CANCEL_PUSH of a push never
    // promised, H3_ID_ERROR; §7.2.4.1 HTTP/2 settings, H3_SETTINGS_ERROR.
    func testControlStreamFrameRules() {
        let settings = Wire.control(H3Settings())
        let cases: [([UInt8], H3Error)] = [
            (settings + Wire.frame(0x04, []), .secondSettings),
            (settings + Wire.frame(0x00, [1]), .dataOnControlStream),
            (settings + Wire.frame(0x01, [0, 0]), .headersOnControlStream),
            (settings + Wire.frame(0x05, [0, 0, 0]), .pushPromiseOnControlStream),
            (settings + Wire.frame(0x02, []), .http2FrameType),
            (settings + Wire.frame(0x06, [0, 0, 0, 0, 0, 0, 0, 0]), .http2FrameType),
            (settings + Wire.frame(0x08, [0, 0, 0, 1]), .http2FrameType),
            (settings + Wire.frame(0x09, []), .http2FrameType),
            (settings + Wire.frame(0x03, [0]), .cancelUnknownPush),
            (settings + Wire.frame(0x07, [8]) + Wire.frame(0x07, [9]), .goawayIDIncreased),
            (settings + Wire.frame(0x0d, [8]) + Wire.frame(0x0d, [7]), .maxPushIDDecreased),
            (settings + Wire.frame(0x07, [0x40]), .framePayloadMismatch),
            ([0x00] + Wire.frame(0x04, [0x02, 0x00]), .http2Setting),
            ([0x00] + Wire.frame(0x04, [0x01, 0x00, 0x01, 0x00]), .duplicateSetting),
            ([0x00] + Wire.frame(0x04, [0x08, 0x02]), .invalidSettingValue),
        ]
        for (wire, error) in cases {
            let g = Glue()
            g.deliver(2, wire)
            let events = g.take()
            XCTAssertEqual(events.last, .error(2, error), "\(error)")
            XCTAssertTrue(error.isConnectionError)
        }
        XCTAssertEqual(H3Error.secondSettings.code, .frameUnexpected)
        XCTAssertEqual(H3Error.http2FrameType.code, .frameUnexpected)
        XCTAssertEqual(H3Error.http2Setting.code, .settingsError)
        XCTAssertEqual(H3Error.cancelUnknownPush.code, .idError)
    }

    /// H3Limits.maxSettingsFrameBytes: a longer SETTINGS is refused before
    /// it is buffered (H3_EXCESSIVE_LOAD).
    func testSettingsFrameOverTheLimit() {
        var l = H3Limits()
        l.maxSettingsFrameBytes = 64
        let g = Glue(l)
        g.deliver(2, [0x00] + Wire.varint(0x04) + Wire.varint(65))
        XCTAssertEqual(g.take(), [.error(2, .frameTooLarge)])
        let ok = Glue(l)
        ok.deliver(2, [0x00] + Wire.frame(0x04, Array(repeating: 0x21, count: 64)))
        XCTAssertEqual(ok.take(), [.error(2, .duplicateSetting)], "64 bytes are read (and judged)")
        XCTAssertEqual(H3Error.frameTooLarge.code, .excessiveLoad)
    }

    // §6.2.1 / RFC 9204 §4.2: one control, encoder and decoder stream each;
    // §6.2.2: "Only servers can push".
    func testSecondCriticalStreamAndPushStreamAreStreamCreationErrors() {
        let cases: [(UInt64, [UInt8], H3Error)] = [
            (0x00, Wire.control(H3Settings()), .duplicateControlStream),
            (0x02, [0x02], .duplicateEncoderStream),
            (0x03, [0x03], .duplicateDecoderStream),
        ]
        for (_, wire, error) in cases {
            let g = Glue()
            g.startClient()
            g.deliver(14, wire)
            XCTAssertEqual(g.take(), [.error(14, error)])
            XCTAssertEqual(error.code, .streamCreationError)
        }
        let g = Glue()
        g.deliver(2, [0x01, 0x00])
        XCTAssertEqual(g.take(), [.error(2, .pushStreamFromClient)])
        XCTAssertEqual(H3Error.pushStreamFromClient.code, .streamCreationError)
    }

    // §6.2.3: unknown and reserved stream types are not errors; we ask the
    // client to stop (H3_STREAM_CREATION_ERROR) and drop what comes.
    func testUnknownStreamTypesAreIgnored() {
        let g = Glue()
        g.startClient()
        let grease = Wire.varint(H3Grease.value(3))
        g.deliver(14, grease, pieceSize: 1)
        g.deliver(14, [1, 2, 3, 4])
        g.deliver(18, Wire.varint(0x54) + [9, 9], fin: true)
        XCTAssertEqual(g.take(), [.ignored(14, .streamCreationError), .ignored(18, .streamCreationError)])
        g.deliver(14, [5], fin: true)
        XCTAssertEqual(g.take(), [])
        XCTAssertNil(g.session.connectionFailure)
    }

    // §6.2: "A receiver MUST tolerate unidirectional streams being closed or
    // reset prior to the reception of the unidirectional stream header."
    func testStreamClosedOrResetBeforeItsTypeIsNothing() {
        let g = Glue()
        g.deliver(14, [], fin: true)
        g.deliver(18, [0x40], fin: true)  // half a two-byte type
        g.deliver(22, [0x80, 0x00])
        g.reset(22)
        XCTAssertEqual(g.take(), [])
        g.startClient()
        XCTAssertNil(g.session.connectionFailure, "the streams can still be opened for real")
    }

    // §6.2.1: "If either control stream is closed at any point, this MUST be
    // treated as a connection error of type H3_CLOSED_CRITICAL_STREAM";
    // RFC 9204 §4.2 the same for the encoder and decoder streams — by FIN
    // or by reset.
    func testClosingAClientCriticalStreamIsClosedCriticalStream() {
        let cases: [(UInt64, H3Error)] = [(2, .closedControlStream), (6, .closedEncoderStream), (10, .closedDecoderStream)]
        for (id, error) in cases {
            let g = Glue()
            g.startClient()
            g.deliver(id, [], fin: true)
            XCTAssertEqual(g.take(), [.error(id, error)])
            let r = Glue()
            r.startClient()
            r.reset(id)
            XCTAssertEqual(r.take(), [.error(id, error)])
            XCTAssertEqual(error.code, .closedCriticalStream)
        }
        let g = Glue()
        g.deliver(2, Wire.control(H3Settings()), fin: true)
        XCTAssertEqual(g.take(), [.settings(H3Settings()), .error(2, .closedControlStream)], "SETTINGS then FIN")
    }

    // §6.2.1: "the receiver MUST NOT request that the sender close the
    // control stream" — a STOP_SENDING for any of our critical streams.
    func testStopSendingOnOurCriticalStreamsIsClosedCriticalStream() {
        let cases: [(H3LocalStream, H3Error)] = [(.control, .stopSendingOnControlStream),
                                                 (.qpackEncoder, .stopSendingOnEncoderStream),
                                                 (.qpackDecoder, .stopSendingOnDecoderStream)]
        for (s, error) in cases {
            let g = Glue()
            g.stopSending(s.streamID)
            XCTAssertEqual(g.take(), [.error(s.streamID, error)])
            XCTAssertEqual(error.code, .closedCriticalStream)
        }
    }

    // RFC 9204 §4.4: our encoder never inserts, so a Section Acknowledgment
    // or Insert Count Increment from the client's decoder is an error; a
    // Stream Cancellation is fine.
    func testClientDecoderStreamInstructions() {
        let ok = Glue()
        ok.deliver(10, [0x03, 0x44, 0x7f], pieceSize: 1)
        ok.deliver(10, [0x05])
        XCTAssertEqual(ok.take(), [])
        let ack = Glue()
        ack.deliver(10, [0x03, 0x84])
        XCTAssertEqual(ack.take(), [.error(10, .qpackUnexpectedAcknowledgment)])
        let increment = Glue()
        increment.deliver(10, [0x03, 0x01])
        XCTAssertEqual(increment.take(), [.error(10, .qpackBadInsertCountIncrement)])
        XCTAssertEqual(H3Error.qpackBadInsertCountIncrement.code, .qpackDecoderStreamError)
    }

    // STYLE §3 "sticky failure": after a connection error all input is
    // swallowed, no events, and the send calls do nothing.
    func testConnectionErrorIsSticky() {
        let g = Glue()
        g.deliver(0, Wire.headers(Wire.get))
        XCTAssertEqual(g.take().count, 1)
        g.deliver(2, [0x00] + Wire.frame(0x07, [0]))
        XCTAssertEqual(g.take(), [.error(2, .missingSettings)])
        XCTAssertTrue(g.session.isFinished)
        XCTAssertTrue(g.session.isClosing)
        XCTAssertEqual(g.session.connectionFailure, .missingSettings)
        let (e, n) = [UInt8](Wire.headers(Wire.get)).withUnsafeBytes { g.session.receive(streamID: 4, $0, fin: true) }
        XCTAssertNil(e)
        XCTAssertEqual(n, Wire.headers(Wire.get).count)
        XCTAssertNil(g.session.peerOpened(streamID: 8))
        XCTAssertNil(g.session.peerReset(streamID: 2, code: .noError))
        XCTAssertFalse(g.session.canSend(streamID: 0))
        var out: [UInt8] = []
        g.session.beginHeaders(streamID: 0, status: 200)
        XCTAssertTrue(g.session.endHeaders(into: &out))
        XCTAssertEqual(out, [], "nothing is sent on a failed connection")
        g.session.goAway()
        XCTAssertNil(g.session.goAwayID)
    }
}
