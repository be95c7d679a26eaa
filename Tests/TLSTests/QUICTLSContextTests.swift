// QUICTLSContext: what a server's TLS for QUIC shares with its TCP TLS —
// certificates picked by SNI, session tickets under the shared secret
// (resumption across workers, no Certificate on a resumed handshake), no
// early data — and its configuration errors.

import XCTest
import QUIC
@testable import TLS

final class QUICTLSContextTests: XCTestCase {
    func context(_ names: [String] = ["a", "b"], secret: [UInt8]? = Fixture.secret) throws -> QUICTLSContext {
        try QUICTLSContext(pairs: names.map(Fixture.pair), ticketSecret: secret)
    }

    // MARK: - SNI

    func testSNIPicksTheMatchingCertificate() throws {
        let server = try context()
        let client = try QUICTLSClientContext()
        let cases: [(String?, Int)] = [
            ("a.example", 0), ("b.example", 1), ("B.Example", 1), ("b.example.", 1),
            ("www.b.test", 1),  // *.b.test
            ("x.y.b.test", 0),  // a wildcard covers one label only
            ("unknown.example", 0), (nil, 0),
        ]
        for (name, index) in cases {
            let pipe = try HandshakePipe(server, client, serverName: name)
            XCTAssertEqual(pipe.run(), .completed, "\(name ?? "no SNI")")
            XCTAssertEqual(pipe.server.certificateIndex, index, "\(name ?? "no SNI")")
            XCTAssertNil(pipe.client.certificateIndex)
        }
    }

    /// The client checks the certificate it got: b's, for b.example.
    func testSNICertificateVerifiesAtTheClient() throws {
        let server = try context()
        let trustsB = try QUICTLSClientContext(trustedCertificates: Fixture.path("b.pem"))
        let pipe = try HandshakePipe(server, trustsB, serverName: "b.example")
        XCTAssertEqual(pipe.run(cut: .everyByte), .completed)
        XCTAssertTrue(pipe.completed(.client))
    }

    // MARK: - Session tickets and resumption

    /// A ticket from a full handshake, and the client's session made of it.
    func ticket(from server: QUICTLSContext, _ client: QUICTLSClientContext,
                serverName: String = "a.example") throws -> (pipe: HandshakePipe, session: [UInt8]) {
        let pipe = try HandshakePipe(server, client, serverName: serverName)
        XCTAssertEqual(pipe.run(), .completed)
        return (pipe, try XCTUnwrap(pipe.client.sessionTicket))
    }

    func types(_ pipe: HandshakePipe, _ level: EncryptionLevel) -> [UInt8] {
        messages(pipe.sent(by: .server, at: level)).map(\.type)
    }

    func testResumptionSendsNoCertificate() throws {
        let server = try context()
        let client = try QUICTLSClientContext()
        // b.example: SNI moves the connection to the second pair's context,
        // and the ticket still decrypts and resumes there.
        for (name, cut) in [("a.example", Cut.whole), ("a.example", .everyByte), ("b.example", .whole)] {
            let (first, session) = try ticket(from: server, client, serverName: name)
            XCTAssertTrue(types(first, .handshake).contains(HandshakeType.certificate))
            let pipe = try HandshakePipe(server, client, serverName: name, resuming: session)
            XCTAssertEqual(pipe.run(cut: cut), .completed)
            XCTAssertEqual(pipe.server.certificateIndex, name == "a.example" ? 0 : 1)
            XCTAssertTrue(pipe.server.isResumed)
            XCTAssertTrue(pipe.client.isResumed)
            XCTAssertEqual(types(pipe, .handshake), [HandshakeType.encryptedExtensions, HandshakeType.finished])
            // Parameters and ALPN are negotiated afresh on resumption.
            XCTAssertEqual(pipe.server.peerTransportParameters, clientParameters)
            XCTAssertEqual(pipe.client.peerTransportParameters, serverParameters)
            XCTAssertEqual(pipe.client.negotiatedProtocol, Array("h3".utf8))
            XCTAssertEqual(pipe.secret(of: .client, .application, .write)?.1, pipe.secret(of: .server, .application, .read)?.1)
        }
    }

    /// Two workers build their contexts from the supervisor's one secret:
    /// a ticket one issued resumes on the other.
    func testResumptionAcrossContextsWithTheSameTicketSecret() throws {
        let client = try QUICTLSClientContext()
        let (_, session) = try ticket(from: try context(), client)
        let otherWorker = try context()
        let pipe = try HandshakePipe(otherWorker, client, resuming: session)
        XCTAssertEqual(pipe.run(), .completed)
        XCTAssertTrue(pipe.server.isResumed)
        XCTAssertFalse(types(pipe, .handshake).contains(HandshakeType.certificate))
    }

    /// Under another secret (or none: OpenSSL's per-process key) the ticket
    /// does not decrypt, and the handshake is a full one.
    func testTicketUnderAnotherSecretMeansAFullHandshake() throws {
        let client = try QUICTLSClientContext()
        let (_, session) = try ticket(from: try context(), client)
        for other in [try context(secret: Array(repeating: 7, count: 32)), try context(secret: nil)] {
            let pipe = try HandshakePipe(other, client, resuming: session)
            XCTAssertEqual(pipe.run(), .completed)
            XCTAssertFalse(pipe.server.isResumed)
            XCTAssertFalse(pipe.client.isResumed)
            XCTAssertTrue(types(pipe, .handshake).contains(HandshakeType.certificate))
        }
    }

    /// Bytes that are no session: a full handshake, not a failure.
    func testUnreadableSessionMeansAFullHandshake() throws {
        let pipe = try HandshakePipe(try context(), try QUICTLSClientContext(), resuming: [0x30, 0x03, 1, 2, 3])
        XCTAssertEqual(pipe.run(), .completed)
        XCTAssertFalse(pipe.server.isResumed)
    }

    /// RFC 9001 §4.6.1: a server that accepts no 0-RTT sends tickets
    /// without the early_data extension (RFC 9846 §4.6.1: its
    /// max_early_data_size is what would allow it).
    func testTicketsCarryNoEarlyDataAllowance() throws {
        let (pipe, _) = try ticket(from: try context(), try QUICTLSClientContext())
        let tickets = messages(pipe.sent(by: .server, at: .application))
        XCTAssertEqual(tickets.map(\.type), [HandshakeType.newSessionTicket])
        // struct { uint32 ticket_lifetime; uint32 ticket_age_add;
        //          opaque ticket_nonce<0..255>; opaque ticket<1..2^16-1>;
        //          Extension extensions<0..2^16-2>; } NewSessionTicket;
        let body = tickets[0].body
        let lifetime = body[0..<4].reduce(0) { $0 << 8 | Int($1) }
        XCTAssertGreaterThan(lifetime, 0)
        var i = 8
        i += 1 + Int(body[i])                                 // ticket_nonce
        i += 2 + (Int(body[i]) << 8 | Int(body[i + 1]))       // ticket
        let extensionsLength = Int(body[i]) << 8 | Int(body[i + 1])
        i += 2
        XCTAssertEqual(i + extensionsLength, body.count)
        var types: [Int] = []
        while i + 4 <= body.count {
            types.append(Int(body[i]) << 8 | Int(body[i + 1]))
            i += 4 + (Int(body[i + 2]) << 8 | Int(body[i + 3]))
        }
        XCTAssertFalse(types.contains(42), "early_data in a NewSessionTicket")
    }

    /// The TCP context loads its pairs through the code it now shares with
    /// QUIC (its handshakes are the e2e TLS suites' business).
    func testTCPContextLoadsTheSamePairs() throws {
        _ = try TLSContext(pairs: [Fixture.pair("a"), Fixture.pair("b")], alpn: ["h2", "http/1.1"], ticketSecret: Fixture.secret)
        _ = try context()
    }

    // MARK: - Configuration errors (one line for the operator)

    func testMissingCertificateFile() {
        XCTAssertThrowsError(try QUICTLSContext(pairs: [TLSCertificatePair(certificate: "/nonexistent/cert.pem",
                                                                           key: Fixture.path("a.key"))])) { error in
            let message = (error as? TLSConfigurationError)?.message ?? ""
            XCTAssertTrue(message.hasPrefix("cannot read certificate file /nonexistent/cert.pem"), message)
        }
    }

    func testKeyOfAnotherCertificate() {
        XCTAssertThrowsError(try QUICTLSContext(pairs: [TLSCertificatePair(certificate: Fixture.path("a.pem"),
                                                                           key: Fixture.path("b.key"))])) { error in
            let message = (error as? TLSConfigurationError)?.message ?? ""
            XCTAssertTrue(message.contains("does not match the certificate"), message)
        }
    }

    func testClientSuitesOutsideTLS13AreRefused() {
        XCTAssertThrowsError(try QUICTLSClientContext(cipherSuites: "ECDHE-RSA-AES128-GCM-SHA256"))
        XCTAssertThrowsError(try QUICTLSClientContext(trustedCertificates: "/nonexistent/ca.pem"))
    }
}
