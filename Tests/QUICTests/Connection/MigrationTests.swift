// Connection migration and path validation (RFC 9000 §8.2, §9; RFC 9002
// §9.4 via RFC 9000 §9.4), with the harness's fake clock.

import XCTest
import Core
@testable import QUIC

final class MigrationTests: XCTestCase {
    let original = DatagramPath(peer: .ipv4(0x0a00_0001, port: 50_000), local: .ipv4(0x0a00_0002, port: 443))
    /// NAT rebinding: same address, new port (§9.3, §9.4 "only ... its port number").
    let rebound = DatagramPath(peer: .ipv4(0x0a00_0001, port: 50_001), local: .ipv4(0x0a00_0002, port: 443))
    /// A new address altogether.
    let moved = DatagramPath(peer: .ipv4(0xc000_0207, port: 40_000), local: .ipv4(0x0a00_0002, port: 443))

    /// Handshake done, one round trip of stream data acknowledged (so the
    /// RTT estimator has a sample and the window grew a little).
    private func established(client: TestClient = TestClient()) -> (ConnectionHarness, QUICConnection) {
        let h = ConnectionHarness(client: client)
        let answer = h.completeHandshake()
        h.ack1RTT(answer)
        h.send1RTT(Frames.stream(0, [1, 2, 3]))
        let c = h.connection!
        XCTAssertEqual([UInt8](repeating: 1, count: 4000).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }, 4000)
        h.advance(nanoseconds: 10_000_000)
        h.ack1RTT(h.exchange())
        _ = h.takeEvents()
        XCTAssertTrue(c.recovery.rtt.hasSample)
        return (h, c)
    }

    /// Drains the endpoint; the decrypted packets with the path each datagram went to.
    private func sent(_ h: ConnectionHarness) -> [(path: DatagramPath, size: Int, packets: [ReceivedPacket])] {
        h.drain().map { ($0.path, $0.bytes.count, h.client.read($0.bytes)) }
    }

    private func challenges(_ packets: [ReceivedPacket]) -> [UInt64] {
        packets.allFrames.compactMap { if case .pathChallenge(let d) = $0 { d } else { nil } }
    }

    private func responses(_ packets: [ReceivedPacket]) -> [UInt64] {
        packets.allFrames.compactMap { if case .pathResponse(let d) = $0 { d } else { nil } }
    }

    /// A non-probing packet (PING) from `path`; returns its datagram's size.
    @discardableResult
    private func ping(_ h: ConnectionHarness, from path: DatagramPath, packetNumber: UInt64? = nil) -> Int {
        let d = h.client.packet(.application, Frames.ping, packetNumber: packetNumber)
        h.deliver(d, path: path)
        return d.count
    }

    // MARK: NAT rebinding and migration (§9.3)

    /// §9.3 + §9.4: a port-only change moves the connection, validates the
    /// new path, and keeps the congestion controller and RTT estimate.
    func testNATRebindingPortOnlyMovesAndKeepsCongestionState() {
        let (h, c) = established()
        let rtt = c.recovery.rtt
        let window = c.recovery.controller.congestionWindow
        ping(h, from: rebound)
        XCTAssertEqual(c.path, rebound)
        XCTAssertEqual(h.takeEvents(), [.peerAddressChanged])
        XCTAssertEqual(c.recovery.rtt.smoothedRTT, rtt.smoothedRTT, "§9.4: a port-only change may keep the RTT estimate")
        XCTAssertEqual(c.recovery.controller.congestionWindow, window)
        let out = sent(h)
        let toNew = out.filter { $0.path == rebound }
        XCTAssertFalse(toNew.isEmpty)
        XCTAssertEqual(challenges(toNew.flatMap(\.packets)).count, 1, "§9.3: the new path is validated")
        // §9.3: future packets go to the new address; only a probe of the
        // previous path goes to the old one (§9.3.3).
        for d in out where d.path != rebound {
            XCTAssertEqual(d.path, original)
            XCTAssertTrue(d.packets.allFrames.allSatisfy(\.isProbing))
        }
    }

    /// §9.3.3: "In response to an apparent migration, endpoints MUST validate
    /// the previously active path using a PATH_CHALLENGE frame"; the peer's
    /// answer from there, with a newer packet, moves the connection back.
    func testPreviousPathIsChallengedAndNewerPacketFromItMovesBack() {
        let (h, c) = established()
        ping(h, from: moved)
        let toOld = sent(h).filter { $0.path == original }
        let data = challenges(toOld.flatMap(\.packets))
        XCTAssertEqual(data.count, 1)
        XCTAssertGreaterThanOrEqual(toOld[0].size, 1200, "§8.2.1: padded (the old path is validated)")
        h.deliver(h.client.packet(.application, Frames.pathResponse(data[0]) + Frames.ping), path: original)
        XCTAssertEqual(c.path, original, "a non-probing packet with the largest number moves back")
        XCTAssertTrue(c.current.validated, "validated before: no new validation")
        XCTAssertFalse(c.current.isValidating)
        XCTAssertEqual(h.takeEvents(), [.peerAddressChanged, .peerAddressChanged])
        h.advance(nanoseconds: 10_000_000_000)  // past every validation timer
        XCTAssertEqual(c.path, original)
        XCTAssertTrue(c.isOpen)
    }

    /// §9.3: "After verifying a new client address, the server SHOULD send
    /// new address validation tokens".
    func testNewTokenAfterNewAddressIsValidated() {
        let (h, _) = established()
        ping(h, from: moved)
        let data = challenges(sent(h).filter { $0.path == moved }.flatMap(\.packets))
        h.deliver(h.client.packet(.application, Frames.pathResponse(data[0])), path: moved)
        let tokens = sent(h).filter { $0.path == moved }.flatMap(\.packets).allFrames.filter {
            if case .newToken = $0 { true } else { false }
        }
        XCTAssertEqual(tokens.count, 1)
    }

    /// §9.4: a new address resets the congestion controller and the RTT
    /// estimator to their initial values.
    func testAddressChangeResetsCongestionControllerAndRTT() {
        let (h, c) = established()
        ping(h, from: moved)
        XCTAssertEqual(c.path, moved)
        XCTAssertFalse(c.recovery.rtt.hasSample)
        XCTAssertEqual(c.recovery.rtt.smoothedRTT, 333_000_000, "RFC 9002 §6.2.2 kInitialRtt")
        XCTAssertEqual(c.recovery.controller.congestionWindow, c.recovery.controller.initialWindow)
    }

    /// §9.4: "Packets sent on the old path MUST NOT contribute to congestion
    /// control or RTT estimation for the new path."
    func testOldPathAcknowledgmentsGiveNoRTTSampleOnNewPath() {
        let (h, c) = established()
        XCTAssertEqual([UInt8](repeating: 2, count: 2000).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }, 2000)
        let before = h.exchange()  // sent on the old path
        h.advance(nanoseconds: 5_000_000)
        ping(h, from: moved)
        let window = c.recovery.controller.congestionWindow
        let inFlight = c.recovery.bytesInFlight
        h.advance(nanoseconds: 5_000_000)
        h.deliver(h.client.packet(.application, Frames.ack([before.map(\.packetNumber).min()!...before.map(\.packetNumber).max()!])),
                  path: moved)
        XCTAssertFalse(c.recovery.rtt.hasSample)
        XCTAssertEqual(c.recovery.controller.congestionWindow, window)
        XCTAssertLessThan(c.recovery.bytesInFlight, inFlight, "old packets still leave flight")
    }

    // MARK: challenge and response (§8.2)

    /// §8.2.2: the PATH_RESPONSE echoes the data and goes back on the path
    /// the challenge came on; §8.2.2: the datagram is expanded to 1200 bytes.
    /// §9.1: a probing packet does not move the connection.
    func testProbingPacketIsAnsweredOnItsPathAndDoesNotMigrate() {
        let (h, c) = established()
        h.deliver(h.client.packet(.application, Frames.pathChallenge(0x0102_0304_0506_0708) + Frames.padding(1150)), path: moved)
        XCTAssertEqual(c.path, original)
        XCTAssertEqual(h.takeEvents(), [])
        let out = sent(h)
        let answer = out.filter { !responses($0.packets).isEmpty }
        XCTAssertEqual(answer.count, 1)
        XCTAssertEqual(answer[0].path, moved)
        XCTAssertEqual(responses(answer[0].packets), [0x0102_0304_0506_0708])
        XCTAssertGreaterThanOrEqual(answer[0].size, 1200)
        XCTAssertTrue(answer[0].packets.allFrames.allSatisfy(\.isProbing), "a probe carries validation frames only")
    }

    /// §8.2.1 + §8.1: the response to a small challenge from an unvalidated
    /// path stays within three times what that path delivered.
    func testResponseOnNewPathIsHeldToAmplificationLimit() {
        let (h, _) = established()
        let d = h.client.packet(.application, Frames.pathChallenge(7))
        h.deliver(d, path: moved)
        let out = sent(h).filter { $0.path == moved }
        XCTAssertEqual(out.count, 1)
        XCTAssertLessThanOrEqual(out[0].size, 3 * d.count)
        XCTAssertEqual(responses(out[0].packets), [7])
    }

    /// After moving, a PATH_CHALLENGE from the old path is answered on the
    /// old path (§8.2.2), and packets from it are still accepted.
    func testOldPathChallengeAnsweredOnOldPathAndOldPacketsAccepted() {
        let (h, c) = established()
        let old = h.client.packet(.application, Frames.stream(0, offset: 3, [4, 5]))  // lower packet number
        ping(h, from: moved)
        XCTAssertEqual(h.takeEvents(), [.peerAddressChanged])
        _ = sent(h)
        h.deliver(old, path: original)
        XCTAssertEqual(h.takeEvents(), [.streamReadable(0)], "a reordered packet from the old path is processed")
        XCTAssertEqual(c.path, moved, "... and does not move the connection back")
        h.deliver(h.client.packet(.application, Frames.pathChallenge(42) + Frames.padding(1150)), path: original)
        XCTAssertEqual(c.path, moved)
        let out = sent(h).filter { !responses($0.packets).isEmpty }
        XCTAssertEqual(out.map(\.path), [original])
        XCTAssertEqual(out.flatMap { responses($0.packets) }, [42])
    }

    /// §9.3: only the newest non-probing packet moves the connection.
    func testReorderedNonProbingPacketDoesNotMigrate() {
        let (h, c) = established()
        let largest = h.client.nextPacketNumber[2]
        ping(h, from: original, packetNumber: largest + 5)
        ping(h, from: moved, packetNumber: largest + 2)
        XCTAssertEqual(c.path, original)
        XCTAssertEqual(h.takeEvents(), [])
    }

    /// §9: before the handshake is confirmed a datagram from another path
    /// is dropped.
    func testNoMigrationBeforeHandshake() {
        let h = ConnectionHarness()
        h.sendClientHello()
        let c = h.endpoint.context.connections.values.first!
        let finished = FakeTLS.message(FakeTLS.finished, [UInt8](repeating: 0xcf, count: 32))
        h.deliver(h.client.packet(.handshake, Frames.crypto(finished)), path: moved)
        XCTAssertFalse(c.isHandshakeComplete)
        XCTAssertEqual(c.path, original)
        XCTAssertTrue(h.drain().allSatisfy { $0.path == original })
    }

    /// §8.2.3: the echoed data validates the path: the limit is lifted.
    func testPathResponseValidatesNewPath() {
        let (h, c) = established()
        ping(h, from: moved)
        let data = challenges(sent(h).filter { $0.path == moved }.flatMap(\.packets))
        XCTAssertEqual(data.count, 1)
        XCTAssertFalse(c.current.validated)
        h.deliver(h.client.packet(.application, Frames.pathResponse(data[0] ^ 1)), path: moved)
        XCTAssertFalse(c.current.validated, "data matching no challenge validates nothing")
        h.deliver(h.client.packet(.application, Frames.pathResponse(data[0])), path: moved)
        XCTAssertTrue(c.current.validated)
        XCTAssertNil(c.current.validationDeadline)
        XCTAssertEqual(c.amplificationAllowance, Int.max)
    }

    /// Challenges carry unpredictable data, new each time (§8.2.1, §13.3),
    /// and are repeated while unanswered.
    func testChallengeRepeatedWithNewData() {
        let (h, _) = established()
        ping(h, from: moved)
        var seen = challenges(sent(h).filter { $0.path == moved }.flatMap(\.packets))
        for _ in 0..<2 {
            h.advance(nanoseconds: 1_100_000_000)  // past the PTO at kInitialRtt, before 3×
            ping(h, from: moved)  // more allowance on the new path
            seen += challenges(sent(h).filter { $0.path == moved }.flatMap(\.packets))
        }
        XCTAssertGreaterThanOrEqual(seen.count, 2)
        XCTAssertEqual(Set(seen).count, seen.count)
    }

    // MARK: validation failure (§8.2.4, §9.3.2)

    /// No response within 3×PTO (at least at kInitialRtt): back to the old
    /// path, its congestion state restored.
    func testValidationFailureRevertsToOldPath() {
        let (h, c) = established()
        let rtt = c.recovery.rtt
        let start = h.now
        ping(h, from: moved)
        XCTAssertEqual(h.takeEvents(), [.peerAddressChanged])
        var reverted = false
        for _ in 0..<20 where !reverted {
            _ = sent(h)
            h.advance(toDeadline: ())
            reverted = c.path == original
        }
        XCTAssertTrue(reverted)
        XCTAssertEqual(h.takeEvents(), [.peerAddressChanged])
        // §8.2.4: three times the PTO at kInitialRtt (333 ms: ~1 s) at least.
        XCTAssertGreaterThanOrEqual(h.now.nanoseconds - start.nanoseconds, 3 * 999_000_000)
        XCTAssertEqual(c.recovery.rtt.smoothedRTT, rtt.smoothedRTT, "the old path's estimates come back")
        XCTAssertTrue(sent(h).allSatisfy { $0.path == original })
        XCTAssertTrue(c.isOpen)
    }

    // MARK: anti-amplification on the new path (§9.3, §21.5)

    /// Until the new path is validated, what goes there is at most three
    /// times what came from it; the PATH_RESPONSE lifts the limit.
    func testAmplificationLimitOnNewPath() {
        let (h, c) = established()
        XCTAssertEqual([UInt8](repeating: 3, count: 60_000).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }, 60_000)
        let received = ping(h, from: moved)
        let out = sent(h).filter { $0.path == moved }
        let toNew = out.reduce(0) { $0 + $1.size }
        XCTAssertGreaterThan(toNew, 0)
        XCTAssertLessThanOrEqual(toNew, 3 * received)
        let data = challenges(out.flatMap(\.packets))
        XCTAssertEqual(data.count, 1)
        h.deliver(h.client.packet(.application, Frames.pathResponse(data[0])), path: moved)
        let after = sent(h).filter { $0.path == moved }.reduce(0) { $0 + $1.size }
        XCTAssertGreaterThan(after, 3 * received * 4, "validated: limited by the window only")
    }

    /// A NAT rebinding keeps the congestion state, whose window may be full
    /// of packets sent to the old port: the PATH_CHALLENGE still goes (else
    /// the limit below and a silent peer wait on each other).
    func testChallengeSentWithFullCongestionWindow() {
        let (h, c) = established()
        XCTAssertEqual([UInt8](repeating: 4, count: 200_000).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }, 200_000)
        _ = sent(h)
        XCTAssertLessThan(c.recovery.sendAllowance, QUICConnection.minimumPacketRoom, "window full")
        ping(h, from: rebound)
        let out = sent(h).filter { $0.path == rebound }
        XCTAssertEqual(out.count, 1)
        XCTAssertEqual(challenges(out.flatMap(\.packets)).count, 1)
    }

    /// Data on an unvalidated path leaves room for the challenge to be
    /// repeated when it is lost, without anything more from the peer.
    func testLostChallengeIsRepeatedWithinAmplificationLimit() {
        let (h, c) = established()
        XCTAssertEqual([UInt8](repeating: 5, count: 60_000).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }, 60_000)
        let received = ping(h, from: moved)
        let first = sent(h).filter { $0.path == moved }  // lost
        XCTAssertEqual(challenges(first.flatMap(\.packets)).count, 1)
        h.advance(nanoseconds: c.challengeInterval)
        let again = sent(h).filter { $0.path == moved }
        XCTAssertEqual(challenges(again.flatMap(\.packets)).count, 1, "repeated on its timer")
        XCTAssertLessThanOrEqual((first + again).reduce(0) { $0 + $1.size }, 3 * received)
    }

    /// An ACK owed on a path whose allowance is kept for the challenge must
    /// not leave a deadline in the past (the worker would spin on it).
    func testNoPastDeadlineWhileAllowanceIsReserved() {
        let (h, c) = established()
        XCTAssertEqual([UInt8](repeating: 6, count: 60_000).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }, 60_000)
        ping(h, from: moved)
        _ = sent(h)
        // What is left is the reserve for a repeated challenge, more than an ACK needs.
        XCTAssertEqual(c.amplificationAllowance, c.challengeDatagramSize)
        XCTAssertGreaterThanOrEqual(c.amplificationAllowance, QUICConnection.minimumPacketRoom)
        XCTAssertEqual(c.pathAllowance, 0)
        // A probe from the old path: answered there, and an ACK is owed
        // within max_ack_delay (§13.2.1) on the path in use.
        h.deliver(h.client.packet(.application, Frames.pathChallenge(9)), path: original)
        XCTAssertTrue(sent(h).allSatisfy { $0.path == original })
        XCTAssertEqual(c.path, moved)
        XCTAssertNotNil(c.spaces[2].received.ackDeadline)
        for _ in 0..<5 {
            guard let deadline = h.endpoint.nextDeadline else { break }
            XCTAssertGreaterThan(deadline, h.now, "a deadline already past")
            h.advance(toDeadline: ())
            _ = sent(h)
        }
    }

    // MARK: connection IDs (§9.5)

    /// §9.5: with a spare ID from the peer, packets to the new address use
    /// it, and the old one is retired.
    func testFreshPeerConnectionIDOnNewPath() {
        let (h, c) = established()
        let spare = cid("d0d0d0d1")
        h.send1RTT(Frames.newConnectionID(sequence: 1, id: spare, token: StatelessResetToken(high: 1, low: 1)))
        _ = sent(h)
        ping(h, from: moved)
        let out = sent(h).filter { $0.path == moved }
        XCTAssertFalse(out.isEmpty)
        for d in out { XCTAssertEqual(Array(d.packets[0].bytes[1..<5]), hex("d0d0d0d1")) }
        XCTAssertTrue(out.flatMap(\.packets).contains { if case .retireConnectionID(0) = $0 { true } else { false } })
        XCTAssertEqual(c.peerIDs.current, spare)
    }

    /// Without a spare the current ID stays (§9.5 allows it for a peer that
    /// moved on its own: "MAY continue to use the current connection ID").
    func testNoSpareKeepsCurrentConnectionID() {
        let (h, c) = established()
        ping(h, from: moved)
        XCTAssertEqual(c.peerIDs.current, cid("c1c2c3c4"))
        for d in sent(h) where d.path == moved { XCTAssertEqual(Array(d.packets[0].bytes[1..<5]), hex("c1c2c3c4")) }
    }

    /// Moving to a new path must still reach the connection through IDs
    /// issued by NEW_CONNECTION_ID (the endpoint routes by ID, not address).
    func testMigrationWithIssuedConnectionID() {
        let client = TestClient()
        let h = ConnectionHarness(client: client)
        let answer = h.completeHandshake()
        let issued = answer.allFrames.compactMap { if case .newConnectionID(let f) = $0 { f.connectionID } else { nil } }
        XCTAssertFalse(issued.isEmpty)
        h.ack1RTT(answer)
        _ = h.takeEvents()
        h.deliver(client.packet(.application, Frames.stream(0, [9]), destination: issued[0]), path: moved)
        XCTAssertEqual(h.connection!.path, moved)
        XCTAssertEqual(h.takeEvents(), [.streamOpened(0), .streamReadable(0), .peerAddressChanged])
    }

    /// The transport parameters invite migration unless configured not to (§18.2).
    func testDisableActiveMigrationFollowsConfiguration() {
        var config = QUICConfiguration()
        XCTAssertFalse(config.transportParameters.disableActiveMigration)
        config.allowsActiveMigration = false
        XCTAssertTrue(config.transportParameters.disableActiveMigration)
    }
}
