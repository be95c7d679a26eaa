// Unreliable datagrams through a connection (RFC 9221): negotiation by
// transport parameter (§3), receiving and sending DATAGRAM frames (§4, §5),
// the bounded queues on both sides, and no retransmission of a lost one.

import XCTest
import Core
@testable import QUIC

final class DatagramTests: XCTestCase {
    private func harness(ours: UInt64? = 1200, peers: UInt64? = 1200,
                         tune: (inout QUICConfiguration) -> Void = { _ in }) -> (ConnectionHarness, QUICConnection) {
        var config = QUICConfiguration()
        config.maxDatagramFrameSize = ours
        tune(&config)
        let client = TestClient()
        client.parameters.maxDatagramFrameSize = peers
        let h = ConnectionHarness(configuration: config, client: client)
        h.ack1RTT(h.completeHandshake())
        XCTAssertEqual(h.takeEvents(), [.handshakeCompleted])
        return (h, h.connection!)
    }

    private func datagram(_ payload: [UInt8], explicitLength: Bool = true) -> [UInt8] {
        Frames.build(FrameEncoder.datagramSize(dataLength: payload.count, explicitLength: explicitLength)) { out in
            payload.withUnsafeBytes { FrameEncoder.encodeDatagram($0, explicitLength: explicitLength, into: out) }
        }
    }

    private func sentDatagrams(_ packets: [ReceivedPacket]) -> [[UInt8]] {
        packets.flatMap { p in p.frames.compactMap { f -> [UInt8]? in
            if case .datagram(let d) = f { return p.slice(d.data) }
            return nil
        } }
    }

    private func send(_ c: QUICConnection, _ payload: [UInt8]) -> DatagramSendOutcome {
        payload.withUnsafeBytes { c.sendDatagram($0) }
    }

    // MARK: negotiation (§3)

    /// §3: the parameter we advertise is the configured frame size; none
    /// when the configuration leaves DATAGRAM off.
    func testTransportParameterIsAdvertisedOnlyWhenConfigured() throws {
        for ours in [UInt64(1200), 65_535, nil] {
            var config = QUICConfiguration()
            config.maxDatagramFrameSize = ours
            let h = ConnectionHarness(configuration: config)
            h.sendClientHello()
            let raw = try XCTUnwrap(h.handshake?.serverTransportParameters)
            let decoded = try raw.withUnsafeBytes { try TransportParameters.decode($0, sentBy: .server) }
            XCTAssertEqual(decoded.maxDatagramFrameSize, ours)
        }
    }

    /// §3: "An endpoint that receives a DATAGRAM frame when it has not
    /// indicated support via the transport parameter MUST terminate the
    /// connection with an error of type PROTOCOL_VIOLATION."
    func testDatagramWithoutOurParameterIsAProtocolViolation() {
        let (h, c) = harness(ours: nil)
        XCTAssertFalse(c.datagramsNegotiated)
        h.send1RTT(datagram([1, 2, 3]))
        XCTAssertEqual(h.takeEvents().last, .closed(.local(errorCode: 0x0a, application: false)))
    }

    /// §3: a frame above our max_datagram_frame_size is a PROTOCOL_VIOLATION;
    /// one exactly at it is accepted.
    func testFrameSizeLimitIsEnforcedAtTheBoundary() {
        let (h, c) = harness(ours: 100)
        let fits = [UInt8](repeating: 7, count: 100 - 3)  // type + 2-byte length (97 > 63) + 97 = 100
        XCTAssertEqual(FrameEncoder.datagramSize(dataLength: fits.count), 100)
        h.send1RTT(datagram(fits))
        XCTAssertEqual(h.takeEvents(), [.datagramReadable])
        XCTAssertEqual(c.receiveDatagram(), fits)
        h.send1RTT(datagram(fits + [7]))
        XCTAssertEqual(h.takeEvents().last, .closed(.local(errorCode: 0x0a, application: false)))
    }

    /// §3: without the peer's parameter nothing may be sent.
    func testSendingNeedsThePeersParameter() {
        let (h, c) = harness(peers: nil)
        XCTAssertFalse(c.datagramsNegotiated)
        XCTAssertEqual(c.maxDatagramPayload, 0)
        XCTAssertEqual(send(c, [1]), .unsupported)
        XCTAssertTrue(sentDatagrams(h.exchange()).isEmpty)
    }

    /// A zero max_datagram_frame_size cannot carry a frame at all.
    func testZeroPeerLimitMeansUnsupported() {
        let (_, c) = harness(peers: 0)
        XCTAssertEqual(send(c, []), .unsupported)
    }

    // MARK: receiving (§4, §5)

    /// Payloads come out whole and in arrival order, with or without the
    /// Length field; the event is posted once per empty-to-non-empty turn.
    func testReceivedDatagramsAreQueuedInOrder() {
        let (h, c) = harness()
        h.send1RTT(datagram(Array("one".utf8)) + datagram(Array("two".utf8)))
        XCTAssertEqual(h.takeEvents(), [.datagramReadable])
        h.send1RTT(datagram(Array("three".utf8), explicitLength: false))
        XCTAssertEqual(h.takeEvents(), [], "the queue was not empty: no second event")
        XCTAssertEqual(c.receiveDatagram(), Array("one".utf8))
        XCTAssertEqual(c.receiveDatagram(), Array("two".utf8))
        XCTAssertEqual(c.receiveDatagram(), Array("three".utf8))
        XCTAssertNil(c.receiveDatagram())
        h.send1RTT(datagram([]))
        XCTAssertEqual(h.takeEvents(), [.datagramReadable])
        XCTAssertEqual(c.receiveDatagram(), [], "an empty payload is a datagram too")
    }

    /// A DATAGRAM frame is ack-eliciting (§5.2): the client's packet is
    /// acknowledged.
    func testReceivedDatagramIsAcknowledged() {
        let (h, _) = harness()
        h.send1RTT(datagram([9]), packetNumber: 50)
        var answer = h.exchange()
        if answer.isEmpty {
            h.advance(toDeadline: ())
            answer = h.exchange()
        }
        XCTAssertTrue(answer.contains { if case .ack(let a) = $0 { a.largestAcknowledged == 50 } else { false } })
    }

    /// The receive queue is bounded by count and by bytes; past either,
    /// arrivals are dropped and counted, and the connection stays open.
    func testReceiveQueueOverflowDropsAndCounts() {
        let (h, c) = harness { $0.maxQueuedDatagrams = 3; $0.maxQueuedDatagramBytes = 1000 }
        for i in 0..<5 { h.send1RTT(datagram([UInt8(i)])) }
        XCTAssertEqual(c.droppedDatagrams.received, 2)
        XCTAssertEqual((0..<3).map { _ in c.receiveDatagram() }, [[0], [1], [2]])
        XCTAssertNil(c.receiveDatagram())
        // Bytes: two of 400 fit in 1000, the third does not.
        for _ in 0..<3 { h.send1RTT(datagram([UInt8](repeating: 1, count: 400))) }
        XCTAssertEqual(c.droppedDatagrams.received, 3)
        XCTAssertFalse(h.takeEvents().contains { if case .closed = $0 { true } else { false } })
    }

    // MARK: sending (§5)

    /// A queued datagram leaves in the next 1-RTT packet, which is
    /// ack-eliciting (§5.2).
    func testSentDatagramLeavesInAShortHeaderPacket() {
        let (h, c) = harness()
        XCTAssertEqual(send(c, Array("ping".utf8)), .queued)
        XCTAssertEqual(send(c, Array("pong".utf8)), .queued)
        let packets = h.exchange()
        XCTAssertEqual(sentDatagrams(packets), [Array("ping".utf8), Array("pong".utf8)])
        XCTAssertTrue(packets.allSatisfy { $0.space == .application })
        XCTAssertTrue(packets.contains { $0.ackEliciting })
    }

    /// The largest payload is bounded by the peer's frame limit and by one
    /// packet (§5: a datagram is never split); one byte more is refused.
    func testMaxPayloadIsTheSmallerOfPeerLimitAndPacket() {
        let (h, c) = harness(peers: 200)
        XCTAssertEqual(c.maxDatagramPayload, 200 - 1 - 2)  // type + 2-byte length (197 > 63)
        XCTAssertEqual(send(c, [UInt8](repeating: 1, count: c.maxDatagramPayload + 1)), .tooLarge)
        XCTAssertEqual(send(c, [UInt8](repeating: 1, count: c.maxDatagramPayload)), .queued)
        XCTAssertEqual(sentDatagrams(h.exchange()).map(\.count), [197])

        let (h2, big) = harness(peers: 65_535)
        let max = big.maxDatagramPayload
        XCTAssertLessThan(max, 1200 - 1 - 20 - 4 - 16, "bounded by the 1200-byte datagram")
        XCTAssertEqual(send(big, [UInt8](repeating: 2, count: max)), .queued)
        XCTAssertEqual(sentDatagrams(h2.exchange()).map(\.count), [max])
    }

    /// The send queue is bounded: a datagram past it is dropped and counted.
    func testSendQueueOverflowDrops() {
        let (h, c) = harness { $0.maxQueuedDatagrams = 2 }
        XCTAssertEqual(send(c, [1]), .queued)
        XCTAssertEqual(send(c, [2]), .queued)
        XCTAssertEqual(send(c, [3]), .dropped)
        XCTAssertEqual(c.droppedDatagrams.sent, 1)
        XCTAssertEqual(sentDatagrams(h.exchange()), [[1], [2]])
        XCTAssertEqual(send(c, [4]), .queued, "room again once sent")
    }

    /// §5: "... DATAGRAM frames are not retransmitted": the packet carrying
    /// one is declared lost and nothing of it is sent again.
    func testLostDatagramIsNotRetransmitted() {
        let (h, c) = harness()
        h.send1RTT(Frames.stream(0, [1], fin: true))
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        _ = h.takeEvents()
        // A datagram and stream data in the same packet, which is lost.
        XCTAssertEqual(send(c, Array("gone".utf8)), .queued)
        XCTAssertEqual([UInt8]("kept".utf8).withUnsafeBytes { c.write(stream: 0, $0, fin: true) }, 4)
        let lost = h.exchange()
        XCTAssertEqual(lost.count, 1)
        XCTAssertEqual(sentDatagrams(lost), [Array("gone".utf8)])
        XCTAssertEqual(lost.streamFrames(0).flatMap(\.data), Array("kept".utf8))
        // Later packets are acknowledged; the first is lost by the time threshold.
        for i in 0..<4 { h.send1RTT(Frames.ping, packetNumber: 100 + UInt64(i)) }
        let later = h.exchange()
        h.ack1RTT(later)
        h.advance(toDeadline: ())
        let again = h.exchange()
        XCTAssertEqual(again.streamFrames(0).flatMap(\.data), Array("kept".utf8), "the stream data is sent again")
        XCTAssertTrue(sentDatagrams(again).isEmpty, "the datagram is not")
    }

    /// Datagrams sent by the application go only once the handshake is
    /// complete (they are 1-RTT data), and none after the connection closed.
    func testNothingAfterClose() {
        let (h, c) = harness()
        c.close(errorCode: 0, reason: [], application: true)
        XCTAssertEqual(send(c, [1]), .unsupported)
        XCTAssertTrue(sentDatagrams(h.exchange()).isEmpty)
    }

    // MARK: the queue itself

    func testQueueCompactsAndKeepsOrder() {
        var q = DatagramQueue(maxCount: 1000, maxBytes: 1 << 20)
        for i in 0..<500 { XCTAssertTrue(q.push([UInt8(truncatingIfNeeded: i)])) }
        for i in 0..<400 { XCTAssertEqual(q.pop(), [UInt8(truncatingIfNeeded: i)]) }
        for i in 500..<900 { XCTAssertTrue(q.push([UInt8(truncatingIfNeeded: i)])) }
        XCTAssertEqual(q.count, 500)
        XCTAssertEqual(q.bytes, 500)
        for i in 400..<900 { XCTAssertEqual(q.pop(), [UInt8(truncatingIfNeeded: i)]) }
        XCTAssertTrue(q.isEmpty)
        XCTAssertEqual(q.bytes, 0)
    }
}
