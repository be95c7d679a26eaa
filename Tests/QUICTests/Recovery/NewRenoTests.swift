// NewReno congestion control, RFC 9002 §7 and Appendix B, alone and driven
// through LossRecovery.

import XCTest
import Core
@testable import QUIC

final class NewRenoTests: XCTestCase {
    private let rtt = RTTEstimator()

    /// §7.2: initial window min(10 * max_datagram_size, max(14720, 2 * max_datagram_size));
    /// minimum window 2 * max_datagram_size.
    func testInitialAndMinimumWindow() {
        XCTAssertEqual(NewReno(maxDatagramSize: 1_200).congestionWindow, 12_000)
        XCTAssertEqual(NewReno(maxDatagramSize: 1_472).congestionWindow, 14_720)
        XCTAssertEqual(NewReno(maxDatagramSize: 9_000).congestionWindow, 18_000)
        XCTAssertEqual(NewReno(maxDatagramSize: 1_200).minimumWindow, 2_400)
        XCTAssertTrue(NewReno(maxDatagramSize: 1_200).isInSlowStart)   // §7.3.1: ssthresh starts infinite
    }

    /// §7.3.1: in slow start "the congestion window increases by the number of bytes acknowledged".
    func testSlowStartGrowsByBytesAcknowledged() {
        var cc = NewReno(maxDatagramSize: 1_200)
        cc.onPacketsAcked(bytes: 3_600, largestAckedSentTime: at(ms: 0), rtt: rtt, now: at(ms: 100), appLimited: false)
        XCTAssertEqual(cc.congestionWindow, 15_600)
    }

    /// §7.8: an underutilized window "SHOULD NOT be increased in either slow
    /// start or congestion avoidance".
    func testApplicationLimitedDoesNotGrow() {
        var cc = NewReno(maxDatagramSize: 1_200)
        cc.onPacketsAcked(bytes: 3_600, largestAckedSentTime: at(ms: 0), rtt: rtt, now: at(ms: 100), appLimited: true)
        XCTAssertEqual(cc.congestionWindow, 12_000)
        cc.onCongestionEvent(sentTime: at(ms: 0), now: at(ms: 100))
        cc.onPacketsAcked(bytes: 100_000, largestAckedSentTime: at(ms: 200), rtt: rtt, now: at(ms: 300), appLimited: true)
        XCTAssertEqual(cc.congestionWindow, 6_000)
    }

    /// §7.3.2: entering recovery halves: ssthresh = window / 2 and the window
    /// is set to it; "during a recovery period, the congestion window does not
    /// change in response to new losses"; acks of packets sent before recovery
    /// started do not grow it; an ack of a packet sent during recovery ends it
    /// and §7.3.3 congestion avoidance adds one datagram per window acknowledged.
    func testRecoveryPeriodThenCongestionAvoidance() {
        var cc = NewReno(maxDatagramSize: 1_200)
        cc.onCongestionEvent(sentTime: at(ms: 10), now: at(ms: 100))
        XCTAssertEqual(cc.slowStartThreshold, 6_000)
        XCTAssertEqual(cc.congestionWindow, 6_000)
        XCTAssertEqual(cc.recoveryStartTime, at(ms: 100))
        XCTAssertTrue(cc.isInRecovery(sentTime: at(ms: 100)))
        cc.onCongestionEvent(sentTime: at(ms: 90), now: at(ms: 120))     // same episode
        XCTAssertEqual(cc.congestionWindow, 6_000)
        XCTAssertEqual(cc.recoveryStartTime, at(ms: 100))
        cc.onPacketsAcked(bytes: 6_000, largestAckedSentTime: at(ms: 100), rtt: rtt, now: at(ms: 130), appLimited: false)
        XCTAssertEqual(cc.congestionWindow, 6_000)
        // A packet sent after recovery started is acknowledged: congestion avoidance.
        XCTAssertFalse(cc.isInSlowStart)
        cc.onPacketsAcked(bytes: 5_999, largestAckedSentTime: at(ms: 101), rtt: rtt, now: at(ms: 200), appLimited: false)
        XCTAssertEqual(cc.congestionWindow, 6_000)
        cc.onPacketsAcked(bytes: 1, largestAckedSentTime: at(ms: 150), rtt: rtt, now: at(ms: 210), appLimited: false)
        XCTAssertEqual(cc.congestionWindow, 7_200)
        // "at most one maximum datagram size for each congestion window": 7200 + 8400 bytes give two.
        cc.onPacketsAcked(bytes: 15_600, largestAckedSentTime: at(ms: 200), rtt: rtt, now: at(ms: 300), appLimited: false)
        XCTAssertEqual(cc.congestionWindow, 9_600)
        // A new loss of a packet sent after the recovery start is a new episode.
        cc.onCongestionEvent(sentTime: at(ms: 250), now: at(ms: 310))
        XCTAssertEqual(cc.congestionWindow, 4_800)
        XCTAssertEqual(cc.recoveryStartTime, at(ms: 310))
    }

    /// §7.2: the window never goes below kMinimumWindow in response to loss.
    func testWindowFloorIsMinimumWindow() {
        var cc = NewReno(maxDatagramSize: 1_200)
        var now: Int64 = 0
        for _ in 0..<10 {
            now += 100
            cc.onCongestionEvent(sentTime: at(ms: now - 1), now: at(ms: now))
        }
        XCTAssertEqual(cc.congestionWindow, 2_400)
        XCTAssertEqual(cc.slowStartThreshold, 1_200)
    }

    /// §7.6.2: "the sender's congestion window MUST be reduced to the minimum
    /// congestion window"; §7.3.1: it then reenters slow start.
    func testPersistentCongestionCollapsesToMinimumAndSlowStarts() {
        var cc = NewReno(maxDatagramSize: 1_200)
        cc.onCongestionEvent(sentTime: at(ms: 0), now: at(ms: 100))
        cc.onPersistentCongestion()
        XCTAssertEqual(cc.congestionWindow, 2_400)
        XCTAssertNil(cc.recoveryStartTime)
        XCTAssertTrue(cc.isInSlowStart)
        cc.onPacketsAcked(bytes: 1_200, largestAckedSentTime: at(ms: 50), rtt: rtt, now: at(ms: 200), appLimited: false)
        XCTAssertEqual(cc.congestionWindow, 3_600)   // grows again, even for a packet sent before
    }

    /// Through LossRecovery: ACKs grow the window in slow start; a loss enters
    /// recovery once; §7 sendAllowance is the window minus bytes in flight.
    func testLossRecoveryDrivesController() {
        var h = RecoveryHarness()
        for _ in 0..<10 { h.send() }
        XCTAssertEqual(h.recovery.sendAllowance, 0)
        h.advance(ms: 100)
        h.ack([0...9])
        XCTAssertEqual(h.window, 24_000)
        XCTAssertEqual(h.recovery.sendAllowance, 24_000)
        for _ in 0..<20 { h.send() }                          // 10...29 at t=100
        h.advance(ms: 100)
        let result = h.ack([13...29])                         // 10, 11, 12 lost by packet threshold
        XCTAssertEqual(result.lost, [10, 11, 12])
        XCTAssertEqual(h.recovery.controller.recoveryStartTime, at(ms: 200))
        XCTAssertEqual(h.window, 12_000)                      // halved once, no growth for packets sent before
        XCTAssertEqual(h.recovery.bytesInFlight, 0)
    }

    /// §7.8 through LossRecovery: when bytes in flight stayed well below the
    /// window, acknowledgments do not grow it.
    func testUnderutilizedWindowDoesNotGrowThroughLossRecovery() {
        var h = RecoveryHarness()
        for _ in 0..<3 { h.send() }                           // 3600 of 12000
        XCTAssertTrue(h.recovery.isApplicationLimited)
        h.advance(ms: 100)
        h.ack([0...2])
        XCTAssertEqual(h.window, 12_000)
        for _ in 0..<9 { h.send(bytes: 1_250) }               // 11250: within one packet of the window
        XCTAssertFalse(h.recovery.isApplicationLimited)
        h.advance(ms: 100)
        h.ack([3...11])
        XCTAssertEqual(h.window, 12_000 + 9 * 1_250)
    }

    /// §7.5 / §6.2.4: probes are not blocked by the window but count in flight.
    func testProbesBypassWindowButCountInFlight() {
        var h = RecoveryHarness()
        for _ in 0..<10 { h.send() }
        XCTAssertEqual(h.recovery.sendAllowance, 0)
        h.advance(to: at(ms: 1_024))
        guard case .probe(.application, let count) = h.fire().action else { return XCTFail() }
        for _ in 0..<count { h.send() }
        XCTAssertEqual(h.recovery.bytesInFlight, 14_400)
        XCTAssertEqual(h.recovery.sendAllowance, 0)
    }

    /// §6.4 / B.9: a key discard removes bytes from flight and tells the controller.
    func testDiscardTellsController() {
        struct Recorder: CongestionController {
            var congestionWindow = 10_000
            var sent = 0, discarded = 0
            mutating func onPacketSent(bytes: Int, now: Instant) { sent += bytes }
            mutating func onPacketsAcked(bytes: Int, largestAckedSentTime: Instant, rtt: RTTEstimator, now: Instant,
                                         appLimited: Bool) {}
            mutating func onCongestionEvent(sentTime: Instant, now: Instant) {}
            mutating func onPersistentCongestion() {}
            mutating func onPacketsDiscarded(bytes: Int) { discarded += bytes }
        }
        var recovery = LossRecovery(controller: Recorder(), maxAckDelay: 0, now: at(ms: 0))
        recovery.onPacketSent(space: .initial, packetNumber: 0, bytes: 1_200, ackEliciting: true, inFlight: true, now: at(ms: 0))
        recovery.onPacketSent(space: .initial, packetNumber: 1, bytes: 60, ackEliciting: false, inFlight: false, now: at(ms: 0))
        recovery.onPacketSent(space: .handshake, packetNumber: 0, bytes: 500, ackEliciting: true, inFlight: true, now: at(ms: 0))
        XCTAssertEqual(recovery.controller.sent, 1_700)       // the ACK-only packet is not in flight
        recovery.discard(space: .initial)
        XCTAssertEqual(recovery.controller.discarded, 1_200)
        XCTAssertEqual(recovery.bytesInFlight, 500)
        XCTAssertEqual(recovery.sendAllowance, 9_500)
    }
}
