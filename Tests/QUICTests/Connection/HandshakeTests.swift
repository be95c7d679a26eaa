// The handshake through the endpoint (RFC 9000 §7, §17.2; RFC 9001 §4):
// the server's first flight, CRYPTO per space, completion, HANDSHAKE_DONE
// and key discard.

import XCTest
import Core
@testable import QUIC

final class HandshakeTests: XCTestCase {
    /// The real-world check: the server's first flight, parsed back by the
    /// test client, is an Initial with the ServerHello (ACKing the client's
    /// Initial) and Handshake packets with the rest, in datagrams of which
    /// those carrying an Initial are at least 1200 bytes (§14.1).
    func testServerFirstFlightParsesBack() throws {
        let h = ConnectionHarness()
        let hello = h.client.clientHello
        h.deliver(h.client.initialDatagram(Frames.crypto(hello)))
        XCTAssertEqual(h.endpoint.connectionCount, 1)
        h.client.installHandshakeKeys()
        let datagrams = h.drain()
        XCTAssertFalse(datagrams.isEmpty)
        var packets: [ReceivedPacket] = []
        for d in datagrams {
            XCTAssertEqual(d.path, h.path)
            XCTAssertLessThanOrEqual(d.bytes.count, 1200)
            let p = h.client.read(d.bytes)
            if p.contains(where: { $0.space == .initial }) { XCTAssertGreaterThanOrEqual(d.bytes.count, 1200) }
            packets += p
        }
        // The server's Source Connection ID is one of ours (8 bytes).
        XCTAssertEqual(h.client.serverSourceID?.count, 8)
        XCTAssertNotEqual(h.client.serverSourceID, h.client.originalDestinationID)
        // Initial: ACK of the client's packet 0 and the ServerHello.
        let initial = packets.filter { $0.space == .initial }
        XCTAssertTrue(initial.allFrames.contains { if case .ack(let a) = $0 { a.largestAcknowledged == 0 } else { false } })
        let serverHello = initial.crypto(.initial).flatMap(\.data)
        XCTAssertEqual(serverHello.first, FakeTLS.serverHello)
        // Handshake: EncryptedExtensions (our transport parameters), Certificate, Finished, in order.
        let flight = packets.crypto(.handshake).sorted { $0.offset < $1.offset }
        var offset: UInt64 = 0
        var bytes: [UInt8] = []
        for c in flight {
            XCTAssertEqual(c.offset, offset)
            offset += UInt64(c.data.count)
            bytes += c.data
        }
        XCTAssertEqual(bytes.first, FakeTLS.encryptedExtensions)
        let tpLength = Int(bytes[1]) << 8 | Int(bytes[2])
        let tp = try Array(bytes[3..<(3 + tpLength)]).withUnsafeBytes { try TransportParameters.decode($0, sentBy: .server) }
        // §7.3: the server's parameters name both connection IDs as seen on the wire.
        XCTAssertEqual(tp.originalDestinationConnectionID, h.client.originalDestinationID)
        XCTAssertEqual(tp.initialSourceConnectionID, h.client.serverSourceID)
        XCTAssertEqual(tp.statelessResetToken, h.ids.resetToken(for: h.client.serverSourceID!))
        XCTAssertEqual(tp.initialMaxData, 4 << 20)
        XCTAssertEqual(tp.initialMaxStreamsBidi, 100)
        XCTAssertEqual(tp.initialMaxStreamDataBidiRemote, 1 << 20)
        XCTAssertEqual(tp.maxIdleTimeout, 30_000)
        XCTAssertFalse(tp.disableActiveMigration)  // §9: we follow a client that moves
        XCTAssertEqual(bytes.count, 3 + tpLength + 3 + 900 + 3 + 32)
    }

    func testHandshakeCompletesWithHandshakeDoneAndDiscardsKeys() throws {
        let h = ConnectionHarness()
        let flight = h.sendClientHello()
        XCTAssertTrue(h.takeEvents().isEmpty)
        let answer = h.sendClientFinished(acking: flight)
        XCTAssertEqual(h.takeEvents(), [.handshakeCompleted])
        let c = try XCTUnwrap(h.connection)
        XCTAssertTrue(c.isHandshakeComplete)
        XCTAssertEqual(c.negotiatedProtocol, Array("h3".utf8))
        // §19.20 HANDSHAKE_DONE in 1-RTT; the session ticket as 1-RTT CRYPTO.
        XCTAssertTrue(answer.filter { $0.space == .application }.contains { $0 == .handshakeDone })
        XCTAssertEqual(answer.crypto(.application).first?.data.first, FakeTLS.newSessionTicket)
        // RFC 9001 §4.9: Initial keys went with the first Handshake packet,
        // Handshake keys with confirmation; nothing is sent in those spaces any more.
        XCTAssertTrue(c.spaces[0].discarded)
        XCTAssertTrue(c.spaces[1].discarded)
        XCTAssertFalse(answer.contains { $0.space != .application })
        // Ours routes; the client's original DCID still does, to this
        // connection, so that a late Initial from the client is dropped (no
        // keys, RFC 9001 §4.9.1), silently, and starts no second connection.
        XCTAssertTrue(h.endpoint.context.routes[h.client.serverSourceID!] === c)
        XCTAssertTrue(h.endpoint.context.routes[h.client.originalDestinationID] === c)
        h.deliver(h.client.initialDatagram(Frames.ping))
        // The client's first Initial again, to its original DCID, as a
        // retransmission still queued in the socket would come.
        h.deliver(h.client.packet(.initial, Frames.ping + [UInt8](repeating: 0, count: 1200),
                                  destination: h.client.originalDestinationID))
        XCTAssertTrue(h.drain().isEmpty)
        XCTAssertEqual(h.endpoint.context.connections.count, 1, "no second, half-open connection")
    }

    /// §7.3: initial_source_connection_id must match the client's SCID.
    func testMismatchedInitialSourceConnectionIDIsTransportParameterError() {
        let client = TestClient()
        client.parameters.initialSourceConnectionID = cid("0badc0de")
        let h = ConnectionHarness(client: client)
        let answer = h.sendClientHello()
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x08, application: false))])
        let close = answer.allFrames.compactMap { f -> ConnectionCloseFrame? in if case .connectionClose(let c) = f { c } else { nil } }
        XCTAssertEqual(close.first?.errorCode, TransportErrorCode.transportParameterError.rawValue)
    }

    /// A client's parameters that do not decode (§7.4: TRANSPORT_PARAMETER_ERROR).
    func testMalformedTransportParametersAreRefused() {
        let client = TestClient()
        client.parameters.ackDelayExponent = 21  // encoded as-is; invalid above 20 (§18.2)
        let h = ConnectionHarness(client: client)
        _ = h.sendClientHello()
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x08, application: false))])
    }

    /// RFC 9001 §4.8: a TLS alert becomes CRYPTO_ERROR 0x100 + alert.
    func testHandshakeFailureClosesWithCryptoError() {
        let h = ConnectionHarness()
        h.deliver(h.client.initialDatagram(Frames.crypto(FakeTLS.message(FakeTLS.failType, [1]))))
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x128, application: false))])
        let answer = h.exchange()
        let close = answer.allFrames.compactMap { f -> ConnectionCloseFrame? in if case .connectionClose(let c) = f { c } else { nil } }
        XCTAssertEqual(close.map(\.errorCode), [0x128])
        XCTAssertEqual(close.first?.frameType, FrameType.crypto)
    }

    /// CRYPTO data split and reordered across Initial packets is reassembled
    /// before the handshake sees it (§7.5).
    func testCryptoReassemblyOutOfOrder() {
        let h = ConnectionHarness()
        let hello = h.client.clientHello
        let cut = hello.count / 2
        let second = h.client.packet(.initial, Frames.crypto(offset: UInt64(cut), Array(hello[cut...])))
        h.deliver(h.client.initialDatagram(Frames.ping, then: [second]))
        XCTAssertEqual(h.handshake?.receivedLevels, [])
        h.deliver(h.client.initialDatagram(Frames.crypto(Array(hello[..<cut]))))
        XCTAssertEqual(h.handshake?.receivedLevels, [.initial])
        XCTAssertNotNil(h.handshake?.peerTransportParameters)
    }

    /// §7.5: more out-of-order CRYPTO data than we buffer.
    func testCryptoBufferExceeded() {
        let h = ConnectionHarness()
        h.deliver(h.client.initialDatagram(Frames.crypto(offset: 70_000, [1, 2, 3])))
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x0d, application: false))])
    }

    /// A large server flight is limited to 3× what the client sent until the
    /// client's address is validated (§8.1), then flows once a Handshake
    /// packet arrives.
    func testAmplificationLimitUntilAddressValidated() {
        let h = ConnectionHarness()
        h.setCertificateSize(6000)
        let hello = h.client.clientHello
        h.deliver(h.client.initialDatagram(Frames.crypto(hello)))
        h.client.installHandshakeKeys()
        let first = h.drain()
        let sent = first.reduce(0) { $0 + $1.bytes.count }
        XCTAssertLessThanOrEqual(sent, 3 * 1200)
        XCTAssertGreaterThan(sent, 2 * 1200)
        XCTAssertTrue(h.drain().isEmpty, "blocked by the amplification limit")
        // A Handshake packet validates the address (§8.1): the rest flows.
        let received = first.flatMap { h.client.read($0.bytes) }
        let pns = received.filter { $0.space == .handshake }.map(\.packetNumber)
        h.deliver(h.client.packet(.handshake, Frames.ack([pns.min()!...pns.max()!])))
        let rest = h.drain()
        XCTAssertFalse(rest.isEmpty)
        let all = (first + rest).flatMap { h.client.read($0.bytes) }.crypto(.handshake)
        XCTAssertEqual(all.reduce(0) { $0 + $1.data.count }, 3 + 0 + 3 + 6000 + 3 + 32 + (all.first.map { _ in 0 } ?? 0)
                       + Int(transportParametersLength(all)))
    }

    private func transportParametersLength(_ crypto: [(offset: UInt64, data: [UInt8])]) -> UInt64 {
        guard let first = crypto.first(where: { $0.offset == 0 }) else { return 0 }
        return UInt64(Int(first.data[1]) << 8 | Int(first.data[2]))
    }

    /// Coalesced Initial + Handshake from the client are both processed
    /// (§12.2), and the ACKs come back for each space.
    func testCoalescedPacketsFromTheClient() {
        let h = ConnectionHarness()
        let flight = h.sendClientHello()
        let answer = h.sendClientFinished(acking: flight)  // Initial ACK + Handshake Finished in one datagram
        XCTAssertEqual(h.takeEvents(), [.handshakeCompleted])
        XCTAssertFalse(answer.isEmpty)
    }
}
