// Compatible version negotiation from version 1 to version 2 (RFC 9368
// §2.2, §4; RFC 9369 §4), and reading the client's transport parameters
// out of a real ClientHello (RFC 9001 Appendix A.2's).

import XCTest
import Core
@testable import QUIC

final class VersionNegotiationTests: XCTestCase {
    /// A v1 client offering `available` (nil: no version_information).
    private func client(chosen: QUICVersion = .v1, available: [QUICVersion]?) -> TestClient {
        let c = TestClient(version: .v1)
        if let available { c.parameters.versionInformation = VersionInformation(chosenVersion: chosen, availableVersions: available) }
        return c
    }

    /// The Version field of each long-header packet in `datagrams`.
    private func longHeaderVersions(_ datagrams: [(bytes: [UInt8], path: DatagramPath)]) -> [QUICVersion] {
        var versions: [QUICVersion] = []
        for d in datagrams {
            d.bytes.withUnsafeBytes { b in
                var packets = CoalescedPackets(b, shortHeaderIDLength: 8)
                while let item = packets.next() {
                    if case .packet(.long(let h)) = item { versions.append(h.version) }
                }
            }
        }
        return versions
    }

    /// The one connection, found by the client's original Destination Connection ID.
    private func connection(_ h: ConnectionHarness) -> QUICConnection? {
        h.endpoint.context.routes[h.client.originalDestinationID]
    }

    private func serverParameters(_ h: ConnectionHarness) -> TransportParameters {
        h.handshake!.serverTransportParameters.withUnsafeBytes { try! TransportParameters.decode($0, sentBy: .server) }
    }

    /// §2.2: a v1 Initial listing v2 gets a first flight in v2 (Initial and
    /// Handshake packets, v2 keys), our version_information names v2, and
    /// the whole connection runs v2 (1-RTT keys with the v2 labels).
    func testSwitchesFromV1ToV2() {
        let h = ConnectionHarness(client: client(available: [.v2, .v1]))
        let hello = h.client.clientHello
        h.deliver(h.client.initialDatagram(Frames.crypto(hello)))
        h.clientCryptoOffset[0] = UInt64(hello.count)
        let flight = h.drain()
        XCTAssertFalse(flight.isEmpty)
        XCTAssertTrue(longHeaderVersions(flight).allSatisfy { $0 == .v2 }, "\(longHeaderVersions(flight))")
        XCTAssertEqual(connection(h)?.version, .v2)
        XCTAssertEqual(connection(h)?.originalVersion, .v1)
        XCTAssertEqual(serverParameters(h).versionInformation, VersionInformation(chosenVersion: .v2, availableVersions: [.v1, .v2]))
        // The v1 keys open none of it; the v2 keys do.
        XCTAssertTrue(flight.flatMap { h.client.read($0.bytes) }.isEmpty)
        h.client.adoptVersion(.v2)
        h.client.installHandshakeKeys()
        let received = flight.flatMap { h.client.read($0.bytes) }
        XCTAssertFalse(received.crypto(.initial).isEmpty)
        XCTAssertFalse(received.crypto(.handshake).isEmpty)
        h.sendClientFinished(acking: received)
        XCTAssertEqual(h.takeEvents(), [.handshakeCompleted])
        h.send1RTT(Frames.stream(0, [5], fin: true))
        XCTAssertEqual(h.takeEvents(), [.streamOpened(0), .streamReadable(0)])
    }

    /// RFC 9369 §4: until a Handshake packet is processed, Initials of the
    /// original version still open (the client has not seen our v2 ones).
    func testOriginalVersionInitialsStillAccepted() {
        let h = ConnectionHarness(client: client(available: [.v2, .v1]))
        let hello = h.client.clientHello
        h.deliver(h.client.initialDatagram(Frames.crypto(hello)))
        _ = h.drain()
        let pn = h.client.nextPacketNumber[0]
        h.deliver(h.client.initialDatagram(Frames.ping))  // still v1
        h.client.adoptVersion(.v2)
        let acks = h.drain().flatMap { h.client.read($0.bytes) }.filter { $0.space == .initial }.flatMap(\.frames)
        XCTAssertTrue(acks.contains { if case .ack(let a) = $0 { a.largestAcknowledged == pn } else { false } })
        XCTAssertNotNil(connection(h)?.originalInitialReadKeys)
        // A Handshake packet in v1 after the switch is dropped (§4: "MUST drop").
        let v1 = TestClient(version: .v1)
        v1.installHandshakeKeys()
        v1.destinationID = h.client.destinationID
        h.deliver(v1.packet(.handshake, Frames.ping))
        XCTAssertFalse(connection(h)!.addressValidated)
        XCTAssertNotNil(connection(h)!.originalInitialReadKeys, "the Initial keys are still there")
    }

    /// Before the whole ClientHello is in, the server answers (ACKs) in the
    /// original version (RFC 9369 §4); the switch comes with the rest.
    func testHelloOverTwoInitials() {
        let h = ConnectionHarness(client: client(available: [.v2, .v1]))
        let hello = h.client.clientHello
        let half = hello.count / 2
        h.deliver(h.client.initialDatagram(Frames.crypto(Array(hello[..<half]))))
        let first = h.drain()
        XCTAssertEqual(longHeaderVersions(first), [.v1])
        XCTAssertEqual(connection(h)?.version, .v1)
        XCTAssertEqual(h.handshake!.receivedLevels, [], "TLS has not seen a partial hello")
        h.deliver(h.client.initialDatagram(Frames.crypto(offset: UInt64(half), Array(hello[half...]))))
        XCTAssertEqual(connection(h)?.version, .v2)
        XCTAssertTrue(longHeaderVersions(h.drain()).allSatisfy { $0 == .v2 })
    }

    /// No v2 offered, or no version_information at all: v1 stays, and our
    /// version_information says so.
    func testStaysV1() {
        for available in [[QUICVersion.v1], nil] {
            let h = ConnectionHarness(client: client(available: available))
            let answer = h.sendClientHello()
            XCTAssertFalse(answer.isEmpty)
            XCTAssertEqual(connection(h)?.version, .v1)
            XCTAssertEqual(h.handshake!.replacedParameters, 0)
            XCTAssertEqual(serverParameters(h).versionInformation?.chosenVersion, .v1)
            h.sendClientFinished(acking: answer)
            XCTAssertEqual(h.takeEvents(), [.handshakeCompleted])
        }
    }

    /// The client's order decides: a v1 client listing [v1, v2] stays on
    /// v1; versions we do not speak (a reserved one, v2 when not supported)
    /// are passed over.
    func testClientOrderDecides() {
        let h = ConnectionHarness(client: client(available: [.v1, .v2]))
        XCTAssertFalse(h.sendClientHello().isEmpty)
        XCTAssertEqual(connection(h)?.version, .v1)
        let grease = QUICVersion(rawValue: 0x1a2a_3a4a)
        let g = ConnectionHarness(client: client(available: [grease, .v2, .v1]))
        g.deliver(g.client.initialDatagram(Frames.crypto(g.client.clientHello)))
        XCTAssertEqual(connection(g)?.version, .v2)
        var v1Only = QUICConfiguration()
        v1Only.supportedVersions = [.v1]
        let o = ConnectionHarness(configuration: v1Only, client: client(available: [.v2, .v1]))
        XCTAssertFalse(o.sendClientHello().isEmpty)
        XCTAssertEqual(connection(o)?.version, .v1)
    }

    /// A v2 client listing v1 stays on v2 (our first preference).
    func testV2ClientStaysV2() {
        let c = TestClient(version: .v2)
        c.parameters.versionInformation = VersionInformation(chosenVersion: .v2, availableVersions: [.v2, .v1])
        let h = ConnectionHarness(client: c)
        let answer = h.sendClientHello()
        XCTAssertEqual(connection(h)?.version, .v2)
        h.sendClientFinished(acking: answer)
        XCTAssertEqual(h.takeEvents(), [.handshakeCompleted])
    }

    /// RFC 9368 §4: a Chosen Version other than the version of the
    /// client's Initial is VERSION_NEGOTIATION_ERROR (0x11) ...
    func testChosenVersionMismatch() {
        let h = ConnectionHarness(client: client(chosen: .v2, available: [.v2, .v1]))
        h.sendClientHello()
        XCTAssertEqual(connection(h)?.version, .v1)
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x11, application: false))])
    }

    /// ... and one missing from the Available Versions, or a version 0
    /// there, a parsing failure (TRANSPORT_PARAMETER_ERROR).
    func testMalformedVersionInformation() {
        for available in [[QUICVersion.v2], [.v1, .negotiation]] {
            let h = ConnectionHarness(client: client(available: available))
            h.sendClientHello()
            XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x08, application: false))], "\(available)")
        }
    }

    // MARK: ClientHelloPeek

    /// RFC 9001 A.2: the ClientHello in the client's first CRYPTO frame
    /// (after the frame's type, offset and length: 06 00 40f1).
    static let a2ClientHello = Array(RFC9001AppendixATests.clientCrypto[4...])

    func testPeekFindsTheExtensionInA2() {
        let hello = Self.a2ClientHello
        XCTAssertEqual(hello.count, 4 + 0xed)
        let found = hello.withUnsafeBytes { ClientHelloPeek.transportParameters(in: $0) }
        guard case .transportParameters(let range) = found else { return XCTFail("\(found)") }
        XCTAssertEqual(range.count, 0x32)
        XCTAssertEqual(range.upperBound, hello.count)
        XCTAssertEqual(Array(hello[range.lowerBound..<(range.lowerBound + 4)]), hex("0408ffff"))
        let p = hello[range].withUnsafeBytes { try? TransportParameters.decode($0, sentBy: .client) }
        XCTAssertEqual(p?.initialSourceConnectionID, cid("8394c8f03e515708"))
        XCTAssertEqual(p?.initialMaxStreamsBidi, 0x10)
        // Split at every byte: a prefix needs more; trailing bytes change nothing.
        for n in 0..<hello.count {
            XCTAssertEqual(hello[..<n].withUnsafeBytes { ClientHelloPeek.transportParameters(in: $0) }, .needMoreBytes, "\(n)")
        }
        XCTAssertEqual((hello + [0x08, 0, 0]).withUnsafeBytes { ClientHelloPeek.transportParameters(in: $0) }, found)
    }

    func testPeekRefusesWhatIsNotAWellFormedHello() {
        var notHello = Self.a2ClientHello
        notHello[0] = 2  // ServerHello
        XCTAssertEqual(notHello.withUnsafeBytes { ClientHelloPeek.transportParameters(in: $0) }, .notFound)
        var badLength = Self.a2ClientHello
        badLength[4 + 2 + 32] = 0xff  // a session ID running past the message
        XCTAssertEqual(badLength.withUnsafeBytes { ClientHelloPeek.transportParameters(in: $0) }, .notFound)
        // Without the extension (its type renamed to 0x3a).
        var without = Self.a2ClientHello
        let at = without.count - 0x32 - 4
        XCTAssertEqual(Array(without[at..<(at + 2)]), [0x00, 0x39])
        without[at + 1] = 0x3a
        XCTAssertEqual(without.withUnsafeBytes { ClientHelloPeek.transportParameters(in: $0) }, .notFound)
        // An extension longer than the extensions block.
        var overlong = Self.a2ClientHello
        overlong[at + 3] = 0x33
        XCTAssertEqual(overlong.withUnsafeBytes { ClientHelloPeek.transportParameters(in: $0) }, .notFound)
    }
}
