// RTT estimation, RFC 9002 §5 (and A.7 UpdateRtt), with exact numbers.

import XCTest
import Core
@testable import QUIC

final class RTTEstimatorTests: XCTestCase {
    /// §5.3 / §6.2.2: before a sample, smoothed_rtt = 333 ms, rttvar = 166.5 ms,
    /// "handshakes starting with a PTO of 1 second".
    func testInitialValuesGiveAOneSecondPTO() {
        let rtt = RTTEstimator()
        XCTAssertFalse(rtt.hasSample)
        XCTAssertEqual(rtt.smoothedRTT, ms(333))
        XCTAssertEqual(rtt.rttVariance, 166_500_000)
        XCTAssertEqual(rtt.minRTT, 0)
        XCTAssertEqual(rtt.latestRTT, 0)
        XCTAssertEqual(rtt.probeTimeout(maxAckDelay: 0), ms(999))
        XCTAssertEqual(RTTEstimator(initialRTT: ms(100)).smoothedRTT, ms(100))
    }

    /// §5.2 "min_rtt MUST be set to the latest_rtt on the first RTT sample";
    /// §5.3 the first sample resets the estimator (ack delay not used).
    func testFirstSampleResetsEstimator() {
        var rtt = RTTEstimator()
        rtt.update(latest: ms(100), ackDelay: ms(20), maxAckDelay: ms(25), handshakeConfirmed: true)
        XCTAssertTrue(rtt.hasSample)
        XCTAssertEqual(rtt.latestRTT, ms(100))
        XCTAssertEqual(rtt.minRTT, ms(100))
        XCTAssertEqual(rtt.smoothedRTT, ms(100))
        XCTAssertEqual(rtt.rttVariance, ms(50))
    }

    /// §5.3 formulae: adjusted = latest - ack_delay (when >= min_rtt),
    /// rttvar = 3/4 rttvar + 1/4 |smoothed - adjusted|, smoothed = 7/8 smoothed + 1/8 adjusted.
    func testSubsequentSampleFormula() {
        var rtt = RTTEstimator()
        rtt.update(latest: ms(100), ackDelay: 0, maxAckDelay: ms(25), handshakeConfirmed: true)
        rtt.update(latest: ms(160), ackDelay: ms(20), maxAckDelay: ms(25), handshakeConfirmed: true)
        // adjusted = 140; rttvar = 0.75*50 + 0.25*40 = 47.5; smoothed = 87.5 + 17.5 = 105.
        XCTAssertEqual(rtt.latestRTT, ms(160))
        XCTAssertEqual(rtt.minRTT, ms(100))
        XCTAssertEqual(rtt.rttVariance, 47_500_000)
        XCTAssertEqual(rtt.smoothedRTT, ms(105))
    }

    /// §5.3: after confirmation "MUST use the lesser of the acknowledgment delay
    /// and the peer's max_ack_delay".
    func testAckDelayCappedByMaxAckDelayAfterConfirmation() {
        var rtt = RTTEstimator()
        rtt.update(latest: ms(100), ackDelay: 0, maxAckDelay: ms(25), handshakeConfirmed: true)
        rtt.update(latest: ms(200), ackDelay: ms(80), maxAckDelay: ms(25), handshakeConfirmed: true)
        // adjusted = 200 - 25 = 175: smoothed = 87.5 + 21.875.
        XCTAssertEqual(rtt.smoothedRTT, 109_375_000)
    }

    /// §5.3: "SHOULD ignore the peer's max_ack_delay until the handshake is confirmed".
    func testAckDelayNotCappedBeforeConfirmation() {
        var rtt = RTTEstimator()
        rtt.update(latest: ms(100), ackDelay: 0, maxAckDelay: ms(25), handshakeConfirmed: false)
        rtt.update(latest: ms(200), ackDelay: ms(80), maxAckDelay: ms(25), handshakeConfirmed: false)
        // adjusted = 200 - 80 = 120: smoothed = 87.5 + 15.
        XCTAssertEqual(rtt.smoothedRTT, 102_500_000)
    }

    /// §5.3: "MUST NOT subtract the acknowledgment delay from the RTT sample if
    /// the resulting value is smaller than the min_rtt".
    func testAckDelayNotSubtractedBelowMinRTT() {
        var rtt = RTTEstimator()
        rtt.update(latest: ms(100), ackDelay: 0, maxAckDelay: ms(25), handshakeConfirmed: true)
        rtt.update(latest: ms(110), ackDelay: ms(20), maxAckDelay: ms(25), handshakeConfirmed: true)
        // 110 - 20 = 90 < min_rtt 100: adjusted stays 110; smoothed = 87.5 + 13.75.
        XCTAssertEqual(rtt.smoothedRTT, 101_250_000)
        XCTAssertEqual(rtt.rttVariance, 40_000_000)   // 37.5 + 0.25 * 10
    }

    /// §5.2: min_rtt is the lesser of min_rtt and latest_rtt, ignoring ack delay.
    func testMinRTTTracksSmallestUnadjustedSample() {
        var rtt = RTTEstimator()
        rtt.update(latest: ms(100), ackDelay: 0, maxAckDelay: ms(25), handshakeConfirmed: true)
        rtt.update(latest: ms(120), ackDelay: ms(25), maxAckDelay: ms(25), handshakeConfirmed: true)
        XCTAssertEqual(rtt.minRTT, ms(100))   // not 95
        rtt.update(latest: ms(80), ackDelay: 0, maxAckDelay: ms(25), handshakeConfirmed: true)
        XCTAssertEqual(rtt.minRTT, ms(80))
        XCTAssertEqual(rtt.latestRTT, ms(80))
    }

    /// §6.2.1: PTO = smoothed_rtt + max(4*rttvar, kGranularity) + max_ack_delay;
    /// §6.1.2: time threshold = max(9/8 * max(smoothed_rtt, latest_rtt), kGranularity).
    func testProbeTimeoutAndLossDelay() {
        var rtt = RTTEstimator()
        rtt.update(latest: ms(80), ackDelay: 0, maxAckDelay: 0, handshakeConfirmed: true)
        XCTAssertEqual(rtt.probeTimeout(maxAckDelay: ms(25)), ms(80 + 160 + 25))
        XCTAssertEqual(rtt.lossDelay, ms(90))
        rtt.update(latest: ms(160), ackDelay: 0, maxAckDelay: 0, handshakeConfirmed: true)
        XCTAssertEqual(rtt.lossDelay, ms(180))   // latest_rtt > smoothed_rtt wins
        var tiny = RTTEstimator()
        tiny.update(latest: 100_000, ackDelay: 0, maxAckDelay: 0, handshakeConfirmed: true)
        XCTAssertEqual(tiny.lossDelay, kGranularity)
        XCTAssertEqual(tiny.probeTimeout(maxAckDelay: 0), 100_000 + kGranularity)
    }
}
