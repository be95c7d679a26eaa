// The loss detection timer's PTO mode, RFC 9002 §6.2 (A.8, A.9), and key
// discard (§6.4, A.11).

import XCTest
import Core
@testable import QUIC

final class ProbeTimeoutTests: XCTestCase {
    /// §6.2.1: PTO = smoothed_rtt + max(4*rttvar, kGranularity) + max_ack_delay,
    /// from the last ack-eliciting packet sent; before a sample, 333 ms based.
    func testApplicationPTOIncludesMaxAckDelay() {
        var h = RecoveryHarness(maxAckDelay: ms(25))
        h.send()
        XCTAssertEqual(h.deadline(), at(ms: 999 + 25))
        h.advance(ms: 100); h.ack([0...0])                    // srtt 100, rttvar 50
        h.advance(ms: 10); h.send()                           // t=110
        XCTAssertEqual(h.deadline(), at(ms: 110 + 100 + 200 + 25))
        h.advance(ms: 5); h.send()                            // restarted by a newer ack-eliciting packet
        XCTAssertEqual(h.deadline(), at(ms: 115 + 325))
        h.send(bytes: 40, ackEliciting: false, inFlight: false)   // ACK-only: no restart
        XCTAssertEqual(h.deadline(), at(ms: 115 + 325))
    }

    /// §6.2.1: "When the PTO is armed for Initial or Handshake packet number
    /// spaces, the max_ack_delay in the PTO period computation is set to 0".
    func testHandshakeSpacesPTOExcludesMaxAckDelay() {
        var h = RecoveryHarness(maxAckDelay: ms(25))
        h.send(.initial)
        XCTAssertEqual(h.deadline(confirmed: false), at(ms: 999))
        h.advance(ms: 10)
        h.send(.handshake)
        // "the timer MUST be set to the earlier value of the Initial and Handshake packet number spaces"
        XCTAssertEqual(h.deadline(confirmed: false), at(ms: 999))
        h.advance(ms: 10)
        h.ack(.initial, [0...0], confirmed: false)            // sample 20 ms: srtt 20, rttvar 10
        XCTAssertEqual(h.deadline(confirmed: false), at(ms: 10 + 20 + 40))   // Handshake's
    }

    /// §6.2.1: "An endpoint MUST NOT set its PTO timer for the Application Data
    /// packet number space until the handshake is confirmed."
    func testNoApplicationPTOBeforeHandshakeConfirmed() {
        var h = RecoveryHarness()
        h.send(.application)
        XCTAssertNil(h.deadline(confirmed: false))
        h.advance(ms: 2_000)
        XCTAssertEqual(h.fire(confirmed: false).action, .none)
        XCTAssertEqual(h.recovery.ptoCount, 0)
        h.send(.handshake)                                    // t=2000
        XCTAssertEqual(h.deadline(confirmed: false), at(ms: 2_999))
        XCTAssertEqual(h.deadline(confirmed: true), at(ms: 1_024))   // confirmed: application is earlier
    }

    /// §6.2.1: on expiry "the PTO backoff MUST be increased, resulting in the PTO
    /// period being set to twice its current value"; it is reset by an acknowledgment.
    /// §6.2: a PTO "MUST NOT cause prior unacknowledged packets to be marked as lost".
    /// §6.2.4: one or two ack-eliciting probes in that space.
    func testBackoffDoublesAndAcknowledgmentResetsIt() {
        var h = RecoveryHarness(maxAckDelay: ms(25))
        h.send(); h.advance(ms: 100); h.ack([0...0])          // srtt 100, rttvar 50: PTO 325
        h.send()                                              // 1 at t=100
        XCTAssertEqual(h.deadline(), at(ms: 425))
        h.advance(to: at(ms: 425))
        let fired = h.fire()
        XCTAssertEqual(fired.action, .probe(space: .application, count: 2))
        XCTAssertEqual(fired.lost, [])
        XCTAssertEqual(h.recovery.ptoCount, 1)
        XCTAssertEqual(h.recovery.bytesInFlight, 1_200)
        XCTAssertEqual(h.deadline(), at(ms: 100 + 650))       // (300 + 25) * 2
        h.send(); h.send()                                    // probes 2, 3 at t=425
        XCTAssertEqual(h.deadline(), at(ms: 425 + 650))
        h.advance(to: at(ms: 1_075))
        XCTAssertEqual(h.fire().action, .probe(space: .application, count: 2))
        XCTAssertEqual(h.recovery.ptoCount, 2)
        XCTAssertEqual(h.deadline(), at(ms: 425 + 1_300))
        h.advance(ms: 10)
        h.ack([3...3])                                        // acknowledgment resets the backoff
        XCTAssertEqual(h.recovery.ptoCount, 0)
    }

    /// §6.2.1: "The PTO timer MUST NOT be set if a timer is set for time
    /// threshold loss detection."
    func testLossTimeTakesPrecedenceOverPTO() {
        var h = RecoveryHarness()
        h.send(); h.advance(ms: 5); h.send(); h.advance(ms: 80)
        h.ack([1...1])
        h.advance(ms: 1); h.send()
        XCTAssertEqual(h.deadline(), at(ms: 90))              // loss time, although a PTO would be later
        XCTAssertEqual(h.deadline(blocked: true), at(ms: 90))
    }

    /// §6.2.2.1: a server at its anti-amplification limit arms no PTO (the connection says so).
    func testAmplificationBlockedServerArmsNoPTO() {
        var h = RecoveryHarness()
        h.send(.initial)
        XCTAssertNil(h.deadline(confirmed: false, blocked: true))
        XCTAssertEqual(h.deadline(confirmed: false, blocked: false), at(ms: 999))
    }

    /// A.8: nothing ack-eliciting in flight and the peer validated our address
    /// (always, for a server): no timer.
    func testServerWithNothingInFlightHasNoTimer() {
        var h = RecoveryHarness()
        XCTAssertNil(h.deadline(confirmed: false))
        h.send(.initial, bytes: 40, ackEliciting: false, inFlight: false)
        XCTAssertNil(h.deadline(confirmed: false))
        XCTAssertEqual(h.fire(confirmed: false).action, .none)
    }

    /// §6.2.2.1: "the client MUST set the PTO timer if the client has not received
    /// an acknowledgment for any of its Handshake packets and the handshake is not
    /// confirmed ..., even if there are no packets in flight"; it sends a Handshake
    /// packet if it has Handshake keys, else an Initial. §6.2.1: a client does not
    /// reset the backoff on Initial acknowledgments.
    func testClientAntiDeadlockPTO() {
        var h = RecoveryHarness(role: .client)
        h.send(.initial)
        h.advance(ms: 50)
        h.send(.initial)
        h.advance(ms: 50)
        h.ack(.initial, [0...1], confirmed: false)            // t=100: srtt 50, rttvar 25: PTO 150
        XCTAssertEqual(h.recovery.bytesInFlight, 0)
        XCTAssertEqual(h.deadline(confirmed: false), at(ms: 250))   // from the ACK, though nothing is in flight
        h.advance(to: at(ms: 250))
        XCTAssertEqual(h.fire(confirmed: false).action, .probe(space: .initial, count: 1))
        XCTAssertEqual(h.deadline(confirmed: false), at(ms: 250 + 300))
        h.send(.initial)
        h.advance(ms: 10)
        h.ack(.initial, [2...2], confirmed: false)
        XCTAssertEqual(h.recovery.ptoCount, 1)                // not reset by an Initial ACK
        h.recovery.discard(space: .initial)                   // now it has Handshake keys
        XCTAssertEqual(h.recovery.ptoCount, 0)
        h.send(.handshake, bytes: 40, ackEliciting: false, inFlight: false)
        XCTAssertNotNil(h.deadline(confirmed: false))
        h.advance(ms: 10_000)
        XCTAssertEqual(h.fire(confirmed: false).action, .probe(space: .handshake, count: 1))
        h.send(.handshake)
        h.advance(ms: 10)
        h.ack(.handshake, [1...1], confirmed: false)          // a Handshake ACK: the server validated us
        XCTAssertEqual(h.recovery.ptoCount, 0)
        XCTAssertNil(h.deadline(confirmed: false))
        // A server never arms the anti-deadlock timer.
        var server = RecoveryHarness(role: .server)
        server.send(.initial); server.advance(ms: 10); server.ack(.initial, [0...0], confirmed: false)
        XCTAssertNil(server.deadline(confirmed: false))
    }

    /// §6.4 / A.11: discarding keys removes the space's bytes from flight, resets
    /// the PTO backoff and the timer for that space; no packet is reported.
    func testDiscardForgetsSpace() {
        var h = RecoveryHarness()
        h.send(.initial); h.send(.initial)
        h.advance(ms: 5)
        h.send(.handshake)
        h.advance(to: at(ms: 999))
        XCTAssertEqual(h.fire(confirmed: false).action, .probe(space: .initial, count: 2))
        XCTAssertEqual(h.recovery.ptoCount, 1)
        XCTAssertEqual(h.recovery.bytesInFlight, 3 * 1_200)
        h.recovery.discard(space: .initial)
        XCTAssertEqual(h.recovery.bytesInFlight, 1_200)
        XCTAssertEqual(h.recovery.ptoCount, 0)
        XCTAssertEqual(h.recovery.ledger(space: .initial).count, 0)
        XCTAssertEqual(h.deadline(confirmed: false), at(ms: 5 + 999))   // Handshake's, no backoff
        var lost: [UInt64] = []
        h.recovery.onAckReceived(space: .initial, ranges: [0...1], ackDelay: 0, handshakeConfirmed: false, now: h.now,
                                 acked: { lost.append($0) }, lost: { lost.append($0) })
        XCTAssertEqual(lost, [])
    }

    /// RFC 9000 §10.2: closing and draining last three times the current PTO.
    func testProbeTimeoutForClosingPeriods() {
        var h = RecoveryHarness(maxAckDelay: ms(25))
        XCTAssertEqual(h.recovery.probeTimeout(includingMaxAckDelay: true), 3 * ms(999 + 25))
        h.send(); h.advance(ms: 100); h.ack([0...0])
        XCTAssertEqual(h.recovery.probeTimeout(includingMaxAckDelay: true), 3 * ms(325))
        XCTAssertEqual(h.recovery.probeTimeout(includingMaxAckDelay: false), 3 * ms(300))
    }

    /// §6.2.1 backoff with a huge RTT and many expiries saturates instead of trapping.
    func testBackoffSaturates() {
        var h = RecoveryHarness()
        h.send(); h.advance(ms: 1_000_000_000); h.ack([0...0])   // an absurd 11-day RTT sample
        h.send()
        for _ in 0..<40 {
            guard let deadline = h.deadline() else { return XCTFail() }
            h.advance(to: deadline)
            guard case .probe = h.fire().action else { return XCTFail() }
        }
        XCTAssertEqual(h.recovery.ptoCount, 40)
        XCTAssertEqual(h.deadline(), Instant(nanoseconds: .max))
    }
}
