// Endpoint routing and admission (RFC 9000 §5.2, §6, §14.1).

import XCTest
import Core
@testable import QUIC

final class QUICEndpointTests: XCTestCase {
    func testInitialBelow1200BytesIsDropped() {
        let h = ConnectionHarness()
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello), padTo: 1199))
        XCTAssertEqual(h.endpoint.connectionCount, 0)
        XCTAssertTrue(h.drain().isEmpty)
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello), padTo: 1200))
        XCTAssertEqual(h.endpoint.connectionCount, 1)
    }

    /// §7.2: the client's first Destination Connection ID is at least 8 bytes.
    func testShortOriginalDestinationIDIsDropped() {
        let h = ConnectionHarness(client: TestClient(destinationID: cid("01020304050607")))
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        XCTAssertEqual(h.endpoint.connectionCount, 0)
    }

    /// §6.1: an unknown version gets Version Negotiation listing ours, with
    /// the connection IDs swapped (§17.2.1).
    func testUnknownVersionGetsVersionNegotiation() throws {
        let h = ConnectionHarness()
        var d = h.client.initialDatagram(Frames.crypto(h.client.clientHello))
        d[1] = 0x1a; d[2] = 0x2a; d[3] = 0x3a; d[4] = 0x4a  // version 0x1a2a3a4a
        h.deliver(d)
        let out = h.drain()
        XCTAssertEqual(out.count, 1)
        XCTAssertEqual(h.endpoint.connectionCount, 0)
        let vn = try out[0].bytes.withUnsafeBytes { b -> (VersionNegotiationHeader, [QUICVersion]) in
            guard case .versionNegotiation(let v) = try PacketHeader.decode(b, at: 0, shortHeaderIDLength: 8) else {
                throw PacketDrop("not VN")
            }
            return (v, (0..<v.versionCount).map { v.version($0, in: b) })
        }
        XCTAssertEqual(vn.1, [.v1, .v2])
        XCTAssertEqual(slice(out[0].bytes, vn.0.destinationID), h.client.sourceID.bytes)
        XCTAssertEqual(slice(out[0].bytes, vn.0.sourceID), h.client.originalDestinationID.bytes)
        XCTAssertEqual(out[0].path, h.path)
    }

    /// §6.1 / §14.1: no Version Negotiation for a datagram too short to be an Initial.
    func testNoVersionNegotiationForShortDatagram() {
        let h = ConnectionHarness()
        var d = h.client.initialDatagram(Frames.crypto(h.client.clientHello), padTo: 600)
        d[1] = 0x1a; d[2] = 0x2a; d[3] = 0x3a; d[4] = 0x4a
        h.deliver(d)
        XCTAssertTrue(h.drain().isEmpty)
    }

    /// §6.1: a Version Negotiation packet is never answered.
    func testVersionNegotiationIsNotAnswered() {
        let h = ConnectionHarness()
        var d = [UInt8](repeating: 0, count: 1200)
        d[0] = 0xc0  // long header, version 0
        d[5] = 8; d[14] = 8
        h.deliver(d)
        XCTAssertTrue(h.drain().isEmpty)
    }

    /// A version we speak but do not enable is answered like an unknown one.
    func testDisabledVersionGetsVersionNegotiation() {
        var c = QUICConfiguration()
        c.supportedVersions = [.v1]
        let h = ConnectionHarness(configuration: c, client: TestClient(version: .v2))
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        XCTAssertEqual(h.endpoint.connectionCount, 0)
        XCTAssertEqual(h.drain().count, 1)
    }

    func testQUICv2Handshake() {
        let h = ConnectionHarness(client: TestClient(version: .v2))
        h.completeHandshake()
        XCTAssertEqual(h.takeEvents(), [.handshakeCompleted])
    }

    /// Garbage costs a parse: no connection, no answer, no state.
    func testGarbageIsDropped() {
        let h = ConnectionHarness()
        // Empty, short headers for no connection, a truncated long header, a
        // v1 header with a 30-byte DCID (§17.2: dropped) in a full-size
        // datagram, a v1 Initial with the fixed bit clear.
        let longID: [UInt8] = [0xc0, 0, 0, 0, 1, 30] + [UInt8](repeating: 0, count: 1300)
        var fixedBitClear = ConnectionHarness().client.initialDatagram(Frames.ping)
        fixedBitClear[0] &= ~0x40
        for d: [UInt8] in [[], [0x40], [0x00, 1, 2, 3], [0xc0, 0, 0, 0, 1, 30], longID, fixedBitClear,
                           [UInt8](repeating: 0x41, count: 50)] {
            h.deliver(d)
        }
        XCTAssertEqual(h.endpoint.connectionCount, 0)
        // Only the 50-byte short header for an unknown connection ID is
        // answered, with a 43-byte stateless reset (§10.3, StatelessResetTests).
        XCTAssertEqual(h.drain().map(\.bytes.count), [43])
        XCTAssertNil(h.endpoint.nextDeadline)
    }

    /// An Initial-shaped datagram whose packet fails authentication (RFC
    /// 9001 §5.2) leaves no connection behind: none to count, no deadline,
    /// no answer; the real Initial after it makes one.
    func testInitialThatFailsAuthenticationLeavesNoConnection() {
        let h = ConnectionHarness()
        var forged = h.client.initialDatagram(Frames.crypto(h.client.clientHello))
        forged[forged.count - 1] ^= 0x01  // inside the AEAD tag
        h.deliver(forged)
        XCTAssertEqual(h.endpoint.connectionCount, 0)
        XCTAssertTrue(h.drain().isEmpty)
        XCTAssertNil(h.endpoint.nextDeadline)
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        XCTAssertEqual(h.endpoint.connectionCount, 1)
        XCTAssertFalse(h.drain().isEmpty)
    }

    func testStopAcceptingNewConnections() {
        let h = ConnectionHarness()
        h.endpoint.acceptsNewConnections = false
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        XCTAssertEqual(h.endpoint.connectionCount, 0)
    }

    /// A retransmitted first Initial routes to the same connection by the
    /// client's original DCID (§7.2), it does not make a second one.
    func testRepeatedInitialRoutesToSameConnection() {
        let h = ConnectionHarness()
        let hello = h.client.clientHello
        h.deliver(h.client.initialDatagram(Frames.crypto(hello)))
        h.deliver(h.client.initialDatagram(Frames.crypto(hello)))
        XCTAssertEqual(h.endpoint.connectionCount, 1)
    }

    /// Datagrams from another 4-tuple reach the connection by its ID and,
    /// after the handshake, move it there (RFC 9000 §9.3; MigrationTests).
    func testOtherPathIsFollowedAfterHandshake() {
        let h = ConnectionHarness()
        h.completeHandshake()
        _ = h.takeEvents()
        let other = DatagramPath(peer: .ipv4(0x0a00_0009, port: 1), local: h.path.local)
        h.deliver(h.client.packet(.application, Frames.stream(0, [1, 2, 3])), path: other)
        XCTAssertEqual(h.takeEvents(), [.streamOpened(0), .streamReadable(0), .peerAddressChanged])
        XCTAssertEqual(h.connection!.path, other)
        // Everything goes there but the PATH_CHALLENGE of the old path (§9.3.3).
        XCTAssertTrue(h.drain().contains { $0.path == other })
    }

    /// Two connections are served round-robin and have separate routes.
    func testTwoConnections() {
        let h = ConnectionHarness()
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello)))
        let second = TestClient(destinationID: cid("1122334455667788"), sourceID: cid("d1d2"))
        var d = second.initialDatagram(Frames.crypto(second.clientHello))
        d.withUnsafeMutableBytes { h.endpoint.receive($0, path: h.path, now: h.now) }
        XCTAssertEqual(h.endpoint.connectionCount, 2)
        let out = h.drain()
        // The first datagram of each connection comes before the second of either.
        let dcids = out.map { Array($0.bytes[6..<(6 + Int($0.bytes[5]))]) }
        XCTAssertEqual(Set(dcids.prefix(2)), Set([h.client.sourceID.bytes, second.sourceID.bytes]))
    }
}

extension QUICEndpointTests {
    /// 0-RTT is never accepted: a 0-RTT packet coalesced after the client's
    /// Initial is dropped and the Initial still processed (§12.2); one sent
    /// alone later changes nothing.
    func testZeroRTTPacketsAreDiscarded() {
        let h = ConnectionHarness()
        let zeroRTT = makeZeroRTT(h.client, frames: Frames.stream(0, Array("early".utf8), fin: true))
        h.deliver(h.client.initialDatagram(Frames.crypto(h.client.clientHello), then: [zeroRTT]))
        XCTAssertEqual(h.endpoint.connectionCount, 1)
        XCTAssertNotNil(h.handshake?.peerTransportParameters)
        h.client.installHandshakeKeys()
        let flight = h.exchange()
        XCTAssertFalse(flight.isEmpty)
        h.sendClientFinished(acking: flight)
        XCTAssertEqual(h.takeEvents(), [.handshakeCompleted], "no stream from the 0-RTT data")
        h.deliver(makeZeroRTT(h.client, frames: Frames.stream(0, Array("early".utf8), fin: true)))
        XCTAssertTrue(h.takeEvents().isEmpty)
    }

    private func makeZeroRTT(_ client: TestClient, frames: [UInt8]) -> [UInt8] {
        let keys = PacketKeys(suite: .aes128GCM, secret: [UInt8](repeating: 0x77, count: 32), version: .v1)
        let headerLength = PacketHeaderEncoder.longHeaderSize(destinationID: client.destinationID, sourceID: client.sourceID,
                                                              tokenLength: nil, packetNumberLength: 2, payloadLength: frames.count)
        var out = [UInt8](repeating: 0, count: headerLength + frames.count + 16)
        out.withUnsafeMutableBytes { o in
            PacketHeaderEncoder.encodeLong(type: .zeroRTT, version: .v1, destinationID: client.destinationID, sourceID: client.sourceID,
                                           packetNumber: 0, packetNumberLength: 2, payloadLength: frames.count, into: o)
            (o.baseAddress! + headerLength).copyMemory(from: frames, byteCount: frames.count)
            PacketProtection.seal(o, headerLength: headerLength, payloadLength: frames.count, packetNumber: 0, keys: keys)
        }
        return out
    }
}
