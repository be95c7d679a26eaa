// When an ACK goes out (RFC 9000 §13.2) and the ACK frequency extension
// (draft-ietf-quic-ack-frequency) that moves those rules. Complements
// AckTests.swift.

import XCTest
import Core
@testable import QUIC

final class AckRulesTests: XCTestCase {
    private func established(_ configuration: QUICConfiguration = QUICConfiguration()) -> (ConnectionHarness, QUICConnection) {
        let h = ConnectionHarness(configuration: configuration)
        h.completeHandshake()
        _ = h.takeEvents()
        _ = h.exchange()
        return (h, h.connection!)
    }

    private func acks(_ packets: [ReceivedPacket]) -> [[ClosedRange<UInt64>]] {
        packets.flatMap { p in
            p.frames.compactMap { f -> [ClosedRange<UInt64>]? in
                guard case .ack(let a) = f else { return nil }
                return p.bytes.withUnsafeBytes { Array(a.ranges(in: $0)) }
            }
        }
    }

    private func ackFrequency(_ sequence: UInt64, threshold: UInt64, delay: UInt64, reordering: UInt64) -> [UInt8] {
        let f = AckFrequencyFrame(sequenceNumber: sequence, ackElicitingThreshold: threshold, requestMaxAckDelay: delay,
                                  reorderingThreshold: reordering)
        return Frames.build(FrameEncoder.ackFrequencySize(f)) { FrameEncoder.encodeAckFrequency(f, into: $0) }
    }

    // MARK: RFC 9000 §13.2

    /// §13.2.1: "MUST NOT send a non-ack-eliciting packet in response to a
    /// non-ack-eliciting packet, even if there are packet gaps": ACK-only
    /// packets with gaps get no ACK, not even when the packet builder is asked
    /// for a 1-RTT packet (the ranges only ride along with other frames).
    func testNonElicitingPacketsWithGapsGetNoAckOnlyPacket() {
        let (h, c) = established()
        for pn: UInt64 in [10, 12, 15] { h.send1RTT(Frames.ack([0...0]), packetNumber: pn) }
        XCTAssertTrue(h.drain().isEmpty)
        XCTAssertTrue(c.spaces[2].received.hasNewRanges)
        var buffer = [UInt8](repeating: 0, count: 1200)
        c.spaces[2].sent.begin(c.spaces[2].nextPacketNumber)  // as buildPacket does
        let written = buffer.withUnsafeMutableBytes { c.writeFrames(.application, into: $0, mode: .full, now: h.now) }
        c.spaces[2].sent.commit(keep: false)
        XCTAssertEqual(written.length, 0, "regression: an ACK-only packet nobody was owed")
        XCTAssertTrue(c.spaces[2].received.hasNewRanges, "the ranges wait for the next packet")
        // With something to carry, they ride along.
        h.send1RTT(Frames.ping, packetNumber: 16)
        h.send1RTT(Frames.ping, packetNumber: 17)
        XCTAssertEqual(acks(h.exchange()).last, [15...17, 12...12, 10...10])
    }

    /// §13.2.2: only ack-eliciting packets count toward the second that makes
    /// the ACK immediate.
    func testOnlyAckElicitingPacketsCount() {
        let (h, _) = established()
        h.send1RTT(Frames.ping, packetNumber: 10)
        h.send1RTT(Frames.ack([0...0]), packetNumber: 11)
        XCTAssertTrue(h.drain().isEmpty, "one ack-eliciting packet: delayed")
        h.send1RTT(Frames.ping, packetNumber: 12)
        XCTAssertEqual(acks(h.exchange()).last, [10...12])
    }

    /// §13.2.1: a gap between the largest ack-eliciting packet and a new one
    /// makes the ACK immediate even when a non-ack-eliciting packet sits
    /// just below the new one (it used to compare with the largest of any kind).
    func testGapBelowNewAckElicitingPacketIsImmediate() {
        let (h, _) = established()
        h.send1RTT(Frames.ping, packetNumber: 4)
        h.send1RTT(Frames.ping, packetNumber: 5)
        XCTAssertEqual(acks(h.exchange()).last, [4...5])
        h.send1RTT(Frames.ack([0...0]), packetNumber: 7)
        h.send1RTT(Frames.ping, packetNumber: 8)  // 6 is missing between 5 and 8
        XCTAssertEqual(acks(h.exchange()).last, [7...8, 4...5])
    }

    /// §13.2.1: "packets marked with the ECN Congestion Experienced (CE)
    /// codepoint in the IP header SHOULD be acknowledged immediately" — the
    /// hook ECN calls.
    func testCongestionExperiencedIsAcknowledgedAtOnce() {
        var r = ReceivedPackets()
        let now = Instant(nanoseconds: 1_000_000)
        r.record(1, ackEliciting: true, now: now, immediate: false, maxAckDelay: 25_000_000)
        XCTAssertFalse(r.ackDue(now: now))
        r.record(2, ackEliciting: false, now: now, immediate: false, maxAckDelay: 25_000_000, congestionExperienced: true)
        XCTAssertFalse(r.ackDue(now: now), "a CE-marked ACK-only packet still gets no ACK of its own")
        r.record(3, ackEliciting: true, now: now, immediate: false, maxAckDelay: 25_000_000, congestionExperienced: true)
        XCTAssertTrue(r.ackDue(now: now))
    }

    /// §13.2.4: once the peer acknowledged a packet carrying our ACK frame,
    /// the ranges that frame reported are not repeated — also when its
    /// largest lies inside the newest range (which used to keep them all).
    func testAcknowledgedRangesAreNotRepeated() {
        let (h, _) = established()
        for pn: UInt64 in [1, 3, 5, 7] { h.send1RTT(Frames.ping, packetNumber: pn) }
        let first = h.exchange()
        XCTAssertEqual(acks(first).last, [7...7, 5...5, 3...3, 1...1])
        h.ack1RTT(first)  // the client's packet 8
        h.send1RTT(Frames.ping, packetNumber: 9)
        h.send1RTT(Frames.ping, packetNumber: 10)
        XCTAssertEqual(acks(h.exchange()).last, [7...10])
    }

    // MARK: draft-ietf-quic-ack-frequency

    /// §5: IMMEDIATE_ACK makes its packet acknowledged at once.
    func testImmediateAck() {
        let (h, _) = established()
        h.send1RTT([0x1f], packetNumber: 10)
        XCTAssertEqual(acks(h.exchange()).last, [10...10])
    }

    /// §4, §6.1: Ack-Eliciting Threshold 9 and Request Max Ack Delay 5 ms:
    /// nine packets wait (until 5 ms after the first), the tenth is acknowledged at once.
    func testAckElicitingThresholdAndRequestedDelay() throws {
        let (h, _) = established()
        h.send1RTT(ackFrequency(0, threshold: 9, delay: 5000, reordering: 1), packetNumber: 10)
        XCTAssertEqual(try XCTUnwrap(h.endpoint.nextDeadline).nanoseconds - h.now.nanoseconds, 5_000_000)
        for pn: UInt64 in 11...18 { h.send1RTT(Frames.ping, packetNumber: pn) }
        XCTAssertTrue(h.drain().isEmpty, "nine ack-eliciting packets: still delayed")
        h.send1RTT(Frames.ping, packetNumber: 19)
        XCTAssertEqual(acks(h.exchange()).last, [10...19])
        // The delayed ACK now waits the requested 5 ms, not max_ack_delay (25 ms).
        h.send1RTT(Frames.ping, packetNumber: 20)
        XCTAssertEqual(try XCTUnwrap(h.endpoint.nextDeadline).nanoseconds - h.now.nanoseconds, 5_000_000)
        h.advance(nanoseconds: 5_000_000)
        XCTAssertEqual(acks(h.exchange()).last?.first, 10...20)
    }

    /// Threshold 0: every ack-eliciting packet at once.
    func testThresholdZeroAcknowledgesEveryPacket() {
        let (h, _) = established()
        h.send1RTT(ackFrequency(0, threshold: 0, delay: 25_000, reordering: 1), packetNumber: 10)
        XCTAssertEqual(acks(h.exchange()).last, [10...10])
        h.send1RTT(Frames.ping, packetNumber: 11)
        XCTAssertEqual(acks(h.exchange()).last, [10...11])
    }

    /// §6.2: Reordering Threshold 0 — out-of-order packets do not hurry the ACK;
    /// 3 — only a packet missing three below the largest does.
    func testReorderingThreshold() {
        var (h, _) = established()
        h.send1RTT(ackFrequency(0, threshold: 100, delay: 25_000, reordering: 0), packetNumber: 10)
        h.send1RTT(Frames.ping, packetNumber: 14)
        h.send1RTT(Frames.ping, packetNumber: 12)
        XCTAssertTrue(h.drain().isEmpty, "reordering ignored")

        (h, _) = established()
        h.send1RTT(ackFrequency(0, threshold: 100, delay: 25_000, reordering: 3), packetNumber: 10)
        h.send1RTT(Frames.ping, packetNumber: 12)  // 11 missing, 1 below the largest
        h.send1RTT(Frames.ping, packetNumber: 13)  // 2 below
        XCTAssertTrue(h.drain().isEmpty)
        h.send1RTT(Frames.ping, packetNumber: 14)  // 11 is now 3 below 14
        XCTAssertEqual(acks(h.exchange()).last, [12...14, 10...10])
    }

    /// §4: a frame whose sequence number is not above the largest seen is ignored.
    func testStaleAckFrequencyIsIgnored() {
        let (h, c) = established()
        h.send1RTT(ackFrequency(5, threshold: 9, delay: 5000, reordering: 1), packetNumber: 10)
        h.send1RTT(ackFrequency(4, threshold: 0, delay: 1000, reordering: 0), packetNumber: 11)
        XCTAssertEqual(c.spaces[2].received.policy.sequenceNumber, 5)
        XCTAssertEqual(c.spaces[2].received.policy.ackElicitingThreshold, 9)
        h.send1RTT(ackFrequency(5, threshold: 0, delay: 1000, reordering: 0), packetNumber: 12)
        XCTAssertEqual(c.spaces[2].received.policy.ackElicitingThreshold, 9, "equal is stale too")
        h.send1RTT(ackFrequency(6, threshold: 2, delay: 2000, reordering: 0), packetNumber: 13)
        XCTAssertEqual(c.spaces[2].received.policy,
                       AckPolicy(ackElicitingThreshold: 2, requestedMaxAckDelay: 2_000_000, reorderingThreshold: 0, sequenceNumber: 6))
    }

    /// §4: Request Max Ack Delay below our min_ack_delay (1000 µs) closes the
    /// connection with PROTOCOL_VIOLATION; §3: so does either frame when we
    /// did not advertise min_ack_delay.
    func testViolationsCloseTheConnection() {
        var (h, _) = established()
        h.send1RTT(ackFrequency(0, threshold: 1, delay: 999, reordering: 1), packetNumber: 10)
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x0a, application: false))])

        var configuration = QUICConfiguration()
        configuration.minAckDelay = nil
        for frame in [ackFrequency(0, threshold: 1, delay: 25_000, reordering: 1), [0x1f]] {
            (h, _) = established(configuration)
            h.send1RTT(frame, packetNumber: 10)
            XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x0a, application: false))])
        }
    }
}
