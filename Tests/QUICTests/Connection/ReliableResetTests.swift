// Reliable stream resets through a connection (draft-ietf-quic-reliable-
// stream-reset §5): RESET_STREAM_AT received — the bytes below the
// Reliable Size are delivered first, then the reset; a later reset only
// lowers the reliable size; RESET_STREAM's stream-state and final-size
// rules (RFC 9000 §19.4, §4.5) — and sent — RESET_STREAM_AT when the peer
// sent reset_stream_at, the reliable bytes (re)transmitted until
// acknowledged and no byte above them, RESET_STREAM when it did not.

import XCTest
import Core
@testable import QUIC

final class ReliableResetTests: XCTestCase {
    /// A connection that sent reset_stream_at, to a client that did if `peerAccepts`.
    private func established(peerAccepts: Bool = true, configure: (inout QUICConfiguration) -> Void = { _ in })
        -> (ConnectionHarness, QUICConnection) {
        var config = QUICConfiguration()
        config.reliableStreamReset = true
        configure(&config)
        let client = TestClient()
        client.parameters.resetStreamAt = peerAccepts
        let h = ConnectionHarness(configuration: config, client: client)
        h.ack1RTT(h.completeHandshake())
        XCTAssertEqual(h.takeEvents(), [.handshakeCompleted])
        return (h, h.connection!)
    }

    private func read(_ h: ConnectionHarness, _ c: QUICConnection, _ id: UInt64) -> (bytes: [UInt8], fin: Bool)? {
        let r = c.withReadableBytes(stream: id) { b, fin in (b.count, (Array(b), fin)) }
        h.collectEvents()
        return r
    }

    private let hello = Array("hello world!".utf8)  // 12 bytes

    // MARK: receiving

    /// §5: the bytes below the Reliable Size reach the application, then
    /// the reset with its code; never the bytes above it, nor a FIN.
    func testReliableBytesAreDeliveredBeforeTheReset() {
        let (h, c) = established()
        h.send1RTT(Frames.resetStreamAt(0, code: 0x2a, finalSize: 12, reliableSize: 5))
        XCTAssertEqual(h.takeEvents(), [.streamOpened(0)], "nothing to tell until the reliable bytes are read")
        h.send1RTT(Frames.stream(0, hello))
        XCTAssertEqual(h.takeEvents(), [.streamReadable(0)])
        let r = read(h, c, 0)
        XCTAssertEqual(r?.bytes, Array("hello".utf8))
        XCTAssertEqual(r?.fin, false)
        XCTAssertEqual(h.takeEvents(), [.streamReset(0, errorCode: 0x2a)])
        XCTAssertNil(read(h, c, 0), "reset: nothing more to read")
    }

    /// Reliable bytes that arrive in pieces, out of order, are read in
    /// order; the reset waits for the last of them.
    func testResetWaitsForEveryReliableByte() {
        let (h, c) = established()
        h.send1RTT(Frames.stream(0, offset: 3, Array(hello[3..<12])))
        h.send1RTT(Frames.resetStreamAt(0, code: 7, finalSize: 12, reliableSize: 6))
        _ = h.takeEvents()
        XCTAssertEqual(read(h, c, 0)?.bytes, [], "offset 0 missing")
        h.send1RTT(Frames.stream(0, Array(hello[0..<3])))
        XCTAssertEqual(h.takeEvents(), [.streamReadable(0)])
        XCTAssertEqual(c.withReadableBytes(stream: 0) { b, _ in (2, Array(b)) }, Array("hello ".utf8), "6 readable; 2 read")
        h.collectEvents()
        XCTAssertEqual(h.takeEvents(), [], "4 reliable bytes still unread")
        XCTAssertEqual(read(h, c, 0)?.bytes, Array("llo ".utf8))
        XCTAssertEqual(h.takeEvents(), [.streamReset(0, errorCode: 7)])
    }

    /// §5: a later RESET_STREAM_AT lowers the reliable size (its code with
    /// it), a larger one does not raise it.
    func testReliableSizeIsLoweredNeverRaised() {
        let (h, c) = established()
        h.send1RTT(Frames.resetStreamAt(0, code: 1, finalSize: 12, reliableSize: 8))
        h.send1RTT(Frames.resetStreamAt(0, code: 2, finalSize: 12, reliableSize: 11))
        h.send1RTT(Frames.resetStreamAt(0, code: 3, finalSize: 12, reliableSize: 4))
        h.send1RTT(Frames.resetStreamAt(0, code: 4, finalSize: 12, reliableSize: 10))
        h.send1RTT(Frames.stream(0, hello))
        XCTAssertEqual(h.takeEvents(), [.streamOpened(0), .streamReadable(0)])
        XCTAssertEqual(read(h, c, 0)?.bytes, Array("hell".utf8))
        XCTAssertEqual(h.takeEvents(), [.streamReset(0, errorCode: 3)])
    }

    /// RESET_STREAM is RESET_STREAM_AT with Reliable Size 0: it ends a
    /// pending reliable reset at once, unread reliable bytes dropped.
    func testResetStreamLowersTheReliableSizeToZero() {
        let (h, c) = established()
        h.send1RTT(Frames.stream(0, hello))
        h.send1RTT(Frames.resetStreamAt(0, code: 1, finalSize: 12, reliableSize: 8))
        XCTAssertEqual(h.takeEvents(), [.streamOpened(0), .streamReadable(0)])
        h.send1RTT(Frames.resetStream(0, code: 9, finalSize: 12))
        XCTAssertEqual(h.takeEvents(), [.streamReset(0, errorCode: 9)])
        XCTAssertNil(read(h, c, 0))
    }

    /// Reliable bytes all read already: the reset is told at once.
    func testReliableBytesAlreadyReadResetAtOnce() {
        let (h, c) = established()
        h.send1RTT(Frames.stream(0, Array(hello[0..<5])))
        XCTAssertEqual(read(h, c, 0)?.bytes, Array("hello".utf8))
        _ = h.takeEvents()
        h.send1RTT(Frames.resetStreamAt(0, code: 5, finalSize: 12, reliableSize: 5))
        XCTAssertEqual(h.takeEvents(), [.streamReset(0, errorCode: 5)])
    }

    /// The bytes above the Reliable Size will never be read: their credit
    /// returns at once (RFC 9000 §4.5 as for a reset), the reliable ones'
    /// as they are read.
    func testUnreliableBytesReturnTheirCreditAtOnce() {
        let (h, c) = established { $0.initialMaxData = 1000 }
        h.send1RTT(Frames.stream(0, [UInt8](repeating: 1, count: 400)))
        h.send1RTT(Frames.resetStreamAt(0, code: 1, finalSize: 600, reliableSize: 100))
        XCTAssertTrue(h.exchange().contains { $0 == .maxData(1500) }, "500 bytes never to be read")
        XCTAssertEqual(read(h, c, 0)?.bytes.count, 100)
        XCTAssertEqual(h.takeEvents().last, .streamReset(0, errorCode: 1))
    }

    /// RFC 9000 §19.4 (as RESET_STREAM): on a send-only stream, ours, a
    /// STREAM_STATE_ERROR.
    func testOnOurUnidirectionalStreamIsStreamStateError() {
        let (h, c) = established()
        XCTAssertEqual(c.openUnidirectionalStream(), 3)
        h.send1RTT(Frames.resetStreamAt(3, code: 1, finalSize: 0, reliableSize: 0))
        XCTAssertEqual(h.takeEvents().last, .closed(.local(errorCode: 0x05, application: false)))
    }

    /// RFC 9000 §4.5: every final-size rule applies to RESET_STREAM_AT.
    func testFinalSizeErrors() {
        let cases: [[[UInt8]]] = [
            [Frames.stream(0, [1, 2, 3], fin: true), Frames.resetStreamAt(0, code: 1, finalSize: 4, reliableSize: 1)],
            [Frames.stream(0, [1, 2, 3]), Frames.resetStreamAt(0, code: 1, finalSize: 2, reliableSize: 1)],
            [Frames.resetStreamAt(0, code: 1, finalSize: 10, reliableSize: 5), Frames.stream(0, [1, 2], fin: true)],
            [Frames.resetStreamAt(0, code: 1, finalSize: 10, reliableSize: 5), Frames.stream(0, offset: 9, [1, 2])],
            [Frames.resetStreamAt(0, code: 1, finalSize: 10, reliableSize: 5),
             Frames.resetStreamAt(0, code: 1, finalSize: 11, reliableSize: 5)],
        ]
        for frames in cases {
            let (h, _) = established()
            for f in frames { h.send1RTT(f) }
            XCTAssertEqual(h.takeEvents().last, .closed(.local(errorCode: 0x06, application: false)), "\(frames)")
        }
    }

    /// §3: without our reset_stream_at the frame is a PROTOCOL_VIOLATION;
    /// Reliable Size above Final Size a FRAME_ENCODING_ERROR.
    func testConnectionErrorsOfTheDecoder() {
        let h = ConnectionHarness()
        h.completeHandshake()
        _ = h.takeEvents()
        h.send1RTT(Frames.resetStreamAt(0, code: 1, finalSize: 10, reliableSize: 5))
        XCTAssertEqual(h.takeEvents().last, .closed(.local(errorCode: 0x0a, application: false)))
        let (h2, _) = established()
        h2.send1RTT([0x24, 0x00, 0x01, 0x04, 0x05])
        XCTAssertEqual(h2.takeEvents().last, .closed(.local(errorCode: 0x07, application: false)))
    }

    /// The application stopped reading (STOP_SENDING) and the peer answers
    /// with a reset, reliable or not: nobody is to be told, the receive side
    /// is done, and a stream done both ways is forgotten (RFC 9000 §3.3) —
    /// its slot returns with MAX_STREAMS.
    func testAResetAfterStopSendingEndsTheReceiveSide() {
        for reset in [Frames.resetStream(0, code: 3, finalSize: 12), Frames.resetStreamAt(0, code: 3, finalSize: 12, reliableSize: 8)] {
            let (h, c) = established()
            h.send1RTT(Frames.stream(0, Array(hello[0..<4])))
            c.finish(stream: 0)
            h.ack1RTT(h.exchange())
            c.stopSending(0, errorCode: 9)
            _ = h.exchange()
            _ = h.takeEvents()
            h.send1RTT(reset)
            XCTAssertEqual(h.takeEvents(), [], "the application gave up the side: no event")
            XCTAssertNil(c.streams[0], "both sides done: forgotten")
        }
    }

    // MARK: sending

    /// The client opens request stream 0 and ends it; the server reads it.
    private func openRequest(_ h: ConnectionHarness, _ c: QUICConnection) {
        h.send1RTT(Frames.stream(0, [1], fin: true))
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        _ = h.takeEvents()
    }

    private func resets(_ packets: [ReceivedPacket]) -> [Frame] {
        packets.allFrames.filter {
            switch $0 {
            case .resetStream, .resetStreamAt: true
            default: false
            }
        }
    }

    /// Nothing sent yet: the reliable bytes go out after the reset, the
    /// rest never; the final size is the reliable size.
    func testResetBeforeSendingSendsOnlyTheReliableBytes() {
        let (h, c) = established()
        openRequest(h, c)
        let body = (0..<1000).map { UInt8(truncatingIfNeeded: $0) }
        XCTAssertEqual(body.withUnsafeBytes { c.write(stream: 0, $0, fin: true) }, 1000)
        c.resetStream(0, errorCode: 0x10c, reliableSize: 10)
        let out = h.exchange()
        XCTAssertEqual(resets(out), [.resetStreamAt(ResetStreamAtFrame(streamID: 0, errorCode: 0x10c, finalSize: 10, reliableSize: 10))])
        let data = out.streamFrames(0)
        XCTAssertEqual(data.map(\.offset), [0])
        XCTAssertEqual(data.flatMap(\.data), Array(body[0..<10]))
        XCTAssertFalse(data.contains { $0.fin }, "a reset stream has no FIN")
        XCTAssertEqual([UInt8](repeating: 3, count: 5).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }, 0)
        // Both acknowledged: the stream is done and forgotten (RFC 9000 §3.3).
        h.ack1RTT(out)
        XCTAssertNil(c.streams[0])
    }

    /// §5 with loss: bytes below the reliable size are resent until
    /// acknowledged, those above it never.
    func testLostReliableBytesAreResentAndNoOthers() throws {
        let (h, c) = established()
        openRequest(h, c)
        let body = (0..<3000).map { UInt8(truncatingIfNeeded: $0) }
        XCTAssertEqual(body.withUnsafeBytes { c.write(stream: 0, $0, fin: false) }, 3000)
        let first = h.exchange()
        XCTAssertGreaterThanOrEqual(first.count, 3)
        XCTAssertEqual(coverage(first), 0..<3000)
        c.resetStream(0, errorCode: 0x10c, reliableSize: 1500)
        let resetPacket = h.exchange()
        let expected = Frame.resetStreamAt(ResetStreamAtFrame(streamID: 0, errorCode: 0x10c, finalSize: 3000, reliableSize: 1500))
        XCTAssertEqual(resets(resetPacket), [expected])
        XCTAssertNil(coverage(resetPacket), "everything below 1500 was sent already")
        // Every data packet is lost; only the reset's is acknowledged: the
        // first by packet threshold, the others at the loss deadline
        // (RFC 9002 §6.1).
        h.ack1RTT(resetPacket)
        var resent = h.exchange()
        h.advance(toDeadline: ())
        resent += h.exchange()
        XCTAssertEqual(resets(resent), [], "the reset was acknowledged")
        XCTAssertEqual(coverage(resent), 0..<1500, "the reliable bytes, and nothing above them")
        var covered = [Bool](repeating: false, count: 1500)
        for f in resent.streamFrames(0) {
            XCTAssertEqual(f.data, Array(body[Int(f.offset)..<(Int(f.offset) + f.data.count)]))
            for i in Int(f.offset)..<(Int(f.offset) + f.data.count) { covered[i] = true }
        }
        XCTAssertTrue(covered.allSatisfy { $0 }, "every reliable byte resent")
        XCTAssertNotNil(c.streams[0], "reliable bytes not acknowledged yet")
        h.ack1RTT(resent)
        XCTAssertNil(c.streams[0], "reset and reliable bytes acknowledged: the stream is done")
    }

    /// A lost RESET_STREAM_AT is sent again (RFC 9000 §13.3, as RESET_STREAM).
    func testLostResetStreamAtIsResent() {
        let (h, c) = established()
        openRequest(h, c)
        _ = [UInt8](repeating: 4, count: 100).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }
        h.ack1RTT(h.exchange())
        c.resetStream(0, errorCode: 0x10c, reliableSize: 40)
        let expected = Frame.resetStreamAt(ResetStreamAtFrame(streamID: 0, errorCode: 0x10c, finalSize: 100, reliableSize: 40))
        XCTAssertEqual(resets(h.exchange()), [expected])  // dropped
        // PTO probes, acknowledged: the reset's packet is then lost by time
        // threshold (RFC 9002 §6.1.2) and its frame sent again.
        var again: [Frame] = []
        for _ in 0..<4 where again.isEmpty {
            h.advance(toDeadline: ())
            let probes = h.exchange()
            h.ack1RTT(probes)
            let out = h.exchange()
            again = resets(probes + out)
            h.ack1RTT(out)
        }
        XCTAssertEqual(again, [expected])
        XCTAssertNil(c.streams[0])
    }

    /// `setReliableResetSize`: every later reset keeps the stream's first
    /// bytes — also the one STOP_SENDING makes (RFC 9000 §3.5), with its code.
    func testStopSendingOnAStreamWithAReliableSizeAnswersWithResetStreamAt() {
        let (h, c) = established()
        let id = try! XCTUnwrap(c.openUnidirectionalStream())
        c.setReliableResetSize(stream: id, 2)
        _ = [UInt8](repeating: 5, count: 100).withUnsafeBytes { c.write(stream: id, $0, fin: false) }
        h.ack1RTT(h.exchange())
        h.send1RTT(Frames.stopSending(id, code: 0x77))
        XCTAssertEqual(h.takeEvents().last, .stopSending(id, errorCode: 0x77))
        XCTAssertEqual(resets(h.exchange()),
                       [.resetStreamAt(ResetStreamAtFrame(streamID: id, errorCode: 0x77, finalSize: 100, reliableSize: 2))])
        // A peer without reset_stream_at: RESET_STREAM.
        let (h2, c2) = established(peerAccepts: false)
        let id2 = try! XCTUnwrap(c2.openUnidirectionalStream())
        c2.setReliableResetSize(stream: id2, 2)
        _ = [UInt8](repeating: 5, count: 100).withUnsafeBytes { c2.write(stream: id2, $0, fin: false) }
        h2.ack1RTT(h2.exchange())
        h2.send1RTT(Frames.stopSending(id2, code: 0x77))
        XCTAssertEqual(resets(h2.exchange()), [.resetStream(ResetStreamFrame(streamID: id2, errorCode: 0x77, finalSize: 100))])
    }

    /// The lowest and highest offsets the stream frames cover (nil: none).
    private func coverage(_ packets: [ReceivedPacket]) -> Range<Int>? {
        let frames = packets.streamFrames(0).filter { !$0.data.isEmpty }
        guard let low = frames.map({ Int($0.offset) }).min(), let high = frames.map({ Int($0.offset) + $0.data.count }).max() else { return nil }
        return low..<high
    }

    /// §3: a peer that did not send reset_stream_at gets a RESET_STREAM,
    /// final size what was sent; the reliable size is ignored.
    func testWithoutThePeersParameterItIsAResetStream() {
        let (h, c) = established(peerAccepts: false)
        XCTAssertFalse(c.peerAcceptsResetStreamAt)
        openRequest(h, c)
        _ = [UInt8](repeating: 2, count: 10).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }
        _ = h.exchange()
        _ = [UInt8](repeating: 2, count: 10).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }
        c.resetStream(0, errorCode: 0x10c, reliableSize: 15)
        let out = h.exchange()
        XCTAssertEqual(resets(out), [.resetStream(ResetStreamFrame(streamID: 0, errorCode: 0x10c, finalSize: 10))])
        XCTAssertTrue(out.streamFrames(0).isEmpty)
    }

    /// The reliable size is capped by what was written and by the peer's
    /// stream limit (RFC 9000 §4.5: the final size counts toward it).
    func testReliableSizeIsCappedByWrittenBytesAndFlowControl() {
        let (h, c) = established()
        openRequest(h, c)
        _ = [UInt8](repeating: 2, count: 10).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }
        c.resetStream(0, errorCode: 1, reliableSize: 50)
        XCTAssertEqual(resets(h.exchange()), [.resetStreamAt(ResetStreamAtFrame(streamID: 0, errorCode: 1, finalSize: 10, reliableSize: 10))])

        let client = TestClient()
        client.parameters.resetStreamAt = true
        client.parameters.initialMaxStreamDataBidiLocal = 100
        var config = QUICConfiguration()
        config.reliableStreamReset = true
        let h2 = ConnectionHarness(configuration: config, client: client)
        h2.ack1RTT(h2.completeHandshake())
        let c2 = h2.connection!
        openRequest(h2, c2)
        _ = [UInt8](repeating: 2, count: 1000).withUnsafeBytes { c2.write(stream: 0, $0, fin: false) }
        c2.resetStream(0, errorCode: 1, reliableSize: 500)
        let out = h2.exchange()
        XCTAssertEqual(resets(out), [.resetStreamAt(ResetStreamAtFrame(streamID: 0, errorCode: 1, finalSize: 100, reliableSize: 100))])
        XCTAssertEqual(coverage(out), 0..<100)
    }
}
