// LossRecovery's acknowledgment processing: RTT samples (RFC 9002 §5.1) and
// acknowledgment-based loss detection (§6.1, A.7, A.10).

import XCTest
import Core
@testable import QUIC

final class LossDetectionTests: XCTestCase {
    /// §5.1: latest_rtt = ack time - send time of the largest acknowledged.
    func testRTTSampleFromLargestAcknowledged() {
        var h = RecoveryHarness()
        h.send(); h.advance(ms: 10); h.send()
        h.advance(ms: 90)
        let result = h.ack([0...1], delay: ms(5))
        XCTAssertEqual(result.acked.sorted(), [0, 1])
        XCTAssertEqual(h.recovery.rtt.latestRTT, ms(90))   // packet 1, sent at 10 ms
        XCTAssertEqual(h.recovery.rtt.smoothedRTT, ms(90))
        XCTAssertEqual(h.recovery.rtt.minRTT, ms(90))
    }

    /// §5.1: "SHOULD NOT be used to update RTT estimates if it does not newly
    /// acknowledge the largest acknowledged packet".
    func testNoSampleWhenLargestNotNewlyAcknowledged() {
        var h = RecoveryHarness()
        h.send(); h.send(); h.send()
        h.advance(ms: 100)
        h.ack([2...2])
        XCTAssertEqual(h.recovery.rtt.latestRTT, ms(100))
        h.advance(ms: 300)
        let result = h.ack([0...2])   // newly acks 0 and 1, but 2 was already acknowledged
        XCTAssertEqual(result.acked.sorted(), [0, 1])
        XCTAssertEqual(h.recovery.rtt.latestRTT, ms(100))
        XCTAssertEqual(h.recovery.rtt.smoothedRTT, ms(100))
        // A duplicate ACK acknowledges nothing and changes nothing.
        XCTAssertEqual(h.ack([0...2]).acked, [])
    }

    /// §5.1: "An RTT sample MUST NOT be generated on receiving an ACK frame that
    /// does not newly acknowledge at least one ack-eliciting packet."
    func testNoSampleFromAckOfOnlyNonAckElicitingPackets() {
        var h = RecoveryHarness()
        h.send(bytes: 50, ackEliciting: false, inFlight: false)
        h.advance(ms: 500)
        XCTAssertEqual(h.ack([0...0], delay: ms(400)).acked, [0])
        XCTAssertFalse(h.recovery.rtt.hasSample)
        XCTAssertEqual(h.recovery.rtt.smoothedRTT, ms(333))
    }

    /// §5.3: the ACK Delay of Initial packets is ignored (MAY; they are not delayed).
    func testInitialSpaceIgnoresAckDelay() {
        var h = RecoveryHarness()
        h.send(.initial); h.advance(ms: 100); h.ack(.initial, [0...0], confirmed: false)
        h.send(.initial); h.advance(ms: 120); h.ack(.initial, [1...1], delay: ms(20), confirmed: false)
        XCTAssertEqual(h.recovery.rtt.smoothedRTT, 102_500_000)   // 7/8*100 + 1/8*120, not 1/8*100
        h.send(.handshake); h.advance(ms: 120); h.ack(.handshake, [0...0], delay: ms(20), confirmed: false)
        XCTAssertEqual(h.recovery.rtt.smoothedRTT, 102_187_500)   // 7/8*102.5 + 1/8*100: delay subtracted
    }

    /// §6.1.1: lost when kPacketThreshold (3) newer packets are acknowledged.
    func testPacketThreshold() {
        var h = RecoveryHarness()
        for _ in 0..<5 { h.send() }
        h.advance(ms: 50)
        var result = h.ack([2...2])
        XCTAssertEqual(result.lost, [])                 // 2 >= 0 + 3 is false
        result = h.ack([3...3])
        XCTAssertEqual(result.lost, [0])               // 3 >= 0 + 3
        result = h.ack([4...4])
        XCTAssertEqual(result.lost, [1])
        XCTAssertEqual(h.recovery.bytesInFlight, 0)
        XCTAssertNil(h.deadline())
    }

    /// §6.1.2: lost once sent more than 9/8 * max(smoothed_rtt, latest_rtt) ago,
    /// even with fewer than kPacketThreshold newer packets acknowledged.
    func testTimeThresholdDeclaresOldPacketLost() {
        var h = RecoveryHarness()
        h.send()                  // 0 at t=0
        h.advance(ms: 20)
        h.send()                  // 1 at t=20
        h.advance(ms: 80)         // t=100: sample 80 ms, loss delay 90 ms: lost if sent <= 10 ms
        XCTAssertEqual(h.ack([1...1]).lost, [0])
        XCTAssertEqual(h.recovery.bytesInFlight, 0)
    }

    /// §6.1.2: "If packets sent prior to the largest acknowledged packet cannot
    /// yet be declared lost, then a timer SHOULD be set for the remaining time."
    func testTimeThresholdTimerFiresForYoungerPacket() {
        var h = RecoveryHarness()
        h.send()                  // 0 at t=0
        h.advance(ms: 5)
        h.send()                  // 1 at t=5
        h.advance(ms: 80)         // t=85: sample 80 ms; loss delay 90 ms; 0 was sent 85 ms ago
        XCTAssertEqual(h.ack([1...1]).lost, [])
        XCTAssertEqual(h.deadline(), at(ms: 90))       // time_sent 0 + 90 ms
        XCTAssertEqual(h.recovery.bytesInFlight, 1_200)
        h.advance(ms: 4)
        XCTAssertEqual(h.fire().action, .none)         // early call: nothing
        h.advance(ms: 1)
        let fired = h.fire()
        XCTAssertEqual(fired.action, .lossDetected)
        XCTAssertEqual(fired.lost, [0])
        XCTAssertEqual(h.recovery.bytesInFlight, 0)
        XCTAssertNil(h.deadline())
    }

    /// §6.1: only packets sent before an acknowledged one can be lost; later ones wait.
    func testPacketsAfterLargestAcknowledgedAreNotLost() {
        var h = RecoveryHarness()
        for _ in 0..<8 { h.send() }
        h.advance(ms: 10)
        XCTAssertEqual(h.ack([3...3]).lost, [0])
        XCTAssertEqual(h.recovery.ledger(space: .application).largestAcked, 3)
        XCTAssertEqual(h.recovery.bytesInFlight, 6 * 1_200)   // 1, 2 (within threshold), 4...7 (after)
        XCTAssertEqual(h.deadline(), Instant(nanoseconds: 11_250_000))   // 1 and 2 wait for 9/8 * 10 ms
    }

    /// A.10 with time threshold: max(smoothed_rtt, latest_rtt) and the kGranularity floor.
    func testTimeThresholdHasGranularityFloor() {
        var h = RecoveryHarness()
        h.send()
        h.send()
        h.recovery.onPacketSent(space: .application, packetNumber: 2, bytes: 1_200, ackEliciting: true,
                                inFlight: true, now: Instant(nanoseconds: 100_000))
        h.advance(to: Instant(nanoseconds: 200_000))   // 0.2 ms RTT
        XCTAssertEqual(h.ack([2...2]).lost, [])
        XCTAssertEqual(h.deadline(), Instant(nanoseconds: kGranularity))   // 0 + 1 ms, not 0 + 0.225 ms
    }

    /// A.7: ranges with gaps acknowledge exactly their packets; numbers never
    /// sent are skipped; ACK-only packets are acknowledged but were never in flight.
    func testRangesAcknowledgeExactlyTheirPackets() {
        var h = RecoveryHarness()
        for _ in 0..<6 { h.send() }
        h.send(bytes: 40, ackEliciting: false, inFlight: false)   // 6: ACK-only
        XCTAssertEqual(h.recovery.bytesInFlight, 6 * 1_200)
        h.advance(ms: 30)
        let result = h.ack([6...6, 3...4, 0...0])
        XCTAssertEqual(result.acked, [6, 3, 4, 0])
        XCTAssertEqual(result.lost, [1, 2])           // 6 >= 1 + 3 and 2 + 3; not 5
        XCTAssertEqual(h.recovery.bytesInFlight, 1_200)  // only 5 left
        XCTAssertEqual(h.recovery.ledger(space: .application).largestAcked, 6)
        // A.7: the largest (6) is newly acknowledged and ack-eliciting packets are
        // among the newly acknowledged: a sample, timed from packet 6.
        XCTAssertEqual(h.recovery.rtt.latestRTT, ms(30))
    }

    /// An ACK-only packet can be declared lost too: every packet ends once.
    func testNonAckElicitingPacketDeclaredLostWithoutCongestionEvent() {
        var h = RecoveryHarness()
        h.send(bytes: 40, ackEliciting: false, inFlight: false)
        for _ in 0..<3 { h.send() }
        h.advance(ms: 10)
        XCTAssertEqual(h.ack([3...3]).lost, [0])
        XCTAssertNil(h.recovery.controller.recoveryStartTime)   // no in-flight loss
    }

    /// A packet declared lost and then acknowledged (spurious loss) is not reported again.
    func testSpuriouslyLostPacketNotReportedAcknowledged() {
        var h = RecoveryHarness()
        for _ in 0..<4 { h.send() }
        h.advance(ms: 10)
        XCTAssertEqual(h.ack([3...3]).lost, [0])
        let late = h.ack([0...3])
        XCTAssertEqual(late.acked, [1, 2])
        XCTAssertEqual(late.lost, [])
    }

    /// Loss detection is per space (§6): an ACK in one space never declares
    /// packets of another lost.
    func testLossDetectionIsPerSpace() {
        var h = RecoveryHarness()
        h.send(.handshake)
        for _ in 0..<4 { h.send(.application) }
        h.advance(ms: 2_000)
        XCTAssertEqual(h.ack(.application, [3...3]).lost, [0])
        XCTAssertEqual(h.recovery.ledger(space: .handshake).bytesInFlight, 1_200)
        XCTAssertNil(h.recovery.ledger(space: .handshake).lossTime)
    }

    /// RFC 9000 §13.1 support: wasSent / largestSent for the connection's check.
    func testWasSentAndLargestSent() {
        var h = RecoveryHarness()
        XCTAssertNil(h.recovery.largestSent(space: .initial))
        XCTAssertFalse(h.recovery.wasSent(space: .initial, packetNumber: 0))
        h.send(.initial)               // 0
        h.send(.initial, skip: 1)      // 2: 1 skipped
        XCTAssertEqual(h.recovery.largestSent(space: .initial), 2)
        XCTAssertTrue(h.recovery.wasSent(space: .initial, packetNumber: 0))
        XCTAssertFalse(h.recovery.wasSent(space: .initial, packetNumber: 1))
        XCTAssertTrue(h.recovery.wasSent(space: .initial, packetNumber: 2))
        XCTAssertFalse(h.recovery.wasSent(space: .initial, packetNumber: 3))
        XCTAssertFalse(h.recovery.wasSent(space: .handshake, packetNumber: 0))
        h.advance(ms: 10)
        XCTAssertEqual(h.ack(.initial, [0...2], confirmed: false).acked, [0, 2])   // the gap is skipped
        XCTAssertTrue(h.recovery.wasSent(space: .initial, packetNumber: 0))   // settled, still known as sent
        h.recovery.discard(space: .initial)
        XCTAssertTrue(h.recovery.wasSent(space: .initial, packetNumber: 2))
        XCTAssertEqual(h.recovery.largestSent(space: .initial), 2)
    }

    /// The ranges of a decoded ACK frame (QUIC.AckRanges, largest first, RFC
    /// 9000 §19.3.1) feed onAckReceived directly.
    func testDecodedAckFrameRanges() throws {
        var h = RecoveryHarness()
        for _ in 0..<12 { h.send() }
        h.advance(ms: 40)
        let ranges: [ClosedRange<UInt64>] = [9...11, 5...6, 0...2]
        let wire = encoded(size: FrameEncoder.ackSize(ranges: ranges, ackDelay: 0)) {
            FrameEncoder.encodeAck(ranges: ranges, ackDelay: 0, into: $0)
        }
        guard case .ack(let frame) = try decodeOne(wire) else { return XCTFail() }
        var acked: [UInt64] = [], lost: [UInt64] = []
        wire.withUnsafeBytes { bytes in
            h.recovery.onAckReceived(space: .application, ranges: frame.ranges(in: bytes), ackDelay: 0,
                                     handshakeConfirmed: true, now: h.now,
                                     acked: { acked.append($0) }, lost: { lost.append($0) })
        }
        XCTAssertEqual(acked, [9, 10, 11, 5, 6, 0, 1, 2])
        XCTAssertEqual(lost, [3, 4, 7, 8])   // 11 >= 8 + 3
        XCTAssertEqual(h.recovery.bytesInFlight, 0)
    }
}
