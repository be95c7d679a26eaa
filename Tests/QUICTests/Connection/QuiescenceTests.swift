// What a graceful shutdown reads before closing (QUICConnection+Quiescence,
// QUICEndpoint+Quiescence): whether everything written on any stream was
// acknowledged, the probe timeout, and how many connections are still open
// (neither closing nor draining, RFC 9000 §10.2).

import XCTest
import Core
@testable import QUIC

final class QuiescenceTests: XCTestCase {
    private func established() -> (ConnectionHarness, QUICConnection) {
        let h = ConnectionHarness()
        let answer = h.completeHandshake()
        _ = h.takeEvents()
        h.ack1RTT(answer)
        return (h, h.connection!)
    }

    func testNothingWrittenIsSettled() {
        let (_, c) = established()
        XCTAssertTrue(c.allStreamDataAcknowledged)
    }

    /// A response with its FIN counts until the client acknowledged both;
    /// then the stream is done.
    func testAResponseCountsUntilItsFinIsAcknowledged() {
        let (h, c) = established()
        h.send1RTT(Frames.stream(0, Array("req".utf8), fin: true))
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        let body = [UInt8](repeating: 0x61, count: 3000)
        XCTAssertEqual(body.withUnsafeBytes { c.write(stream: 0, $0, fin: true) }, 3000)
        XCTAssertFalse(c.allStreamDataAcknowledged, "written, not sent")
        let sent = h.exchange()
        XCTAssertFalse(c.allStreamDataAcknowledged, "sent, not acknowledged")
        h.ack1RTT(sent)
        XCTAssertTrue(c.allStreamDataAcknowledged)
    }

    /// A stream still open for writing (HTTP/3's control stream) counts as
    /// settled once what was written so far is acknowledged: it has no FIN.
    func testAnOpenUnidirectionalStreamSettlesWithItsBytes() {
        let (h, c) = established()
        let id = c.openUnidirectionalStream()!
        XCTAssertTrue(c.allStreamDataAcknowledged, "opened, nothing written")
        XCTAssertEqual([UInt8]([0x00, 0x04, 0x00]).withUnsafeBytes { c.write(stream: id, $0, fin: false) }, 3)
        XCTAssertFalse(c.allStreamDataAcknowledged)
        let sent = h.exchange()
        XCTAssertEqual(sent.streamFrames(id).flatMap(\.data), [0x00, 0x04, 0x00])
        XCTAssertFalse(c.allStreamDataAcknowledged)
        h.ack1RTT(sent)
        XCTAssertTrue(c.allStreamDataAcknowledged)
    }

    /// Lost data is owed again: not settled until the resent copy is
    /// acknowledged.
    func testLostDataIsNotSettled() {
        let (h, c) = established()
        let id = c.openUnidirectionalStream()!
        _ = [UInt8](repeating: 7, count: 100).withUnsafeBytes { c.write(stream: id, $0, fin: false) }
        _ = h.exchange()  // dropped on the way
        XCTAssertFalse(c.allStreamDataAcknowledged)
        var again: [ReceivedPacket] = []
        for _ in 0..<6 where again.streamFrames(id).isEmpty {
            // The probe timeout sends a probe; its acknowledgment gets the
            // older packet declared lost, and the bytes go out again.
            h.advance(toDeadline: ())
            let probe = h.exchange()
            again += probe
            h.ack1RTT(probe)
            again += h.exchange()
        }
        XCTAssertEqual(again.streamFrames(id).flatMap(\.data), [UInt8](repeating: 7, count: 100))
        XCTAssertFalse(c.allStreamDataAcknowledged)
        h.ack1RTT(again)
        XCTAssertTrue(c.allStreamDataAcknowledged)
    }

    /// A reset stream's data is abandoned by design: it does not hold the
    /// close back.
    func testAResetStreamIsSettled() {
        let (h, c) = established()
        h.send1RTT(Frames.stream(0, Array("req".utf8), fin: true))
        _ = [UInt8](repeating: 1, count: 500).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }
        XCTAssertFalse(c.allStreamDataAcknowledged)
        c.resetStream(0, errorCode: 0x10c)
        XCTAssertTrue(c.allStreamDataAcknowledged)
        _ = h.exchange()
    }

    /// Closing: nothing is sent any more, so nothing can be settled; the
    /// connection no longer counts as open, though it stays in the endpoint
    /// for its closing period.
    func testAClosingConnectionIsNoLongerOpen() {
        let (h, c) = established()
        XCTAssertEqual(h.endpoint.openConnectionCount, 1)
        c.close(errorCode: 0x100, reason: [], application: true)
        h.collectEvents()
        XCTAssertFalse(c.allStreamDataAcknowledged)
        XCTAssertEqual(h.endpoint.openConnectionCount, 0)
        XCTAssertEqual(h.endpoint.connectionCount, 1, "in the closing state for three probe timeouts")
    }

    /// A handshake under way counts as open.
    func testAHandshakeUnderWayIsOpen() {
        let h = ConnectionHarness()
        h.sendClientHello()
        XCTAssertEqual(h.endpoint.openConnectionCount, 1)
    }

    /// RFC 9002 §6.2.1: smoothed_rtt + max(4 * rttvar, kGranularity) +
    /// max_ack_delay; before any sample, from kInitialRtt (333 ms, §6.2.2):
    /// 333 + 4 × 166.5 + max_ack_delay.
    func testProbeTimeoutFollowsTheRTT() {
        let h = ConnectionHarness()
        h.sendClientHello()
        let c = h.endpoint.context.connections.values.first!
        XCTAssertEqual(c.probeTimeout, c.recovery.rtt.smoothedRTT + 4 * c.recovery.rtt.rttVariance + c.recovery.maxAckDelay)
        XCTAssertGreaterThanOrEqual(c.probeTimeout, 999_000_000)
        let (h2, c2) = established()
        h2.advance(nanoseconds: 10_000_000)
        _ = h2.exchange()
        XCTAssertTrue(c2.recovery.rtt.hasSample)
        XCTAssertEqual(c2.probeTimeout,
                       c2.recovery.rtt.smoothedRTT + max(4 * c2.recovery.rtt.rttVariance, kGranularity) + c2.recovery.maxAckDelay)
        XCTAssertLessThan(c2.probeTimeout, c.probeTimeout, "a measured round trip of a few ms")
    }
}
