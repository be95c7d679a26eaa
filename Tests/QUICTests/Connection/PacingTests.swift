// Pacing through the connection (RFC 9002 §7.7): writeDatagram refuses
// in-flight packets before the pacer's release time, the release time is
// the connection's deadline, and ACK-only packets are never held back.

import XCTest
import Core
@testable import QUIC

final class PacingTests: XCTestCase {
    /// A connection whose first RTT sample is 100 ms (the client's Finished
    /// acknowledges the server's flight 100 ms after it left), with
    /// request stream 0 open.
    private func established(_ algorithm: CongestionAlgorithm) -> (ConnectionHarness, QUICConnection) {
        var configuration = QUICConfiguration()
        configuration.congestionControl = algorithm
        let h = ConnectionHarness(configuration: configuration)
        let flight = h.sendClientHello()
        h.now = Instant(nanoseconds: h.now.nanoseconds + ms(100))
        let answer = h.sendClientFinished(acking: flight)
        _ = h.takeEvents()
        h.ack1RTT(answer)
        let c = h.connection!
        h.send1RTT(Frames.stream(0, [1], fin: true))
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        _ = h.takeEvents()
        return (h, c)
    }

    /// One window of stream data leaves in a burst of at most
    /// `burstDatagrams` packets, then one packet per interval, each released
    /// by the connection's deadline; the window spreads over about RTT / 1.25.
    func testStreamDataIsSpreadOverTheRTT() throws {
        for algorithm in CongestionAlgorithm.allCases {
            let (h, c) = established(algorithm)
            XCTAssertEqual(c.recovery.controller.algorithm, algorithm)
            // 100 ms from the Finished, then 0 from the immediate ACK of HANDSHAKE_DONE: 7/8 of 100 ms.
            let srtt = c.recovery.rtt.smoothedRTT
            XCTAssertEqual(srtt, ms(100) * 7 / 8)
            let window = c.recovery.controller.congestionWindow
            let body = [UInt8](repeating: 7, count: 200_000)
            _ = body.withUnsafeBytes { c.write(stream: 0, $0, fin: false) }
            let start = h.now
            var sendTimes: [Int64] = []
            var rounds = 0
            while c.recovery.sendAllowance >= QUICConnection.minimumPacketRoom, rounds < 200 {
                rounds += 1
                let sent = h.drain()
                for _ in sent { sendTimes.append(h.now.nanoseconds - start.nanoseconds) }
                XCTAssertLessThanOrEqual(sent.count, Pacer.burstDatagrams, "\(algorithm) at \(h.now.nanoseconds - start.nanoseconds)")
                guard c.recovery.sendAllowance >= QUICConnection.minimumPacketRoom else { break }
                // Held back: the deadline is the pacer's release, in the future.
                let deadline = try XCTUnwrap(h.endpoint.nextDeadline)
                XCTAssertGreaterThan(deadline, h.now)
                XCTAssertEqual(deadline, c.pacedUntil)
                h.advance()
            }
            XCTAssertGreaterThanOrEqual(sendTimes.count, window / 1_200 - 1, "\(algorithm)")
            // Interval for a full datagram: smoothed_rtt * 1200 / (1.25 * window);
            // datagrams are at most 1200 bytes, so the mean is a little below.
            let interval = Double(srtt) * 1_200 / (1.25 * Double(window))
            let span = Double(sendTimes.last! - sendTimes.first!)
            let paced = Double(sendTimes.count - Pacer.burstDatagrams)
            XCTAssertEqual(span / paced, interval, accuracy: interval * 0.15, "\(algorithm)")
            XCTAssertLessThanOrEqual(span / paced, interval)
            XCTAssertLessThan(span, Double(srtt) / 1.25)
        }
    }

    /// ACK-only packets are not paced (RFC 9002 §7.7 paces what is in
    /// flight): while stream data waits for the pacer, two ack-eliciting
    /// packets from the client (RFC 9000 §13.2.2: acknowledge every second
    /// one at once) get their ACK immediately, without stream data.
    func testAcknowledgmentsAreNotHeldBackByThePacer() throws {
        let (h, c) = established(.cubic)
        let body = [UInt8](repeating: 7, count: 100_000)
        _ = body.withUnsafeBytes { c.write(stream: 0, $0, fin: false) }
        _ = h.drain()
        let release = try XCTUnwrap(c.pacedUntil)
        XCTAssertGreaterThan(release, h.now)
        XCTAssertTrue(h.drain().isEmpty)
        h.send1RTT(Frames.ping)
        h.send1RTT(Frames.ping)
        let answer = h.exchange()
        XCTAssertEqual(answer.count, 1)
        XCTAssertTrue(answer.allFrames.contains { if case .ack = $0 { true } else { false } })
        XCTAssertTrue(answer.streamFrames(0).isEmpty)
        XCTAssertEqual(c.pacedUntil, release)
        // At the release time the data flows again.
        h.advance()
        XCTAssertEqual(h.now, release)
        XCTAssertFalse(h.exchange().streamFrames(0).isEmpty)
    }

    /// Nothing to send: no pacing deadline is armed, so an idle connection
    /// does not wake for the pacer.
    func testNoPacingDeadlineWithoutDataToSend() {
        let (h, c) = established(.cubic)
        let body = [UInt8](repeating: 7, count: 6_000)
        _ = body.withUnsafeBytes { c.write(stream: 0, $0, fin: true) }
        var rounds = 0
        while rounds < 20 {
            rounds += 1
            _ = h.drain()
            guard c.pacedUntil != nil else { break }
            h.advance()
        }
        XCTAssertGreaterThan(rounds, 1)
        XCTAssertNil(c.pacedUntil)
        XCTAssertTrue(h.drain().isEmpty)
        XCTAssertNil(c.pacedUntil)
    }
}
