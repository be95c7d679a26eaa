// Loss recovery through the connection (RFC 9002 with RFC 9000 §13.3):
// lost frames are re-queued and sent again in new packets, PTO probes go
// out when acknowledgments stop, and a peer's key update is answered
// (RFC 9001 §6).

import XCTest
import Core
@testable import QUIC

final class RecoveryIntegrationTests: XCTestCase {
    private func established() -> (ConnectionHarness, QUICConnection) {
        let h = ConnectionHarness()
        let answer = h.completeHandshake()
        _ = h.takeEvents()
        h.ack1RTT(answer)
        _ = h.takeEvents()
        return (h, h.connection!)
    }

    private func openRequest(_ h: ConnectionHarness, _ c: QUICConnection, _ id: UInt64 = 0) {
        h.send1RTT(Frames.stream(id, [1], fin: true))
        _ = c.withReadableBytes(stream: id) { b, _ in (b.count, ()) }
        _ = h.takeEvents()
    }

    /// Stream data in a dropped packet is declared lost once three later
    /// packets are acknowledged (§6.1.1) and arrives again, same offsets.
    func testLostStreamDataIsRetransmitted() {
        let (h, c) = established()
        openRequest(h, c)
        let body = (0..<5000).map { UInt8(truncatingIfNeeded: $0) }
        XCTAssertEqual(body.withUnsafeBytes { c.write(stream: 0, $0, fin: true) }, 5000)
        var packets = h.exchange()
        XCTAssertGreaterThanOrEqual(packets.count, 5)
        let dropped = packets.removeFirst()
        let droppedData = [dropped].streamFrames(0)
        XCTAssertFalse(droppedData.isEmpty)
        h.ack1RTT(packets)
        let again = h.exchange()
        let resent = again.streamFrames(0)
        XCTAssertEqual(resent.map(\.offset), droppedData.map(\.offset))
        XCTAssertEqual(resent.flatMap(\.data), droppedData.flatMap(\.data))
        XCTAssertGreaterThan(again.first!.packetNumber, packets.last!.packetNumber, "new packet numbers, never the old packet")
        // Everything arrived: reassemble.
        var all = [UInt8](repeating: 0, count: 5000)
        for f in (packets + again).streamFrames(0) { all.replaceSubrange(Int(f.offset)..<(Int(f.offset) + f.data.count), with: f.data) }
        XCTAssertEqual(all, body)
    }

    /// §13.3: a lost MAX_STREAM_DATA is sent again with the current value,
    /// not the stale one.
    func testLostMaxStreamDataIsResentWithCurrentValue() {
        var config = QUICConfiguration()
        config.initialMaxStreamDataBidiRemote = 1000
        let h = ConnectionHarness(configuration: config)
        let answer = h.completeHandshake()
        _ = h.takeEvents()
        h.ack1RTT(answer)
        let c = h.connection!
        h.send1RTT(Frames.stream(0, [UInt8](repeating: 1, count: 600)))
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        let lost = h.exchange()  // carries MAX_STREAM_DATA 1600; dropped
        XCTAssertTrue(lost.contains { $0 == .maxStreamData(MaxStreamDataFrame(streamID: 0, maximum: 1600)) })
        // Later packets acked; the lost one is declared lost by time threshold at the deadline.
        for i in 0..<4 { h.send1RTT(Frames.ping, packetNumber: 100 + UInt64(i)) }
        let later = h.exchange()
        h.ack1RTT(later)
        h.advance(toDeadline: ())
        let resent = h.exchange()
        XCTAssertTrue(resent.contains { $0 == .maxStreamData(MaxStreamDataFrame(streamID: 0, maximum: 1600)) })
    }

    /// RFC 9002 §6.2: no ACK → the PTO fires and an ack-eliciting probe goes out.
    func testPTOProbe() throws {
        let (h, c) = established()
        openRequest(h, c)
        _ = [UInt8](repeating: 7, count: 100).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }
        let first = h.exchange()
        XCTAssertEqual(first.count, 1)
        let deadline = try XCTUnwrap(h.endpoint.nextDeadline)
        XCTAssertGreaterThan(deadline, h.now)
        h.advance(toDeadline: ())
        let probes = h.exchange()
        XCTAssertFalse(probes.isEmpty)
        XCTAssertTrue(probes.allSatisfy(\.ackEliciting))
        XCTAssertGreaterThan(probes[0].packetNumber, first[0].packetNumber)
        XCTAssertEqual(c.recovery.ptoCount, 1)
    }

    /// The packet with HANDSHAKE_DONE is lost and nothing is acknowledged:
    /// the PTO probe carries HANDSHAKE_DONE again (not a bare PING), and once
    /// a packet carrying it is acknowledged the next probe does not
    /// (RFC 9002 §6.2.4, RFC 9000 §13.3; tests/e2e/test_http3_lossy.py, 30 %
    /// loss each way: a client that never got it idled out).
    func testPTOProbeRepeatsHandshakeDoneUntilAcknowledged() throws {
        let h = ConnectionHarness()
        let answer = h.completeHandshake()
        _ = h.takeEvents()
        XCTAssertTrue(answer.contains { $0 == .handshakeDone })
        let c = try XCTUnwrap(h.connection)
        h.advance(toDeadline: ())
        let probes = h.exchange()
        XCTAssertFalse(probes.isEmpty)
        XCTAssertTrue(probes.allSatisfy(\.ackEliciting))
        XCTAssertTrue(probes.contains { $0 == .handshakeDone }, "the probe repeats HANDSHAKE_DONE")
        XCTAssertEqual(c.recovery.ptoCount, 1)
        h.ack1RTT(probes)
        XCTAssertTrue(c.handshakeDoneAcknowledged)
        openRequest(h, c)
        _ = [UInt8](repeating: 7, count: 100).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }
        _ = h.exchange()
        h.advance(toDeadline: ())
        let later = h.exchange()
        XCTAssertFalse(later.isEmpty)
        XCTAssertFalse(later.contains { $0 == .handshakeDone }, "acknowledged: not repeated")
    }

    /// The server's first flight is lost: the PTO resends its CRYPTO data
    /// (Initial and Handshake) within the amplification limit.
    func testHandshakeFlightRetransmittedOnPTO() {
        let h = ConnectionHarness()
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        h.client.installHandshakeKeys()
        let lost = h.drain()
        XCTAssertFalse(lost.isEmpty)
        h.advance(toDeadline: ())
        let again = h.exchange()
        XCTAssertEqual(again.crypto(.initial).first?.offset, 0)
        XCTAssertEqual(again.crypto(.initial).first?.data.first, FakeTLS.serverHello)
        let sent = (lost + []).reduce(0) { $0 + $1.bytes.count }
        XCTAssertLessThanOrEqual(sent + again.reduce(0) { $0 + $1.size }, 3 * 1200)
        // The client completes from the retransmission.
        h.sendClientFinished(acking: again)
        XCTAssertEqual(h.takeEvents(), [.handshakeCompleted])
    }

    /// RFC 9001 §6: the client updates keys; we read with the next keys,
    /// answer in the new phase, and keep the old read keys for reordered
    /// packets until 3×PTO later.
    func testPeerKeyUpdate() {
        let (h, c) = established()
        h.send1RTT(Frames.stream(0, [1]), packetNumber: 10)
        _ = h.takeEvents()
        let old = h.client.packet(.application, Frames.stream(0, offset: 1, [2]), packetNumber: 11)
        h.client.initiateKeyUpdate()
        h.send1RTT(Frames.stream(0, offset: 2, [3], fin: true), packetNumber: 12)
        XCTAssertEqual(h.takeEvents(), [])  // offset 2 waits for offset 1
        XCTAssertTrue(c.keyPhase!.phase)
        let answer = h.exchange()
        XCTAssertFalse(answer.isEmpty)
        XCTAssertTrue(answer.allSatisfy(\.keyPhase), "we answer in the new phase")
        // A reordered packet of the old phase still opens with the previous keys.
        h.deliver(old)
        XCTAssertEqual(h.takeEvents(), [.streamReadable(0)])
        XCTAssertEqual(c.withReadableBytes(stream: 0) { b, fin in (b.count, (Array(b), fin)) }?.0, [1, 2, 3])
        // The previous keys go after 3×PTO.
        h.ack1RTT(answer)
        h.advance(nanoseconds: c.recovery.probeTimeout(includingMaxAckDelay: true) + 1)
        XCTAssertNil(c.keyPhase!.previousRead)
    }

    /// RFC 9001 §6.2: a second update before any packet of the current
    /// phase was acknowledged is a KEY_UPDATE_ERROR.
    func testKeyUpdateTooEarly() {
        let (h, _) = established()
        h.client.initiateKeyUpdate()
        h.send1RTT(Frames.ping, packetNumber: 10)
        h.client.initiateKeyUpdate()
        h.send1RTT(Frames.ping, packetNumber: 11)
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x0e, application: false))])
    }

    /// ChaCha20-Poly1305 end to end (the suite comes from the handshake).
    func testChaCha20Suite() {
        let client = TestClient()
        client.suite = .chacha20Poly1305
        let h = ConnectionHarness(client: client)
        let flight = h.sendClientHelloWithSuite(.chacha20Poly1305)
        h.sendClientFinished(acking: flight)
        XCTAssertEqual(h.takeEvents(), [.handshakeCompleted])
        h.send1RTT(Frames.stream(0, [9], fin: true))
        XCTAssertEqual(h.takeEvents(), [.streamOpened(0), .streamReadable(0)])
    }

    /// Congestion control bounds what is in flight (NewReno's initial window,
    /// RFC 9002 §7.2) and acknowledgments open it again.
    func testCongestionWindowBoundsSending() {
        let (h, c) = established()
        openRequest(h, c)
        let body = [UInt8](repeating: 3, count: 200_000)
        var written = 0
        written += body.withUnsafeBytes { c.write(stream: 0, $0, fin: false) }
        let first = h.exchange()
        let inFlight = first.reduce(0) { $0 + $1.size }
        XCTAssertLessThanOrEqual(inFlight, c.recovery.controller.congestionWindow + 1200)
        XCTAssertLessThan(first.streamFrames(0).reduce(0) { $0 + $1.data.count }, written)
        h.ack1RTT(first)
        XCTAssertFalse(h.exchange().streamFrames(0).isEmpty)
    }
}

extension ConnectionHarness {
    @discardableResult
    func sendClientHelloWithSuite(_ suite: CipherSuite) -> [ReceivedPacket] {
        setSuite(suite)
        let hello = client.clientHello
        deliver(client.initialDatagram(Frames.crypto(hello)))
        clientCryptoOffset[0] = UInt64(hello.count)
        client.installHandshakeKeys()
        return exchange()
    }
}
