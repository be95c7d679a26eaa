// Retry, NEW_TOKEN and the half-open bounds at the endpoint (RFC 9000
// §8.1, §17.2.5, §7.3; RFC 9001 §5.8): Sources/QUIC/Endpoint/QUICEndpoint.swift.

import XCTest
import Core
@testable import QUIC

final class RetryTests: XCTestCase {
    func config(_ edit: (inout QUICConfiguration) -> Void) -> QUICConfiguration {
        var c = QUICConfiguration()
        edit(&c)
        return c
    }

    /// The Retry in `datagram`, checked against RFC 9001 §5.8 for `odcid`.
    func retry(_ datagram: [UInt8], odcid: ConnectionID, file: StaticString = #filePath, line: UInt = #line)
        -> (header: RetryHeader, token: [UInt8])? {
        datagram.withUnsafeBytes { b -> (RetryHeader, [UInt8])? in
            guard case .retry(let h)? = try? PacketHeader.decode(b, at: 0, shortHeaderIDLength: 8) else {
                XCTFail("not a Retry", file: file, line: line)
                return nil
            }
            XCTAssertTrue(RetryPacket.verify(h, in: b, originalDestinationID: odcid), "integrity tag", file: file, line: line)
            XCTAssertFalse(RetryPacket.verify(h, in: b, originalDestinationID: cid("0000000000000000")), file: file, line: line)
            return (h, Array(b.slice(h.retryToken)))
        }
    }

    func serverParameters(_ h: ConnectionHarness) throws -> TransportParameters {
        try h.handshake!.serverTransportParameters.withUnsafeBytes { try TransportParameters.decode($0, sentBy: .server) }
    }

    func newClient(_ n: UInt64) -> TestClient {
        TestClient(destinationID: ConnectionID((0..<8).map { UInt8(truncatingIfNeeded: (0x7700_0000_0000_0000 | n) >> (56 - 8 * UInt64($0))) })!)
    }

    /// §8.1.2, §17.2.5: with --quic-retry an Initial without a token gets a
    /// Retry — no state kept — whose fields are the client's IDs swapped,
    /// a fresh SCID, a token, and the RFC 9001 §5.8 tag over the ODCID.
    func testAlwaysRetrySendsRetryAndKeepsNoState() throws {
        let h = ConnectionHarness(configuration: config { $0.alwaysRetry = true })
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        XCTAssertEqual(h.endpoint.connectionCount, 0)
        XCTAssertEqual(h.endpoint.halfOpenConnectionCount, 0)
        let out = h.drain()
        XCTAssertEqual(out.count, 1)
        XCTAssertEqual(out[0].path, h.path)
        let r = try XCTUnwrap(retry(out[0].bytes, odcid: h.client.originalDestinationID))
        XCTAssertEqual(out[0].bytes[0] & 0xf0, 0xf0, "long header, fixed bit, v1 type 3 (§17.2.5)")
        XCTAssertEqual(r.header.version, .v1)
        XCTAssertEqual(r.header.destinationID, h.client.sourceID)
        XCTAssertEqual(r.header.sourceID.count, 8)
        XCTAssertNotEqual(r.header.sourceID, h.client.originalDestinationID, "§17.2.5.1: a new SCID")
        XCTAssertFalse(r.token.isEmpty)
        XCTAssertEqual(out[0].bytes.count, RetryPacket.size(destinationID: h.client.sourceID, sourceID: r.header.sourceID,
                                                            tokenLength: r.token.count))
    }

    /// §8.1.2 + §7.3: the Initial that follows the Retry, with its token,
    /// makes a validated connection whose transport parameters carry the
    /// first Initial's DCID and the Retry's SCID; the handshake completes.
    func testClientFollowingRetryConnectsWithRetryTransportParameters() throws {
        let h = ConnectionHarness(configuration: config { $0.alwaysRetry = true })
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        let r = try XCTUnwrap(retry(h.drain()[0].bytes, odcid: h.client.originalDestinationID))
        h.client.followRetry(sourceID: r.header.sourceID, token: r.token)
        let flight = h.sendClientHello()
        XCTAssertEqual(h.endpoint.connectionCount, 1)
        XCTAssertEqual(h.endpoint.halfOpenConnectionCount, 1)
        XCTAssertFalse(flight.isEmpty, "the server answers under keys from the Retry's SCID (RFC 9001 §5.2)")
        let p = try serverParameters(h)
        XCTAssertEqual(p.originalDestinationConnectionID, h.client.originalDestinationID)
        XCTAssertEqual(p.retrySourceConnectionID, r.header.sourceID)
        h.sendClientFinished(acking: flight)
        XCTAssertTrue(h.events.contains { if case .handshakeCompleted = $0 { true } else { false } })
        XCTAssertEqual(h.endpoint.halfOpenConnectionCount, 0)
        XCTAssertTrue(try XCTUnwrap(h.connection).addressValidated)
    }

    /// §7.3: without a Retry, retry_source_connection_id is absent.
    func testNoRetrySourceIDWithoutRetry() throws {
        let h = ConnectionHarness()
        h.sendClientHello()
        let p = try serverParameters(h)
        XCTAssertNil(p.retrySourceConnectionID)
        XCTAssertEqual(p.originalDestinationConnectionID, h.client.originalDestinationID)
        XCTAssertFalse(h.endpoint.context.connections.values.first!.addressValidated)
    }

    /// §8.1.2: an expired Retry token makes no connection and is not
    /// answered with a second Retry (the client takes one only, §17.2.5.2).
    func testExpiredRetryTokenIsDropped() throws {
        let h = ConnectionHarness(configuration: config { $0.alwaysRetry = true })
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        let r = try XCTUnwrap(retry(h.drain()[0].bytes, odcid: h.client.originalDestinationID))
        h.client.followRetry(sourceID: r.header.sourceID, token: r.token)
        h.advance(nanoseconds: AddressTokens.retryLifetime + 1)
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        XCTAssertEqual(h.endpoint.connectionCount, 0)
        XCTAssertTrue(h.drain().isEmpty)
    }

    /// §8.1.2: a Retry token used from another address is refused.
    func testRetryTokenFromAnotherAddressIsDropped() throws {
        let h = ConnectionHarness(configuration: config { $0.alwaysRetry = true })
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        let r = try XCTUnwrap(retry(h.drain()[0].bytes, odcid: h.client.originalDestinationID))
        h.client.followRetry(sourceID: r.header.sourceID, token: r.token)
        let elsewhere = DatagramPath(peer: .ipv4(0x0a00_0063, port: 50_000), local: h.path.local)
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)), path: elsewhere)
        XCTAssertEqual(h.endpoint.connectionCount, 0)
        XCTAssertTrue(h.drain().isEmpty)
    }

    /// §8.1.3: after the handshake the server sends NEW_TOKEN; the token,
    /// in a later connection's Initial, validates the address (no Retry
    /// even with --quic-retry, no amplification limit) — once: a reused
    /// token counts as none and gets a Retry (§8.1.4).
    func testNewTokenValidatesLaterConnectionOnce() throws {
        let h = ConnectionHarness(configuration: config { $0.alwaysRetry = true })
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        let r = try XCTUnwrap(retry(h.drain()[0].bytes, odcid: h.client.originalDestinationID))
        h.client.followRetry(sourceID: r.header.sourceID, token: r.token)
        let answer = h.sendClientFinished(acking: h.sendClientHello())
        var token: [UInt8]?
        for p in answer { for f in p.frames { if case .newToken(let span) = f { token = p.slice(span) } } }
        let newToken = try XCTUnwrap(token, "NEW_TOKEN after the handshake")
        XCTAssertEqual(newToken[0], AddressTokens.Kind.newToken.rawValue)

        let later = newClient(1)
        later.token = newToken
        let otherPort = DatagramPath(peer: .ipv4(0x0a00_0001, port: 40_000), local: h.path.local)
        h.deliver(later.initialDatagram(Frames.crypto(later.clientHello)), path: otherPort)
        XCTAssertEqual(h.endpoint.connectionCount, 2, "no Retry: the address is validated")
        let c = try XCTUnwrap(h.endpoint.context.routes[later.originalDestinationID])
        XCTAssertTrue(c.addressValidated)
        XCTAssertNil(try serverParameters(h).retrySourceConnectionID)

        let replay = newClient(2)
        replay.token = newToken
        h.drain()
        h.deliver(replay.initialDatagram(Frames.crypto(replay.clientHello)), path: otherPort)
        XCTAssertEqual(h.endpoint.connectionCount, 2)
        let out = h.drain()
        XCTAssertEqual(out.count, 1)
        XCTAssertNotNil(retry(out[0].bytes, odcid: replay.originalDestinationID), "a reused token gets a Retry")
    }

    /// §8.1.3: a NEW_TOKEN token from another address does not validate.
    func testNewTokenFromAnotherAddressGetsRetry() throws {
        let h = ConnectionHarness(configuration: config { $0.alwaysRetry = true })
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        let r = try XCTUnwrap(retry(h.drain()[0].bytes, odcid: h.client.originalDestinationID))
        h.client.followRetry(sourceID: r.header.sourceID, token: r.token)
        let answer = h.sendClientFinished(acking: h.sendClientHello())
        var token: [UInt8]?
        for p in answer { for f in p.frames { if case .newToken(let span) = f { token = p.slice(span) } } }
        let later = newClient(3)
        later.token = try XCTUnwrap(token)
        let strange = DatagramPath(peer: .ipv4(0x0a00_0042, port: 50_000), local: h.path.local)
        h.deliver(later.initialDatagram(Frames.crypto(later.clientHello)), path: strange)
        XCTAssertEqual(h.endpoint.connectionCount, 1)
        let out = h.drain()
        XCTAssertEqual(out.count, 1)
        XCTAssertNotNil(retry(out[0].bytes, odcid: later.originalDestinationID))
    }

    func newTokens(_ packets: [ReceivedPacket]) -> [[UInt8]] {
        packets.flatMap { p in p.frames.compactMap { f -> [UInt8]? in if case .newToken(let span) = f { p.slice(span) } else { nil } } }
    }

    /// §13.3: a lost NEW_TOKEN frame is sent again (the same token); once
    /// acknowledged it is not.
    func testLostNewTokenIsResent() {
        let h = ConnectionHarness()
        let answer = h.completeHandshake()
        let sent = newTokens(answer)
        XCTAssertEqual(sent.count, 1)
        let c = h.connection!
        h.send1RTT(Frames.stream(0, [1], fin: true))
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        let body = [UInt8](repeating: 7, count: 5000)
        XCTAssertEqual(body.withUnsafeBytes { c.write(stream: 0, $0, fin: true) }, 5000)
        let later = h.exchange()
        XCTAssertGreaterThanOrEqual(later.count, 3)
        h.ack1RTT(later)  // three later packets acknowledged: the handshake answer is lost (RFC 9002 §6.1.1)
        let again = h.exchange()
        XCTAssertEqual(newTokens(again), sent)
        h.ack1RTT(again)
        h.send1RTT(Frames.ping)
        XCTAssertTrue(newTokens(h.exchange()).isEmpty)
    }

    /// With sendsNewToken off, no NEW_TOKEN.
    func testNoNewTokenWhenDisabled() {
        let h = ConnectionHarness(configuration: config { $0.sendsNewToken = false })
        let answer = h.completeHandshake()
        XCTAssertFalse(answer.contains { $0.frames.contains { if case .newToken = $0 { true } else { false } } })
    }

    /// Automatic Retry: below the threshold connections are made; at it,
    /// Initials without a token get a Retry.
    func testRetryPastHalfOpenThreshold() throws {
        let h = ConnectionHarness(configuration: config { $0.retryThreshold = 2 })
        for n in 1...2 {
            let c = newClient(UInt64(n))
            h.deliver(c.initialDatagram(Frames.crypto(c.clientHello)))
        }
        XCTAssertEqual(h.endpoint.halfOpenConnectionCount, 2)
        h.drain()
        let third = newClient(3)
        h.deliver(third.initialDatagram(Frames.crypto(third.clientHello)))
        XCTAssertEqual(h.endpoint.connectionCount, 2)
        let out = h.drain()
        XCTAssertEqual(out.count, 1)
        let r = try XCTUnwrap(retry(out[0].bytes, odcid: third.originalDestinationID))
        // The client that follows the Retry gets in although 2 are half-open.
        third.followRetry(sourceID: r.header.sourceID, token: r.token)
        h.deliver(third.initialDatagram(Frames.crypto(third.clientHello)))
        XCTAssertEqual(h.endpoint.connectionCount, 3)
        XCTAssertEqual(h.endpoint.halfOpenConnectionCount, 3)
    }

    /// --max-connections: at the cap a new client's Initial leaves no state
    /// and gets no answer (not even a Retry); once a connection ends, the
    /// client's retransmitted Initial gets in.
    func testInitialsAtTheConnectionCapAreDroppedUntilOneEnds() throws {
        let h = ConnectionHarness(configuration: config { $0.maxConnections = 2 })
        var clients: [TestClient] = []
        for n in 1...2 {
            let c = newClient(UInt64(n))
            clients.append(c)
            h.deliver(c.initialDatagram(Frames.crypto(c.clientHello)))
        }
        h.drain()
        XCTAssertEqual(h.endpoint.connectionCount, 2)
        let third = newClient(3)
        h.deliver(third.initialDatagram(Frames.crypto(third.clientHello)))
        XCTAssertEqual(h.endpoint.connectionCount, 2)
        XCTAssertTrue(h.drain().isEmpty, "no answer at the cap")
        h.deliver(third.initialDatagram(Frames.crypto(third.clientHello)))  // its retransmission
        XCTAssertEqual(h.endpoint.connectionCount, 2)
        // One connection ends: the next Initial is taken.
        try XCTUnwrap(h.endpoint.context.routes[clients[0].originalDestinationID]).terminate()
        XCTAssertEqual(h.endpoint.connectionCount, 1)
        h.deliver(third.initialDatagram(Frames.crypto(third.clientHello)))
        XCTAssertEqual(h.endpoint.connectionCount, 2)
    }

    /// The cap on half-open connections: a validated client at the cap
    /// evicts the oldest handshake; memory stays bounded.
    func testValidatedClientAtCapEvictsOldestHalfOpen() throws {
        let h = ConnectionHarness(configuration: config { $0.retryThreshold = 1000; $0.maxHalfOpenConnections = 3 })
        var clients: [TestClient] = []
        for n in 1...3 {
            let c = newClient(UInt64(n))
            clients.append(c)
            h.deliver(c.initialDatagram(Frames.crypto(c.clientHello)))
            h.advance(nanoseconds: 1_000_000)
        }
        h.drain()
        XCTAssertEqual(h.endpoint.halfOpenConnectionCount, 3)
        // At the cap a Retry is due although the threshold is higher.
        let fourth = newClient(4)
        h.deliver(fourth.initialDatagram(Frames.crypto(fourth.clientHello)))
        XCTAssertEqual(h.endpoint.connectionCount, 3)
        let r = try XCTUnwrap(retry(h.drain()[0].bytes, odcid: fourth.originalDestinationID))
        fourth.followRetry(sourceID: r.header.sourceID, token: r.token)
        h.deliver(fourth.initialDatagram(Frames.crypto(fourth.clientHello)))
        XCTAssertEqual(h.endpoint.connectionCount, 3)
        XCTAssertEqual(h.endpoint.halfOpenConnectionCount, 3)
        XCTAssertNil(h.endpoint.context.routes[clients[0].originalDestinationID], "the oldest went")
        XCTAssertNotNil(h.endpoint.context.routes[clients[1].originalDestinationID])
        XCTAssertNotNil(h.endpoint.context.routes[r.header.sourceID])
    }

    /// A flood of distinct, valid Initials: state stops at the threshold,
    /// the rest get Retries (bounded per flush), and a real client that
    /// follows its Retry still completes its handshake.
    func testInitialFloodKeepsStateBoundedAndAdmitsRealClient() throws {
        let h = ConnectionHarness(configuration: config { $0.retryThreshold = 50; $0.maxHalfOpenConnections = 100 })
        var retries = 0
        for n in 0..<1500 {
            let c = newClient(UInt64(n + 100))
            let port = UInt16(1024 + n)
            h.deliver(c.initialDatagram(Frames.crypto(c.clientHello)),
                      path: DatagramPath(peer: .ipv4(0xc000_0201, port: port), local: h.path.local))
            if n % 50 == 49 {
                for d in h.drain() where d.bytes[0] & 0xf0 == 0xf0 { retries += 1 }
            }
        }
        XCTAssertEqual(h.endpoint.connectionCount, 50)
        XCTAssertEqual(h.endpoint.halfOpenConnectionCount, 50)
        XCTAssertGreaterThan(retries, 1000)
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        let r = try XCTUnwrap(h.drain().compactMap { d in d.path == h.path ? retry(d.bytes, odcid: h.client.originalDestinationID) : nil }.first)
        h.client.followRetry(sourceID: r.header.sourceID, token: r.token)
        h.sendClientFinished(acking: h.sendClientHello())
        XCTAssertTrue(h.events.contains { if case .handshakeCompleted = $0 { true } else { false } })
    }

    /// A client's Initial gets a Retry (the half-open count is at the
    /// threshold), and another Initial of the same attempt, sent before the
    /// Retry arrived, finds the count below it and makes a connection. The
    /// client follows the Retry (§17.2.5.2): the Initial with the token
    /// makes the connection it talks to, and the one made from its earlier
    /// Initial is ended at once instead of staying half-open until the idle
    /// timeout (a burst of 200 handshakes left about 50 such).
    func testAnAttemptThatFollowedARetryEndsTheConnectionItsEarlierInitialMade() throws {
        let h = ConnectionHarness(configuration: config { $0.retryThreshold = 1 })
        let filler = newClient(9)
        let fillerPath = DatagramPath(peer: .ipv4(0x0a00_0009, port: 40_009), local: h.path.local)
        h.deliver(filler.initialDatagram(Frames.crypto(filler.clientHello)), path: fillerPath)
        let fillerConnection = try XCTUnwrap(h.endpoint.context.routes[filler.originalDestinationID])
        XCTAssertEqual(h.endpoint.halfOpenConnectionCount, 1)
        _ = h.drain()

        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        let r = try XCTUnwrap(retry(h.drain()[0].bytes, odcid: h.client.originalDestinationID))
        fillerConnection.terminate()
        XCTAssertEqual(h.endpoint.halfOpenConnectionCount, 0)

        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        let earlier = try XCTUnwrap(h.endpoint.context.routes[h.client.originalDestinationID], "let in below the threshold")
        XCTAssertEqual(h.endpoint.halfOpenConnectionCount, 1)
        _ = h.drain()

        h.client.followRetry(sourceID: r.header.sourceID, token: r.token)
        let flight = h.sendClientHello()
        XCTAssertFalse(flight.isEmpty)
        XCTAssertFalse(earlier.isOpen, "the connection of the earlier Initial is ended")
        XCTAssertNil(h.endpoint.context.routes[h.client.originalDestinationID])
        XCTAssertEqual(h.endpoint.connectionCount, 1)
        XCTAssertEqual(h.endpoint.halfOpenConnectionCount, 1)
        h.sendClientFinished(acking: flight)
        XCTAssertEqual(h.endpoint.halfOpenConnectionCount, 0)
        XCTAssertEqual(try serverParameters(h).retrySourceConnectionID, r.header.sourceID)
    }

    /// Only a handshake from the token's own address is ended: a half-open
    /// connection routed by the same ID from elsewhere stays.
    func testARetryTokenEndsNoHandshakeFromAnotherAddress() throws {
        let h = ConnectionHarness(configuration: config { $0.retryThreshold = 1 })
        let other = TestClient(destinationID: h.client.originalDestinationID)
        let otherPath = DatagramPath(peer: .ipv4(0x0a00_0063, port: 50_000), local: h.path.local)
        h.deliver(other.initialDatagram(Frames.crypto(other.clientHello)), path: otherPath)
        let elsewhere = try XCTUnwrap(h.endpoint.context.routes[h.client.originalDestinationID])
        _ = h.drain()

        let retried = newClient(3)
        h.deliver(retried.initialDatagram(Frames.crypto(retried.clientHello)))
        let r = try XCTUnwrap(retry(h.drain()[0].bytes, odcid: retried.originalDestinationID))
        // A token minted for this address over the other connection's ID
        // (as a client that chose the same ID would get).
        let token = h.endpoint.context.addressTokens.mintRetry(
            address: h.path.peer, originalDestinationID: h.client.originalDestinationID,
            retrySourceID: r.header.sourceID, now: h.now)
        h.client.followRetry(sourceID: r.header.sourceID, token: token)
        h.sendClientHello()
        XCTAssertTrue(elsewhere.isOpen)
        XCTAssertTrue(elsewhere.isHalfOpen)
        XCTAssertEqual(h.endpoint.connectionCount, 2)
    }
}
