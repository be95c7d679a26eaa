// Key updates the server starts and the AEAD limits (RFC 9001 §6.1, §6.5,
// §6.6), with the fake clock and thresholds of a few packets.

import XCTest
import Core
@testable import QUIC

final class KeyUpdateTests: XCTestCase {
    private func established(_ configure: (inout QUICConfiguration) -> Void = { _ in }) -> (ConnectionHarness, QUICConnection) {
        var configuration = QUICConfiguration()
        configure(&configuration)
        let h = ConnectionHarness(configuration: configuration)
        let answer = h.completeHandshake()
        _ = h.takeEvents()
        h.ack1RTT(answer)
        _ = h.takeEvents()
        return (h, h.connection!)
    }

    /// A request on stream 0 and `size` bytes of response queued on it.
    private func respond(_ h: ConnectionHarness, _ c: QUICConnection, size: Int) {
        h.send1RTT(Frames.stream(0, [1], fin: true))
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        _ = h.takeEvents()
        let body = [UInt8](repeating: 7, count: size)
        XCTAssertEqual(body.withUnsafeBytes { c.write(stream: 0, $0, fin: true) }, size)
    }

    /// §6.6 values per suite.
    func testSuiteLimits() {
        XCTAssertEqual(CipherSuite.aes128GCM.aeadLimits, AEADLimits(confidentiality: 1 << 23, integrity: 1 << 52))
        XCTAssertEqual(CipherSuite.aes256GCM.aeadLimits, AEADLimits(confidentiality: 1 << 23, integrity: 1 << 52))
        XCTAssertEqual(CipherSuite.chacha20Poly1305.aeadLimits, AEADLimits(confidentiality: nil, integrity: 1 << 36))
    }

    /// The threshold is the configured interval, capped at half the
    /// confidentiality limit; 0 leaves only the cap.
    func testThreshold() {
        XCTAssertEqual(established().1.keyUpdateThreshold, 1 << 20)
        XCTAssertEqual(established { $0.keyUpdateInterval = 1 << 30 }.1.keyUpdateThreshold, 1 << 22)
        XCTAssertEqual(established { $0.keyUpdateInterval = 0 }.1.keyUpdateThreshold, 1 << 22)
        XCTAssertEqual(established { $0.keyUpdateInterval = 9 }.1.keyUpdateThreshold, 9)
        XCTAssertEqual(established { $0.aeadLimitsOverride = AEADLimits(confidentiality: 40, integrity: 10) }.1.keyUpdateThreshold, 20)
    }

    /// §6.1: after `interval` packets the server flips the key phase and
    /// seals with the next keys; it does not update again before a packet
    /// of the new phase was acknowledged and the previous read keys are gone
    /// (§6.5); then the next update comes after another `interval` packets.
    func testServerUpdatesAfterInterval() {
        let (h, c) = established { $0.keyUpdateInterval = 6 }
        let sentBefore = c.keyPhase!.packetsSentInPhase
        XCTAssertLessThan(sentBefore, 6)
        respond(h, c, size: 60_000)
        var packets = h.exchange().filter { $0.space == .application }
        XCTAssertEqual(c.keyPhase!.updatesInitiated, 1)
        let firstNew = packets.firstIndex(where: \.keyPhase)!
        XCTAssertEqual(UInt64(firstNew) + sentBefore, 6, "the update comes after exactly six packets")
        XCTAssertTrue(packets[firstNew...].allSatisfy(\.keyPhase))
        XCTAssertTrue(h.client.keyPhaseOfReadKeys, "the client opened the new phase with the next keys")
        // More than six in the new phase and still no second update: not acknowledged yet.
        h.ack1RTT(Array(packets[..<firstNew]))
        packets = h.exchange().filter { $0.space == .application }
        XCTAssertTrue(packets.allSatisfy(\.keyPhase))
        XCTAssertEqual(c.keyPhase!.updatesInitiated, 1)
        // The client answers in the new phase (§6.2) and acknowledges.
        h.client.initiateKeyUpdate()
        h.ack1RTT(packets)
        XCTAssertTrue(c.keyPhase!.phaseAcknowledged)
        XCTAssertNotNil(c.keyPhase!.discardPreviousAt)
        packets = h.exchange().filter { $0.space == .application }
        XCTAssertEqual(c.keyPhase!.updatesInitiated, 1, "the previous read keys are still kept")
        XCTAssertTrue(packets.allSatisfy(\.keyPhase))
        h.ack1RTT(packets)
        // Three PTOs later the previous keys go and the next update may come.
        h.advance(nanoseconds: c.recovery.probeTimeout(includingMaxAckDelay: true) + 1)
        XCTAssertNil(c.keyPhase!.previousRead)
        packets = h.exchange().filter { $0.space == .application }
        XCTAssertEqual(c.keyPhase!.updatesInitiated, 2)
        XCTAssertFalse(packets.last!.keyPhase)
        XCTAssertFalse(h.client.keyPhaseOfReadKeys)
        XCTAssertEqual(h.takeEvents(), [])
    }

    /// After our update, packets the client still sends in the old phase
    /// open with the previous keys (it has not seen the update yet).
    func testOldPhaseAcceptedAfterOurUpdate() {
        let (h, c) = established { $0.keyUpdateInterval = 3 }
        h.send1RTT(Frames.stream(4, [1]))
        _ = h.takeEvents()
        respond(h, c, size: 20_000)
        let packets = h.exchange()
        XCTAssertEqual(c.keyPhase!.updatesInitiated, 1)
        XCTAssertFalse(h.client.keyPhase)
        h.send1RTT(Frames.stream(4, offset: 1, [2], fin: true))
        XCTAssertEqual(h.takeEvents(), [.streamReadable(4)])
        XCTAssertEqual(c.withReadableBytes(stream: 4) { b, _ in (b.count, Array(b)) }, [1, 2])
        // An ACK in the old phase acknowledges new-phase packets too.
        h.ack1RTT(packets)
        XCTAssertTrue(c.keyPhase!.phaseAcknowledged)
        XCTAssertNil(c.keyPhase!.discardPreviousAt, "kept until the client moves to the new phase")
        XCTAssertTrue(c.isOpen)
    }

    /// §6.6: a key that cannot be replaced (the client never takes our
    /// update, so the previous keys cannot go) is not used up to the
    /// confidentiality limit: the connection closes with AEAD_LIMIT_REACHED.
    func testConfidentialityLimitClosesWhenNoUpdateIsPossible() {
        let (h, c) = established {
            $0.keyUpdateInterval = 0
            $0.aeadLimitsOverride = AEADLimits(confidentiality: 64, integrity: 1 << 20)
        }
        respond(h, c, size: 200_000)
        var closePacket: ReceivedPacket?
        for _ in 0..<200 where closePacket == nil {
            let packets = h.exchange()
            closePacket = packets.first { p in p.frames.contains { if case .connectionClose = $0 { true } else { false } } }
            h.ack1RTT(packets)  // always in the old phase
        }
        XCTAssertEqual(c.keyPhase!.updatesInitiated, 1, "the first update at 32 packets, no second one")
        XCTAssertEqual(c.keyPhase!.packetsSentInPhase, 61, "60 packets of data, then the CONNECTION_CLOSE")
        guard case .connectionClose(let f)? = closePacket?.frames.first(where: { if case .connectionClose = $0 { true } else { false } })
        else { return XCTFail("no CONNECTION_CLOSE") }
        XCTAssertEqual(f.errorCode, 0x0f)
        XCTAssertTrue(h.takeEvents().contains(.closed(.local(errorCode: 0x0f, application: false))))
    }

    /// A client that follows each update (§6.2) sees a transfer go on
    /// across many keys, each used for far fewer packets than its limit.
    func testTransferAcrossManyUpdates() {
        let (h, c) = established {
            $0.keyUpdateInterval = 20
            $0.aeadLimitsOverride = AEADLimits(confidentiality: 512, integrity: 1 << 20)
        }
        respond(h, c, size: 200_000)
        var received = 0
        var phasesSeen = 0
        for _ in 0..<100 {
            let packets = h.exchange()
            received += packets.streamFrames(0).reduce(0) { $0 + $1.data.count }
            if let last = packets.last(where: { $0.space == .application }), last.keyPhase != h.client.keyPhase {
                h.client.initiateKeyUpdate()  // follow the server (§6.2)
                phasesSeen += 1
            }
            h.ack1RTT(packets)
            // Past three PTOs: the previous read keys go, the next update may come.
            h.advance(nanoseconds: 100_000_000)
            if received >= 200_000 { break }
        }
        XCTAssertEqual(received, 200_000)
        XCTAssertEqual(h.takeEvents(), [])
        XCTAssertGreaterThanOrEqual(c.keyPhase!.updatesInitiated, 3)
        XCTAssertEqual(phasesSeen, c.keyPhase!.updatesInitiated)
        XCTAssertTrue(c.isOpen)
    }

    /// An idle connection gives its next read keys back
    /// (QUICConnection+IdleMemory.swift); the peer's update afterwards
    /// still opens with them, derived again from the current keys, and the
    /// old phase's reordered packets still open too.
    func testPeerUpdateAfterTheIdleReleaseGaveTheNextKeysBack() {
        let (h, c) = established()
        h.send1RTT(Frames.stream(0, [1]), packetNumber: 10)
        _ = h.takeEvents()
        XCTAssertNil(h.endpoint.releaseIdleMemory(now: h.now, quietFor: 0))
        XCTAssertNil(c.keyPhase!.nextRead)
        let old = h.client.packet(.application, Frames.stream(0, offset: 1, [2]), packetNumber: 11)
        h.client.initiateKeyUpdate()
        h.send1RTT(Frames.stream(0, offset: 2, [3], fin: true), packetNumber: 12)
        XCTAssertTrue(c.keyPhase!.phase, "the update was taken")
        XCTAssertNotNil(c.keyPhase!.nextRead, "the generation after it is derived ahead again")
        XCTAssertTrue(h.exchange().allSatisfy(\.keyPhase), "we answer in the new phase")
        h.deliver(old)
        XCTAssertEqual(h.takeEvents(), [.streamReadable(0)])
        XCTAssertEqual(c.withReadableBytes(stream: 0) { b, fin in (b.count, (Array(b), fin)) }?.0, [1, 2, 3])
        XCTAssertTrue(c.isOpen)
    }

    /// §9.5: after the release, the first packet that reaches the key phase
    /// derives the next keys whatever its phase bit, so a packet of the
    /// current phase costs the same derivation an update would.
    func testThePhaseBitDoesNotDecideWhetherTheNextKeysAreDerived() {
        let (h, c) = established()
        XCTAssertNil(h.endpoint.releaseIdleMemory(now: h.now, quietFor: 0))
        XCTAssertNil(c.keyPhase!.nextRead)
        h.send1RTT(Frames.ping)
        XCTAssertNotNil(c.keyPhase!.nextRead)
        XCTAssertFalse(c.keyPhase!.phase)
    }

    /// Our own update after the release (§6.1) uses the next keys derived
    /// again; the client opens the new phase with its next keys.
    func testOurUpdateAfterTheIdleRelease() {
        let (h, c) = established { $0.keyUpdateInterval = 6 }
        XCTAssertNil(h.endpoint.releaseIdleMemory(now: h.now, quietFor: 0))
        XCTAssertNil(c.keyPhase!.nextRead)
        respond(h, c, size: 60_000)
        let packets = h.exchange().filter { $0.space == .application }
        XCTAssertEqual(c.keyPhase!.updatesInitiated, 1)
        XCTAssertTrue(packets.last!.keyPhase)
        XCTAssertTrue(h.client.keyPhaseOfReadKeys, "the client opened the new phase with the next keys")
        h.client.initiateKeyUpdate()
        h.ack1RTT(packets)
        XCTAssertTrue(c.keyPhase!.phaseAcknowledged)
        XCTAssertEqual(h.takeEvents(), [])
        XCTAssertTrue(c.isOpen)
    }

    /// §6.6: the integrity limit counts packets failing authentication
    /// across the connection; exceeding it closes with AEAD_LIMIT_REACHED.
    func testIntegrityLimitOn1RTT() {
        let (h, c) = established { $0.aeadLimitsOverride = AEADLimits(confidentiality: 1 << 23, integrity: 3) }
        for i in 0..<3 {
            var forged = h.client.packet(.application, Frames.ping)
            forged[forged.count - 1 - i] ^= 0x55
            h.deliver(forged)
        }
        XCTAssertEqual(c.failedDecryptions, 3)
        XCTAssertTrue(c.isOpen, "at the limit, not past it")
        // A good packet does not reset the count; a failure in the other
        // key phase (tried with the next keys) counts too.
        h.send1RTT(Frames.ping)
        h.client.initiateKeyUpdate()
        var forged = h.client.packet(.application, Frames.ping)
        forged[forged.count - 1] ^= 1
        h.deliver(forged)
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x0f, application: false))])
        // Nothing more is processed.
        h.client.initiateKeyUpdate()
        h.send1RTT(Frames.stream(0, [1], fin: true))
        XCTAssertEqual(h.takeEvents(), [])
        XCTAssertTrue(h.exchange().contains { if case .connectionClose(let f) = $0 { f.errorCode == 0x0f } else { false } })
    }

    /// The count covers the handshake keys too ("across all keys").
    func testIntegrityLimitOnInitialPackets() {
        var configuration = QUICConfiguration()
        configuration.aeadLimitsOverride = AEADLimits(confidentiality: 1 << 23, integrity: 1)
        let h = ConnectionHarness(configuration: configuration)
        h.sendClientHello()
        _ = h.takeEvents()
        for _ in 0..<2 {
            var forged = h.client.initialDatagram(Frames.ping)
            forged[forged.count - 1] ^= 1
            h.deliver(forged)
        }
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x0f, application: false))])
    }
}
