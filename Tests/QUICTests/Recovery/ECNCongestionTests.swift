// The congestion reaction to ECN-CE inside loss recovery (RFC 9002 §7.1,
// §A.7, §B.7), for both controllers: a congestion event dated by the
// largest acknowledged packet's send time, before the acknowledged bytes
// reach the controller, once per recovery period, with nothing lost.

import XCTest
import Core
@testable import QUIC

final class ECNCongestionTests: XCTestCase {
    private func ack(_ h: inout RecoveryHarness, _ range: ClosedRange<UInt64>, ce: Bool) -> (acked: [UInt64], lost: [UInt64], asked: Int) {
        var acked: [UInt64] = [], lost: [UInt64] = [], asked = 0
        h.recovery.onAckReceived(space: .application, ranges: [range], ackDelay: 0, handshakeConfirmed: true, now: h.now,
                                 acked: { acked.append($0) }, lost: { lost.append($0) },
                                 congestionExperienced: { asked += 1; return ce })
        return (acked, lost, asked)
    }

    func testNewReno() { check(.newReno) }
    func testCubic() { check(.cubic) }

    private func check(_ algorithm: CongestionAlgorithm) {
        var h = RecoveryHarness(algorithm: algorithm)
        for _ in 0..<10 { h.send() }  // the whole initial window: not application-limited (§7.8)
        h.advance(ms: 20)
        let initial = h.recovery.controller.congestionWindow
        // No CE: slow start grows the window by the bytes acknowledged.
        let plain = ack(&h, 0...1, ce: false)
        XCTAssertEqual(plain.asked, 1, "asked once per ACK that newly acknowledges something")
        XCTAssertEqual(h.recovery.controller.congestionWindow, initial + 2 * 1_200)
        // CE: one reduction, applied before the ACK's bytes (which then do not grow a window in recovery).
        let grown = h.recovery.controller.congestionWindow
        let marked = ack(&h, 2...4, ce: true)
        XCTAssertTrue(marked.lost.isEmpty)
        let reduced = h.recovery.controller.congestionWindow
        XCTAssertLessThan(reduced, grown)
        XCTAssertEqual(h.recovery.controller.recoveryStartTime, h.now)
        // More CE for packets sent before the reduction: the same recovery period.
        h.advance(ms: 5)
        _ = ack(&h, 5...9, ce: true)
        XCTAssertEqual(h.recovery.controller.congestionWindow, reduced, "one reduction per round (§7.3.2)")
        // A packet sent after the reduction, CE-marked: a new reduction.
        let pn = h.send()
        h.advance(ms: 20)
        _ = ack(&h, pn...pn, ce: true)
        XCTAssertLessThan(h.recovery.controller.congestionWindow, reduced)
        XCTAssertEqual(h.recovery.bytesInFlight, 0, "everything acknowledged, nothing lost")
    }

    /// §B.7 reads sent_packets[ack.largest_acked]: an ACK whose largest was
    /// already acknowledged brings no newly acknowledged packet and asks nothing.
    func testAnAckOfNothingNewAsksNothing() {
        var h = RecoveryHarness()
        for _ in 0..<3 { h.send() }
        h.advance(ms: 20)
        _ = ack(&h, 0...2, ce: false)
        let window = h.recovery.controller.congestionWindow
        XCTAssertEqual(ack(&h, 0...2, ce: true).asked, 0)
        XCTAssertEqual(h.recovery.controller.congestionWindow, window)
    }
}
