// ACK generation (RFC 9000 §13.2; §19.3) and duplicate detection (§12.3).

import XCTest
import Core
@testable import QUIC

final class AckTests: XCTestCase {
    private func established() -> (ConnectionHarness, QUICConnection) {
        let h = ConnectionHarness()
        h.completeHandshake()
        _ = h.takeEvents()
        _ = h.exchange()
        return (h, h.connection!)
    }

    private func acks(_ packets: [ReceivedPacket]) -> [(frame: AckFrame, ranges: [ClosedRange<UInt64>])] {
        packets.flatMap { p in
            p.frames.compactMap { f -> (AckFrame, [ClosedRange<UInt64>])? in
                guard case .ack(let a) = f else { return nil }
                return p.bytes.withUnsafeBytes { (a, Array(a.ranges(in: $0))) }
            }
        }
    }

    /// §13.2.2: one ack-eliciting 1-RTT packet waits up to max_ack_delay;
    /// the second makes the ACK immediate.
    func testAckAfterTwoElicitingPackets() {
        let (h, _) = established()
        h.send1RTT(Frames.ping, packetNumber: 10)
        XCTAssertTrue(h.drain().isEmpty, "one packet: the ACK is delayed")
        h.send1RTT(Frames.ping, packetNumber: 11)
        let a = acks(h.exchange())
        XCTAssertEqual(a.last?.ranges.first, 10...11)
    }

    /// §13.2.1: the delayed ACK goes out at max_ack_delay, with the ACK
    /// Delay field in units of 2^ack_delay_exponent µs (§19.3).
    func testDelayedAckAtMaxAckDelay() throws {
        let (h, _) = established()
        h.send1RTT(Frames.ping, packetNumber: 10)
        let deadline = try XCTUnwrap(h.endpoint.nextDeadline)
        XCTAssertEqual(deadline.nanoseconds - h.now.nanoseconds, 25_000_000)
        h.advance(nanoseconds: 25_000_000)
        let a = acks(h.exchange())
        XCTAssertEqual(a.count, 1)
        XCTAssertEqual(a[0].frame.largestAcknowledged, 10)
        XCTAssertEqual(a[0].frame.ackDelay, 25_000 >> 3)
    }

    /// Non-ack-eliciting packets (ACK only) are not acknowledged on their own.
    func testAckOnlyPacketsAreNotAcked() {
        let (h, _) = established()
        h.send1RTT(Frames.ack([0...0]))
        XCTAssertTrue(h.drain().isEmpty)
        XCTAssertNil(h.connection!.spaces[2].received.ackDeadline)
    }

    /// §13.2.1: out of order → immediate ACK with ranges; gaps show as
    /// separate ranges, largest first (§19.3.1).
    func testRangesForGaps() {
        let (h, _) = established()
        h.send1RTT(Frames.ack([0...0]), packetNumber: 10)
        h.send1RTT(Frames.ack([0...0]), packetNumber: 11)
        h.send1RTT(Frames.ping, packetNumber: 14)  // gap: immediate
        var a = acks(h.exchange())
        XCTAssertEqual(a.last?.ranges, [14...14, 10...11])
        h.send1RTT(Frames.ping, packetNumber: 12)  // below the largest: immediate
        a = acks(h.exchange())
        XCTAssertEqual(a.last?.ranges, [14...14, 10...12])
    }

    /// §12.3: a duplicate packet is discarded (its frames are not processed again).
    func testDuplicatePacketIsDropped() {
        let (h, c) = established()
        let p = h.client.packet(.application, Frames.stream(0, [1, 2, 3]), packetNumber: 20)
        h.deliver(p)
        XCTAssertEqual(h.takeEvents(), [.streamOpened(0), .streamReadable(0)])
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        h.deliver(p)
        XCTAssertTrue(h.takeEvents().isEmpty)
    }

    /// §13.2.4: once our ACK is acknowledged, its ranges are not repeated.
    func testAckedAckRangesAreForgotten() {
        let (h, _) = established()
        h.send1RTT(Frames.ping, packetNumber: 5)
        h.send1RTT(Frames.ping, packetNumber: 6)
        let first = h.exchange()
        XCTAssertEqual(acks(first).last?.ranges, [5...6])
        h.ack1RTT(first)
        h.send1RTT(Frames.ping, packetNumber: 9)
        h.send1RTT(Frames.ping, packetNumber: 10)
        let a = acks(h.exchange())
        XCTAssertEqual(a.last?.ranges.first, 9...10)
        XCTAssertFalse(a.last!.ranges.contains(5...6))
    }

    /// Initial and Handshake packets are acknowledged at once, with ACK Delay 0.
    func testHandshakeSpacesAckImmediately() {
        let h = ConnectionHarness()
        let flight = h.sendClientHello()
        let initialAck = acks(flight.filter { $0.space == .initial })
        XCTAssertEqual(initialAck.first?.frame.ackDelay, 0)
        XCTAssertEqual(initialAck.first?.ranges, [0...0])
    }

    /// §13.1: an ACK of a packet we never sent is a PROTOCOL_VIOLATION.
    func testAckOfUnsentPacket() {
        let (h, _) = established()
        h.send1RTT(Frames.ack([1000...1000]))
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x0a, application: false))])
    }

    /// The ranges an ACK frame carries are bounded (ReceivedPackets.maxRanges).
    func testAckRangesAreBounded() {
        let (h, _) = established()
        for i: UInt64 in 0..<50 { h.send1RTT(Frames.ack([0...0]), packetNumber: 10 + 2 * i) }
        h.send1RTT(Frames.ping, packetNumber: 200)
        let a = acks(h.exchange())
        XCTAssertLessThanOrEqual(a.last!.ranges.count, ReceivedPackets.maxRanges)
        XCTAssertEqual(a.last!.ranges.first, 200...200)
    }
}
