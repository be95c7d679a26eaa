// Transport parameters (RFC 9000 §18): another implementation's bytes, a
// full round trip, and every validation rule of §18.2 and §7.3.

import XCTest
import Core
@testable import QUIC

final class TransportParametersTests: XCTestCase {
    private func decode(_ wire: [UInt8], from sender: EndpointRole) throws -> TransportParameters {
        let r: Result<TransportParameters, QUICError> = wire.withUnsafeBytes { b in
            do { return .success(try TransportParameters.decode(b, sentBy: sender)) } catch { return .failure(error as! QUICError) }
        }
        return try r.get()
    }

    private let scid = "0f 08 8394c8f03e515708"  // initial_source_connection_id, required
    private let odcid = "00 04 01020304"          // original_destination_connection_id

    /// The quic_transport_parameters extension (0x39) of the ClientHello in
    /// RFC 9001 Appendix A.2's CRYPTO frame.
    func testRFC9001AppendixA2ClientParameters() throws {
        let wire = hex("""
            0408ffffffffffffffff 05048000ffff 07048000ffff 080110 010480007530
            090110 0f088394c8f03e515708 06048000ffff
            """)
        let p = try decode(wire, from: .client)
        XCTAssertEqual(p.initialMaxData, VarInt.max)
        XCTAssertEqual(p.initialMaxStreamDataBidiLocal, 65535)
        XCTAssertEqual(p.initialMaxStreamDataBidiRemote, 65535)
        XCTAssertEqual(p.initialMaxStreamDataUni, 65535)
        XCTAssertEqual(p.initialMaxStreamsBidi, 16)
        XCTAssertEqual(p.initialMaxStreamsUni, 16)
        XCTAssertEqual(p.maxIdleTimeout, 30000)
        XCTAssertEqual(p.initialSourceConnectionID, cid("8394c8f03e515708"))
        // Defaults for what was absent.
        XCTAssertEqual(p.maxUDPPayloadSize, 65527)
        XCTAssertEqual(p.ackDelayExponent, 3)
        XCTAssertEqual(p.maxAckDelay, 25)
        XCTAssertEqual(p.activeConnectionIDLimit, 2)
        XCTAssertNil(p.maxDatagramFrameSize)
    }

    func testServerParametersRoundTripWithGrease() throws {
        var p = TransportParameters()
        p.originalDestinationConnectionID = cid("8394c8f03e515708")
        p.initialSourceConnectionID = cid("f067a5502a4262b5")
        p.retrySourceConnectionID = cid("aabb")
        p.statelessResetToken = StatelessResetToken(high: 1, low: 2)
        p.maxIdleTimeout = 30000
        p.maxUDPPayloadSize = 1472
        p.initialMaxData = 1 << 20
        p.initialMaxStreamDataBidiLocal = 1
        p.initialMaxStreamDataBidiRemote = 2
        p.initialMaxStreamDataUni = 3
        p.initialMaxStreamsBidi = 100
        p.initialMaxStreamsUni = 3
        p.ackDelayExponent = 20
        p.maxAckDelay = (1 << 14) - 1
        p.disableActiveMigration = true
        p.activeConnectionIDLimit = 8
        p.maxDatagramFrameSize = 1200
        p.versionInformation = VersionInformation(chosenVersion: .v1, availableVersions: [.v1, .v2])
        p.preferredAddress = PreferredAddress(ipv4Address: 0x7f00_0001, ipv4Port: 443, ipv6Address: (0, 1), ipv6Port: 8443,
                                              connectionID: cid("0102"), statelessResetToken: StatelessResetToken(high: 3, low: 4))
        let wire = encoded(size: p.encodedSize(greaseID: 27 + 31 * 5)) { p.encode(greaseID: 27 + 31 * 5, into: $0) }
        XCTAssertEqual(try decode(wire, from: .server), p)
        // Defaults are not sent: only the required ID.
        var minimal = TransportParameters()
        minimal.initialSourceConnectionID = cid("01")
        XCTAssertEqual(encoded(size: minimal.encodedSize()) { minimal.encode(into: $0) }, hex("0f 01 01"))
    }

    func testUnknownAndGreasedParametersAreIgnored() throws {
        let p = try decode(hex(scid + " 1b 03 aabbcc  4040 00  80001234 02 0000"), from: .client)
        XCTAssertEqual(p.initialSourceConnectionID, cid("8394c8f03e515708"))
    }

    func testEveryViolationIsATransportParameterError() {
        let table: [(String, EndpointRole, QUICError)] = [
            // §18.2 ranges.
            ("03 02 44af", .client, .parameterOutOfRange),            // max_udp_payload_size 1199
            ("0a 01 15", .client, .parameterOutOfRange),              // ack_delay_exponent 21
            ("0b 02 8000", .client, .parameterMalformed),             // a 4-byte varint in a 2-byte value
            ("0e 01 01", .client, .parameterOutOfRange),              // active_connection_id_limit 1
            ("08 08 d000000000000001", .client, .parameterOutOfRange),// initial_max_streams_bidi 2^60 + 1
            ("09 08 d000000000000001", .client, .parameterOutOfRange),// initial_max_streams_uni 2^60 + 1
            ("10 15 " + String(repeating: "01", count: 21), .server, .parameterOutOfRange), // CID of 21 bytes
            ("11 04 00000000", .client, .parameterOutOfRange),        // version_information chosen 0
            // Shapes.
            ("01 02 05", .client, .parametersTruncated),              // value runs past the end
            ("01", .client, .parametersTruncated),                    // no length
            ("01 02 0500", .client, .parameterMalformed),             // varint shorter than its value
            ("0c 01 00", .client, .parameterMalformed),               // disable_active_migration not empty
            ("11 03 000000", .client, .parameterMalformed),           // version_information not whole versions
            ("02 0f " + String(repeating: "00", count: 15), .server, .parameterMalformed), // reset token of 15
            // §18.2 server-only parameters from a client.
            ("00 01 aa", .client, .serverOnlyParameter),
            ("02 10 " + String(repeating: "00", count: 16), .client, .serverOnlyParameter),
            ("10 01 aa", .client, .serverOnlyParameter),
            ("0d 2a " + String(repeating: "00", count: 24) + "01 aa" + String(repeating: "00", count: 16), .client, .serverOnlyParameter),
            // preferred_address with a zero-length connection ID, or cut short.
            ("0d 29 " + String(repeating: "00", count: 24) + "00" + String(repeating: "00", count: 16), .server, .parameterOutOfRange),
            ("0d 18 " + String(repeating: "00", count: 24), .server, .parameterMalformed),
            // Duplicates.
            ("01 01 05 01 01 06", .client, .duplicateParameter),
        ]
        for (h, sender, expected) in table {
            // The parameter under test goes last, so a truncated one is cut by the end.
            var body = scid + " "
            if sender == .server { body += odcid + " " }
            body += h
            let wire = hex(body)
            XCTAssertThrowsQUIC(expected) { _ = try decode(wire, from: sender) }
        }
    }

    /// max_ack_delay of exactly 2^14 is invalid; 2^14 - 1 is fine.
    func testMaxAckDelayBoundary() throws {
        XCTAssertThrowsQUIC(.parameterOutOfRange) { _ = try decode(hex("0b 04 80004000 " + scid), from: .client) }
        XCTAssertEqual(try decode(hex("0b 02 7fff " + scid), from: .client).maxAckDelay, 16383)
    }

    /// §7.3: initial_source_connection_id from both endpoints,
    /// original_destination_connection_id from the server.
    func testRequiredConnectionIDParameters() {
        XCTAssertThrowsQUIC(.missingParameter) { _ = try decode(hex("01 01 05"), from: .client) }
        XCTAssertThrowsQUIC(.missingParameter) { _ = try decode(hex(scid), from: .server) }
        XCTAssertNoThrow(try decode(hex(scid + " " + odcid), from: .server))
    }

    /// Cut at every byte: a cut between whole parameters is a valid
    /// (shorter) set; any other cut is an error.
    func testEveryTruncation() {
        let wire = hex(scid + " 04 04 80100000 0e 01 08")
        for cut in 0..<wire.count {
            if cut == 10 || cut == 16 {
                XCTAssertNoThrow(try decode(Array(wire[..<cut]), from: .client), "cut \(cut)")
            } else {
                XCTAssertThrowsError(try decode(Array(wire[..<cut]), from: .client), "cut \(cut)")
            }
        }
        XCTAssertEqual(try decode(wire, from: .client).activeConnectionIDLimit, 8)
    }
}
