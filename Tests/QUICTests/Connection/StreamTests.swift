// Streams through a connection (RFC 9000 §2-§4): delivery in and out of
// order, FIN, flow control with credit returned as the application reads,
// stream limits, resets, STOP_SENDING, and every stream error code.

import XCTest
import Core
@testable import QUIC

final class StreamTests: XCTestCase {
    private func established(_ configuration: QUICConfiguration = QUICConfiguration()) -> (ConnectionHarness, QUICConnection) {
        let h = ConnectionHarness(configuration: configuration)
        h.completeHandshake()
        XCTAssertEqual(h.takeEvents(), [.handshakeCompleted])
        return (h, h.connection!)
    }

    private func read(_ c: QUICConnection, _ id: UInt64, max: Int = .max) -> (bytes: [UInt8], fin: Bool)? {
        c.withReadableBytes(stream: id) { b, fin in
            let n = min(b.count, max)
            return (n, (Array(b[0..<n]), fin && n == b.count))
        }
    }

    private func closeFrames(_ packets: [ReceivedPacket]) -> [ConnectionCloseFrame] {
        packets.allFrames.compactMap { if case .connectionClose(let c) = $0 { c } else { nil } }
    }

    func testInOrderDataAndFin() {
        let (h, c) = established()
        h.send1RTT(Frames.stream(0, Array("GET /".utf8)))
        XCTAssertEqual(h.takeEvents(), [.streamOpened(0), .streamReadable(0)])
        h.send1RTT(Frames.stream(0, offset: 5, Array(" HTTP".utf8), fin: true))
        XCTAssertEqual(h.takeEvents(), [.streamReadable(0)])
        let r = read(c, 0)
        XCTAssertEqual(r?.bytes, Array("GET / HTTP".utf8))
        XCTAssertEqual(r?.fin, true)
    }

    func testOutOfOrderDataIsReassembled() {
        let (h, c) = established()
        h.send1RTT(Frames.stream(4, offset: 6, Array("world".utf8), fin: true))
        XCTAssertEqual(h.takeEvents(), [.streamOpened(0), .streamOpened(4)], "stream 0 opens implicitly (§3.2)")
        XCTAssertEqual(read(c, 4)?.bytes, [])
        h.send1RTT(Frames.stream(4, offset: 0, Array("hello ".utf8)))
        XCTAssertEqual(h.takeEvents(), [.streamReadable(4)])
        let r = read(c, 4)
        XCTAssertEqual(r?.bytes, Array("hello world".utf8))
        XCTAssertEqual(r?.fin, true)
    }

    func testEmptyFinOnly() {
        let (h, c) = established()
        h.send1RTT(Frames.stream(0, [], fin: true))
        XCTAssertEqual(h.takeEvents(), [.streamOpened(0), .streamReadable(0)])
        XCTAssertEqual(read(c, 0)?.fin, true)
    }

    func testResponseDataAndFinReachTheClient() {
        let (h, c) = established()
        h.send1RTT(Frames.stream(0, Array("req".utf8), fin: true))
        _ = read(c, 0)
        let body = [UInt8](repeating: 0x61, count: 3000)
        XCTAssertEqual(body.withUnsafeBytes { c.write(stream: 0, $0, fin: true) }, 3000)
        let got = h.exchange().streamFrames(0)
        XCTAssertEqual(got.flatMap(\.data), body)
        XCTAssertEqual(got.last?.fin, true)
        XCTAssertEqual(got.map(\.offset), got.indices.map { i in got[..<i].reduce(0) { $0 + UInt64($1.data.count) } })
    }

    /// §4.2: MAX_STREAM_DATA / MAX_DATA go out as the application reads,
    /// not as bytes arrive.
    func testCreditReturnedOnlyAsRead() {
        var config = QUICConfiguration()
        config.initialMaxStreamDataBidiRemote = 1000
        config.initialMaxData = 4000
        let (h, c) = established(config)
        _ = h.exchange()
        h.send1RTT(Frames.stream(0, [UInt8](repeating: 1, count: 900)))
        var answer = h.exchange()
        XCTAssertFalse(answer.contains { if case .maxStreamData = $0 { true } else { false } })
        _ = read(c, 0, max: 400)
        answer = h.exchange()
        XCTAssertFalse(answer.contains { if case .maxStreamData = $0 { true } else { false } }, "less than half a window read")
        _ = read(c, 0)
        answer = h.exchange()
        XCTAssertTrue(answer.contains { $0 == .maxStreamData(MaxStreamDataFrame(streamID: 0, maximum: 1900)) })
        XCTAssertFalse(answer.contains { if case .maxData = $0 { true } else { false } })
        // Connection credit: 4000 window, MAX_DATA once 2000 were read.
        h.send1RTT(Frames.stream(0, offset: 900, [UInt8](repeating: 1, count: 1000)))
        h.send1RTT(Frames.stream(4, [UInt8](repeating: 1, count: 1000)))
        _ = read(c, 0)
        _ = read(c, 4)
        answer = h.exchange()
        XCTAssertTrue(answer.contains { $0 == .maxData(6900) })
    }

    func testStreamFlowControlError() {
        var config = QUICConfiguration()
        config.initialMaxStreamDataBidiRemote = 100
        let (h, _) = established(config)
        h.send1RTT(Frames.stream(0, [UInt8](repeating: 1, count: 101)))
        XCTAssertEqual(h.takeEvents().last, .closed(.local(errorCode: 0x03, application: false)))
        let close = closeFrames(h.exchange())
        XCTAssertEqual(close.first?.errorCode, 0x03)
        XCTAssertEqual(close.first?.frameType, FrameType.stream)
    }

    func testConnectionFlowControlError() {
        var config = QUICConfiguration()
        config.initialMaxData = 150
        let (h, _) = established(config)
        h.send1RTT(Frames.stream(0, [UInt8](repeating: 1, count: 100)))
        h.send1RTT(Frames.stream(4, [UInt8](repeating: 1, count: 51)))
        XCTAssertEqual(h.takeEvents().last, .closed(.local(errorCode: 0x03, application: false)))
    }

    /// §4.6: a stream ID above the limit.
    func testStreamLimitError() {
        var config = QUICConfiguration()
        config.initialMaxStreamsBidi = 2
        let (h, _) = established(config)
        h.send1RTT(Frames.stream(8, [1]))  // third bidi stream
        XCTAssertEqual(h.takeEvents().last, .closed(.local(errorCode: 0x04, application: false)))
    }

    /// §19.8: STREAM on our own stream not yet opened; STREAM on a
    /// send-only (our uni) stream; MAX_STREAM_DATA on a receive-only stream.
    func testStreamStateErrors() {
        for (frames, open) in [(Frames.stream(3, [1]), false), (Frames.stream(3, [1]), true), (Frames.maxStreamData(2, 10), false),
                               (Frames.stopSending(2, code: 1), false), (Frames.resetStream(3, code: 1, finalSize: 0), true),
                               (Frames.streamDataBlocked(3, 0), true), (Frames.stream(1, [1]), false)] {
            let (h, c) = established()
            if open { XCTAssertEqual(c.openUnidirectionalStream(), 3) }
            h.send1RTT(frames)
            XCTAssertEqual(h.takeEvents().last, .closed(.local(errorCode: 0x05, application: false)), "\(frames)")
        }
    }

    /// §4.5: every final-size rule.
    func testFinalSizeErrors() {
        let cases: [[[UInt8]]] = [
            [Frames.stream(0, [1, 2, 3], fin: true), Frames.stream(0, offset: 3, [4])],           // data past the final size
            [Frames.stream(0, [1, 2, 3], fin: true), Frames.stream(0, [1, 2], fin: true)],       // final size changed
            [Frames.stream(0, [1, 2, 3]), Frames.stream(0, [1], fin: true)],                     // below data received
            [Frames.stream(0, [1, 2, 3], fin: true), Frames.resetStream(0, code: 1, finalSize: 4)],  // reset changes it
            [Frames.stream(0, [1, 2, 3]), Frames.resetStream(0, code: 1, finalSize: 2)],         // reset below received
        ]
        for frames in cases {
            let (h, _) = established()
            for f in frames { h.send1RTT(f) }
            XCTAssertEqual(h.takeEvents().last, .closed(.local(errorCode: 0x06, application: false)), "\(frames)")
        }
    }

    /// §3.2, §4.5: a reset delivers the event, releases the unread bytes'
    /// credit, and the stream reads no more.
    func testPeerResetStream() {
        var config = QUICConfiguration()
        config.initialMaxData = 1000
        let (h, c) = established(config)
        h.send1RTT(Frames.stream(0, [UInt8](repeating: 1, count: 400)))
        h.send1RTT(Frames.resetStream(0, code: 0x10c, finalSize: 600))
        XCTAssertEqual(h.takeEvents(), [.streamOpened(0), .streamReadable(0), .streamReset(0, errorCode: 0x10c)])
        XCTAssertNil(read(c, 0))
        // All 600 bytes count as consumed: MAX_DATA moves to 1600.
        XCTAssertTrue(h.exchange().contains { $0 == .maxData(1600) })
    }

    /// §3.5: STOP_SENDING makes us reset our side with the same code.
    func testPeerStopSendingResetsOurSide() {
        let (h, c) = established()
        h.send1RTT(Frames.stream(0, [1], fin: true))
        _ = [UInt8](repeating: 2, count: 10).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }
        _ = h.exchange()
        h.send1RTT(Frames.stopSending(0, code: 0x10b))
        XCTAssertEqual(h.takeEvents().last, .stopSending(0, errorCode: 0x10b))
        let answer = h.exchange()
        XCTAssertTrue(answer.contains { $0 == .resetStream(ResetStreamFrame(streamID: 0, errorCode: 0x10b, finalSize: 10)) })
        XCTAssertEqual([UInt8](repeating: 3, count: 5).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }, 0)
    }

    func testApplicationResetAndStopSending() {
        let (h, c) = established()
        h.send1RTT(Frames.stream(0, [1, 2, 3]))
        c.resetStream(0, errorCode: 0x10c)
        c.stopSending(0, errorCode: 0x10d)
        let answer = h.exchange()
        XCTAssertTrue(answer.contains { $0 == .resetStream(ResetStreamFrame(streamID: 0, errorCode: 0x10c, finalSize: 0)) })
        XCTAssertTrue(answer.contains { $0 == .stopSending(StopSendingFrame(streamID: 0, errorCode: 0x10d)) })
        // Late data is discarded but its credit still returned.
        XCTAssertNil(read(c, 0))
    }

    /// §4.6: closing peer streams raises the limit with MAX_STREAMS.
    func testMaxStreamsAsStreamsClose() {
        var config = QUICConfiguration()
        config.initialMaxStreamsBidi = 4
        let (h, c) = established(config)
        for i: UInt64 in 0..<4 {
            h.send1RTT(Frames.stream(i * 4, [1], fin: true))
            _ = read(c, i * 4)
            _ = [UInt8]().withUnsafeBytes { c.write(stream: i * 4, $0, fin: true) }
        }
        let answer = h.exchange()
        XCTAssertFalse(answer.contains { if case .maxStreams = $0 { true } else { false } }, "streams close when the FINs are acknowledged")
        h.ack1RTT(answer)
        let after = h.exchange()
        XCTAssertTrue(after.contains { $0 == .maxStreams(StreamLimitFrame(bidirectional: true, limit: 8)) })
        XCTAssertEqual(c.streams.count, 0)
        h.send1RTT(Frames.stream(16, [1]))  // the fifth stream is now allowed
        XCTAssertEqual(h.takeEvents().last, .streamReadable(16))
    }

    /// Our unidirectional streams: limited by the peer's initial_max_streams_uni
    /// (3 in the test client), STREAMS_BLOCKED at the limit, more after MAX_STREAMS.
    func testOpenUnidirectionalStreams() {
        let (h, c) = established()
        XCTAssertEqual(c.openUnidirectionalStream(), 3)
        XCTAssertEqual(c.openUnidirectionalStream(), 7)
        XCTAssertEqual(c.openUnidirectionalStream(), 11)
        XCTAssertNil(c.openUnidirectionalStream())
        XCTAssertTrue(h.exchange().contains { $0 == .streamsBlocked(StreamLimitFrame(bidirectional: false, limit: 3)) })
        h.send1RTT(Frames.maxStreams(bidirectional: false, 4))
        XCTAssertEqual(c.openUnidirectionalStream(), 15)
        _ = [UInt8](repeating: 7, count: 20).withUnsafeBytes { c.write(stream: 3, $0, fin: true) }
        XCTAssertEqual(h.exchange().streamFrames(3).flatMap(\.data), [UInt8](repeating: 7, count: 20))
    }

    /// Our bidirectional streams (WebTransport's server streams): IDs 1, 5, …
    /// up to the peer's initial_max_streams_bidi (10 in the test client),
    /// STREAMS_BLOCKED (bidi) at the limit, more after MAX_STREAMS (bidi);
    /// the peer's data on them is read within initial_max_stream_data_bidi_local.
    func testOpenBidirectionalStreams() {
        var config = QUICConfiguration()
        config.initialMaxStreamDataBidiLocal = 1000
        let (h, c) = established(config)
        XCTAssertTrue(c.canOpenBidirectionalStream)
        XCTAssertEqual(c.openBidirectionalStream(), 1)
        XCTAssertEqual(c.openBidirectionalStream(), 5)
        // A stream of ours not opened yet is still a STREAM_STATE_ERROR (covered
        // by testStreamStateErrors for 1 before any open); 5 exists now.
        _ = [UInt8](repeating: 7, count: 20).withUnsafeBytes { c.write(stream: 5, $0, fin: true) }
        XCTAssertEqual(h.exchange().streamFrames(5).flatMap(\.data), [UInt8](repeating: 7, count: 20))
        h.send1RTT(Frames.stream(5, [1, 2, 3], fin: true))
        XCTAssertEqual(h.takeEvents(), [.streamReadable(5)])
        XCTAssertEqual(read(c, 5)?.bytes, [1, 2, 3])
        h.send1RTT(Frames.stream(1, [UInt8](repeating: 0, count: 1001)))  // past our window
        XCTAssertEqual(h.takeEvents().last, .closed(.local(errorCode: 0x03, application: false)))
    }

    func testBidirectionalStreamLimit() {
        let (h, c) = established()
        for i in 0..<10 { XCTAssertEqual(c.openBidirectionalStream(), UInt64(4 * i + 1)) }
        XCTAssertFalse(c.canOpenBidirectionalStream)
        XCTAssertNil(c.openBidirectionalStream())
        XCTAssertTrue(h.exchange().contains { $0 == .streamsBlocked(StreamLimitFrame(bidirectional: true, limit: 10)) })
        h.send1RTT(Frames.maxStreams(bidirectional: true, 11))
        XCTAssertEqual(c.openBidirectionalStream(), 41)
        XCTAssertNotNil(c.openUnidirectionalStream())  // the two kinds are counted apart
    }

    /// Our sending is bounded by the peer's limits; *_BLOCKED frames say so
    /// and MAX_STREAM_DATA / MAX_DATA release the rest.
    func testSendFlowControlAndBlockedFrames() {
        let client = TestClient()
        client.parameters.initialMaxStreamDataBidiLocal = 1000
        client.parameters.initialMaxData = 1500
        let h = ConnectionHarness(client: client)
        h.completeHandshake()
        let c = h.connection!
        h.send1RTT(Frames.stream(0, [1], fin: true))
        h.send1RTT(Frames.stream(4, [1], fin: true))
        _ = h.takeEvents()
        let body = [UInt8](repeating: 9, count: 2000)
        XCTAssertEqual(body.withUnsafeBytes { c.write(stream: 0, $0, fin: true) }, 2000)
        XCTAssertEqual(body.withUnsafeBytes { c.write(stream: 4, $0, fin: true) }, 2000)
        var answer = h.exchange()
        XCTAssertEqual(answer.streamFrames(0).reduce(0) { $0 + $1.data.count }, 1000)
        XCTAssertEqual(answer.streamFrames(4).reduce(0) { $0 + $1.data.count }, 500)
        XCTAssertTrue(answer.contains { $0 == .streamDataBlocked(StreamDataBlockedFrame(streamID: 0, limit: 1000)) })
        XCTAssertTrue(answer.contains { $0 == .dataBlocked(1500) })
        h.send1RTT(Frames.maxData(10_000) + Frames.maxStreamData(0, 5000) + Frames.maxStreamData(4, 5000))
        answer = h.exchange()
        XCTAssertEqual(answer.streamFrames(0).reduce(0) { $0 + $1.data.count }, 1000)
        XCTAssertEqual(answer.streamFrames(4).reduce(0) { $0 + $1.data.count }, 1500)
        XCTAssertEqual(answer.streamFrames(0).last?.fin, true)
    }

    /// write() takes what fits the send buffer; space freed by ACKs raises
    /// .streamWritable.
    func testWriteBackpressureAndWritableEvent() {
        var config = QUICConfiguration()
        config.maxSendBufferPerStream = 1000
        let (h, c) = established(config)
        h.send1RTT(Frames.stream(0, [1], fin: true))
        _ = h.takeEvents()
        let body = [UInt8](repeating: 5, count: 1500)
        XCTAssertEqual(body.withUnsafeBytes { c.write(stream: 0, $0, fin: false) }, 1000)
        XCTAssertEqual(c.sendBufferSpace(stream: 0), 0)
        let answer = h.exchange()
        h.ack1RTT(answer)
        XCTAssertEqual(h.takeEvents(), [.streamWritable(0)])
        XCTAssertEqual(c.sendBufferSpace(stream: 0), 1000)
    }
}
