// QUICHandshakeSession: a client and a server handshake in memory, CRYPTO
// bytes crossing per level (RFC 9001 §4), whole, a byte at a time and cut
// at every byte boundary; the secrets each side derives; the refusals
// RFC 9001 asks of a server (§8.1 ALPN, §8.2 transport parameters, §6
// KeyUpdate), each as the TLS alert that closes the connection (§4.8).

import XCTest
import CTLS
import QUIC
@testable import TLS

final class QUICHandshakeSessionTests: XCTestCase {
    var server: QUICTLSContext!
    var client: QUICTLSClientContext!

    override func setUpWithError() throws {
        server = try QUICTLSContext(pairs: [Fixture.pair("a"), Fixture.pair("b"), Fixture.pair("c")],
                                    ticketSecret: Fixture.secret)
        client = try QUICTLSClientContext()
    }

    /// The facts every successful handshake shows: both sides complete,
    /// each side's write secret per level is the other's read secret
    /// (§4.1.4), with the negotiated suite and its hash's length; the
    /// transport parameters and ALPN h3 arrive both ways.
    func assertCompleted(_ pipe: HandshakePipe, _ outcome: Outcome, suite: CipherSuite = .aes128GCM,
                         file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(outcome, .completed, file: file, line: line)
        XCTAssertTrue(pipe.completed(.client), file: file, line: line)
        XCTAssertTrue(pipe.completed(.server), file: file, line: line)
        let length = suite == .aes256GCM ? 48 : 32
        for level in [EncryptionLevel.handshake, .application] {
            let clientWrite = pipe.secret(of: .client, level, .write)
            let serverRead = pipe.secret(of: .server, level, .read)
            let serverWrite = pipe.secret(of: .server, level, .write)
            let clientRead = pipe.secret(of: .client, level, .read)
            XCTAssertNotNil(clientWrite, "\(level)", file: file, line: line)
            XCTAssertNotNil(serverWrite, "\(level)", file: file, line: line)
            XCTAssertEqual(clientWrite?.1, serverRead?.1, "\(level)", file: file, line: line)
            XCTAssertEqual(serverWrite?.1, clientRead?.1, "\(level)", file: file, line: line)
            XCTAssertNotEqual(clientWrite?.1, serverWrite?.1, "\(level)", file: file, line: line)
            for s in [clientWrite, serverRead, serverWrite, clientRead] {
                XCTAssertEqual(s?.0, suite, "\(level)", file: file, line: line)
                XCTAssertEqual(s?.1.count, length, "\(level)", file: file, line: line)
            }
        }
        // No secrets for 0-RTT, nor for the Initial level (QUIC derives
        // those from the connection ID, §5.2).
        for side in [Side.client, .server] {
            for level in [EncryptionLevel.initial, .earlyData] {
                XCTAssertNil(pipe.secret(of: side, level, .read), file: file, line: line)
                XCTAssertNil(pipe.secret(of: side, level, .write), file: file, line: line)
            }
        }
        XCTAssertEqual(pipe.server.peerTransportParameters, clientParameters, file: file, line: line)
        XCTAssertEqual(pipe.client.peerTransportParameters, serverParameters, file: file, line: line)
        XCTAssertEqual(pipe.server.negotiatedProtocol, Array("h3".utf8), file: file, line: line)
        XCTAssertEqual(pipe.client.negotiatedProtocol, Array("h3".utf8), file: file, line: line)
        XCTAssertEqual(pipe.server.cipherSuite, suite, file: file, line: line)
        XCTAssertEqual(pipe.client.cipherSuite, suite, file: file, line: line)
        XCTAssertNil(pipe.server.failure, file: file, line: line)
        XCTAssertNil(pipe.client.failure, file: file, line: line)
    }

    // MARK: - Full handshakes

    func testFullHandshakeWholeBytes() throws {
        let pipe = try HandshakePipe(server, client)
        assertCompleted(pipe, pipe.run())
        XCTAssertFalse(pipe.server.isResumed)
        XCTAssertFalse(pipe.client.isResumed)
    }

    func testFullHandshakeOneByteAtATime() throws {
        let pipe = try HandshakePipe(server, client)
        assertCompleted(pipe, pipe.run(cut: .everyByte))
        // The NewSessionTicket, a byte per receive, still makes a session.
        XCTAssertNotNil(pipe.client.sessionTicket)
        XCTAssertNil(pipe.server.sessionTicket)
    }

    /// Every flight cut in two at every byte boundary, one handshake per
    /// boundary (up to the longest flight, the server's Handshake level).
    func testFullHandshakeCutAtEveryByteBoundary() throws {
        let longest = try { () throws -> Int in
            let pipe = try HandshakePipe(server, client)
            pipe.run()
            return pipe.sent(by: .server, at: .handshake).count
        }()
        XCTAssertGreaterThan(longest, 300)
        for k in 1..<longest {
            let pipe = try HandshakePipe(server, client)
            let outcome = pipe.run(cut: .at(k))
            XCTAssertEqual(outcome, .completed, "cut at \(k)")
            XCTAssertTrue(pipe.completed(.client) && pipe.completed(.server), "cut at \(k)")
            XCTAssertEqual(pipe.secret(of: .client, .application, .write)?.1,
                           pipe.secret(of: .server, .application, .read)?.1, "cut at \(k)")
        }
    }

    /// A Certificate message longer than a TLS record (2^14 bytes) is
    /// wrapped into several records for the client's OpenSSL.
    func testCertificateLongerThanARecord() throws {
        for cut in [Cut.whole, .everyByte] {
            let pipe = try HandshakePipe(server, client, serverName: "c.example")
            assertCompleted(pipe, pipe.run(cut: cut))
            let certificate = messages(pipe.sent(by: .server, at: .handshake)).first { $0.type == HandshakeType.certificate }
            XCTAssertGreaterThan(certificate?.body.count ?? 0, 16384)
            XCTAssertEqual(pipe.server.certificateIndex, 2)
        }
    }

    /// Which messages travel at which level (RFC 9001 §4.1.4, Figure 5),
    /// and no ChangeCipherSpec or record framing among them (§8.4).
    func testMessagesTravelAtTheirLevels() throws {
        let pipe = try HandshakePipe(server, client)
        assertCompleted(pipe, pipe.run())
        func types(_ side: Side, _ level: EncryptionLevel) -> [UInt8] {
            let bytes = pipe.sent(by: side, at: level)
            let parsed = messages(bytes)
            XCTAssertEqual(parsed.reduce(0) { $0 + 4 + $1.body.count }, bytes.count, "whole messages only")
            return parsed.map(\.type)
        }
        XCTAssertEqual(types(.client, .initial), [HandshakeType.clientHello])
        XCTAssertEqual(types(.client, .handshake), [HandshakeType.finished])
        XCTAssertEqual(types(.client, .application), [])
        XCTAssertEqual(types(.server, .initial), [HandshakeType.serverHello])
        XCTAssertEqual(types(.server, .handshake), [HandshakeType.encryptedExtensions, HandshakeType.certificate,
                                                    HandshakeType.certificateVerify, HandshakeType.finished])
        XCTAssertEqual(types(.server, .application), [HandshakeType.newSessionTicket])
        for side in [Side.client, .server] {
            XCTAssertEqual(pipe.sent(by: side, at: .earlyData), [])
        }
    }

    /// The seam's order: a secret before the bytes protected by it; the
    /// server's `.complete` after both application secrets (it has verified
    /// the client's Finished) and before the session ticket; the client's
    /// once it has sent Finished.
    func testEventOrder() throws {
        let pipe = try HandshakePipe(server, client)
        assertCompleted(pipe, pipe.run())
        func kinds(_ events: [HandshakeEvent]) -> [String] {
            events.map {
                switch $0 {
                case .send(let level, _): return "send \(level)"
                case .secret(let level, let direction, _, _): return "\(direction) \(level)"
                case .complete: return "complete"
                }
            }
        }
        XCTAssertEqual(kinds(pipe.serverEvents), [
            "send initial",  // ServerHello
            "write handshake", "read handshake",
            "send handshake",  // EncryptedExtensions ... Finished
            "write application",
            "read application",  // the client's Finished verified
            "complete",
            "send application",  // NewSessionTicket
        ])
        // OpenSSL's client derives its application read secret as it reads
        // the server's Finished. Its handshake write secret comes when it
        // switches its own record layer: OpenSSL 3.0 does so just before it
        // writes Finished (after both read secrets), 3.2 and later as soon as
        // it has read the ServerHello, when neither early data nor middlebox
        // compatibility is on (statem_clnt.c, tls_process_server_hello). The
        // rule both keep: it comes after the ClientHello and before the
        // handshake bytes it protects.
        let client = kinds(pipe.clientEvents)
        XCTAssertEqual(client.filter { $0 != "write handshake" }, [
            "send initial",  // ClientHello
            "read handshake", "read application",
            "send handshake",  // Finished
            "write application",
            "complete",
        ])
        let writeHandshake = try XCTUnwrap(client.firstIndex(of: "write handshake"))
        XCTAssertEqual(client.filter { $0 == "write handshake" }.count, 1)
        XCTAssertGreaterThan(writeHandshake, try XCTUnwrap(client.firstIndex(of: "send initial")))
        XCTAssertLessThan(writeHandshake, try XCTUnwrap(client.firstIndex(of: "send handshake")))
    }

    // MARK: - Cipher suites (RFC 9001 §5.3)

    func testChaCha20OnlyClientGetsChaCha20() throws {
        let chacha = try QUICTLSClientContext(cipherSuites: "TLS_CHACHA20_POLY1305_SHA256")
        for cut in [Cut.whole, .everyByte] {
            let pipe = try HandshakePipe(server, chacha)
            assertCompleted(pipe, pipe.run(cut: cut), suite: .chacha20Poly1305)
        }
    }

    func testAES256OnlyClientGetsAES256WithSHA384Secrets() throws {
        let aes256 = try QUICTLSClientContext(cipherSuites: "TLS_AES_256_GCM_SHA384")
        for cut in [Cut.whole, .everyByte] {
            let pipe = try HandshakePipe(server, aes256)
            assertCompleted(pipe, pipe.run(cut: cut), suite: .aes256GCM)
        }
    }

    /// TLS_AES_128_CCM_SHA256 is TLS 1.3 but not one QUIC packet protection
    /// here implements: the server does not offer it (handshake_failure).
    func testClientWithOnlyCCMIsRefusedWithHandshakeFailure() throws {
        let ccm = try QUICTLSClientContext(cipherSuites: "TLS_AES_128_CCM_SHA256")
        let pipe = try HandshakePipe(server, ccm)
        guard case .failed(.server, let failure) = pipe.run() else { return XCTFail("handshake went on") }
        XCTAssertEqual(failure.alert, 40)
        XCTAssertEqual(failure.transportErrorCode, 0x128)
    }

    // MARK: - Key exchange

    /// A client whose key share is a finite-field group the server does not
    /// take gets a HelloRetryRequest (RFC 9846 §4.1.4) at the Initial level
    /// and sends a second ClientHello there; the handshake then completes.
    func testHelloRetryRequestForAFiniteFieldKeyShare() throws {
        let ffdhe = try QUICTLSClientContext(groups: "ffdhe2048:X25519")
        for cut in [Cut.whole, .everyByte, .at(5)] {
            let pipe = try HandshakePipe(server, ffdhe)
            assertCompleted(pipe, pipe.run(cut: cut))
            XCTAssertEqual(messages(pipe.sent(by: .client, at: .initial)).map(\.type),
                           [HandshakeType.clientHello, HandshakeType.clientHello])
            let hellos = messages(pipe.sent(by: .server, at: .initial))
            XCTAssertEqual(hellos.map(\.type), [HandshakeType.serverHello, HandshakeType.serverHello])
            // §4.1.3: a HelloRetryRequest is a ServerHello whose random is
            // SHA-256("HelloRetryRequest").
            let hrrRandom: [UInt8] = [
                0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
                0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
            ]
            XCTAssertEqual(Array(hellos[0].body[2..<34]), hrrRandom)
            XCTAssertNotEqual(Array(hellos[1].body[2..<34]), hrrRandom)
        }
    }

    /// The ML-KEM hybrid X25519MLKEM768 (codepoint 0x11EC), which the server
    /// prefers where OpenSSL has it (3.5 and later): a client sending only
    /// that share gets it straight away, no HelloRetryRequest, and its
    /// ClientHello (a 1,216-byte share) is larger than one Initial packet
    /// carries, so it arrives in pieces. On older OpenSSL the group does
    /// not exist and a client cannot even ask for it.
    func testMLKEMHybridKeyShareIsTakenWhereOpenSSLHasIt() throws {
        guard ctls_openssl_version_num() >= 0x3050_0000 else {
            XCTAssertThrowsError(try QUICTLSClientContext(groups: "X25519MLKEM768"))
            return
        }
        let hybrid = try QUICTLSClientContext(groups: "X25519MLKEM768")
        for cut in [Cut.whole, .everyByte, .at(1200)] {
            let pipe = try HandshakePipe(server, hybrid)
            assertCompleted(pipe, pipe.run(cut: cut))
            let clientHellos = messages(pipe.sent(by: .client, at: .initial))
            XCTAssertEqual(clientHellos.map(\.type), [HandshakeType.clientHello])
            XCTAssertGreaterThan(clientHellos[0].body.count, 1216)
            let serverHellos = messages(pipe.sent(by: .server, at: .initial))
            XCTAssertEqual(serverHellos.map(\.type), [HandshakeType.serverHello])
            // RFC 9846 §4.2.8: the ServerHello's key_share (51) holds one
            // KeyShareEntry, the group first; ML-KEM-768's ciphertext (1,088
            // bytes) then X25519's share (32).
            let share = try XCTUnwrap(serverHelloExtension(serverHellos[0].body, type: 51))
            XCTAssertEqual(Array(share.prefix(4)), [0x11, 0xEC, 0x04, 0x60])
            XCTAssertEqual(share.count, 4 + 1088 + 32)
        }
    }

    /// The body of extension `type` in a ServerHello body (RFC 9846 §4.1.3).
    func serverHelloExtension(_ body: [UInt8], type: UInt16) -> [UInt8]? {
        // legacy_version, random, legacy_session_id_echo, cipher_suite,
        // legacy_compression_method, then the extensions.
        guard body.count > 35 else { return nil }
        var at = 2 + 32 + 1 + Int(body[34]) + 2 + 1 + 2
        while at + 4 <= body.count {
            let extType = UInt16(body[at]) << 8 | UInt16(body[at + 1])
            let length = Int(body[at + 2]) << 8 | Int(body[at + 3])
            guard at + 4 + length <= body.count else { return nil }
            if extType == type { return Array(body[at + 4 ..< at + 4 + length]) }
            at += 4 + length
        }
        return nil
    }

    /// A finite-field group alone is no group this server shares.
    func testClientWithOnlyFiniteFieldGroupsIsRefused() throws {
        let ffdhe = try QUICTLSClientContext(groups: "ffdhe2048")
        let pipe = try HandshakePipe(server, ffdhe)
        guard case .failed(.server, let failure) = pipe.run() else { return XCTFail("handshake went on") }
        XCTAssertEqual(failure.alert, 40)  // handshake_failure
    }

    // MARK: - Refusals (alerts become HandshakeFailure)

    /// RFC 9001 §8.1: a server that supports none of the client's protocols
    /// answers no_application_protocol (120), CRYPTO_ERROR 0x178.
    func testRefusesOfferWithoutH3() throws {
        let pipe = try HandshakePipe(server, client, alpn: ["h2", "http/1.1", "h3-29"])
        guard case .failed(.server, let failure) = pipe.run() else { return XCTFail("handshake went on") }
        XCTAssertEqual(failure.alert, 120)
        XCTAssertEqual(failure.transportErrorCode, 0x178)
        XCTAssertEqual(pipe.server.failure, failure)
        XCTAssertFalse(pipe.completed(.server))
        XCTAssertEqual(pipe.sent(by: .server, at: .initial), [], "no ServerHello")
    }

    func testRefusesClientHelloWithoutALPN() throws {
        let pipe = try HandshakePipe(server, client, alpn: [])
        guard case .failed(.server, let failure) = pipe.run() else { return XCTFail("handshake went on") }
        XCTAssertEqual(failure.alert, 120)
    }

    func testPicksH3AmongOtherOffers() throws {
        let pipe = try HandshakePipe(server, client, alpn: ["h2", "h3-29", "h3", "http/1.1"])
        assertCompleted(pipe, pipe.run())
    }

    /// RFC 9001 §8.2: "endpoints that receive ClientHello or
    /// EncryptedExtensions messages without the quic_transport_parameters
    /// extension MUST close the connection with ... missing_extension".
    func testRefusesClientHelloWithoutTransportParameters() throws {
        let pipe = try HandshakePipe(server, client, transportParameters: nil)
        guard case .failed(.server, let failure) = pipe.run() else { return XCTFail("handshake went on") }
        XCTAssertEqual(failure.alert, 109)
        XCTAssertEqual(failure.transportErrorCode, 0x16d)
        XCTAssertTrue(failure.reason.contains("quic_transport_parameters"), failure.reason)
        XCTAssertNil(pipe.server.peerTransportParameters)
    }

    /// Empty transport parameters are still the extension.
    /// RFC 9368 §2.2: the server reads the client's transport parameters
    /// out of the ClientHello before TLS does (a real OpenSSL ClientHello,
    /// whole and cut short), then replaces its own; the client receives the
    /// replacement in EncryptedExtensions.
    func testServerParametersReplacedAfterPeekingTheClientHello() throws {
        let c = try client.makeSession(serverName: "a.example", alpn: ["h3"], transportParameters: clientParameters, resuming: nil)
        let s = server.makeSession(transportParameters: serverParameters)!
        guard case .send(.initial, let hello)? = c.nextEvent() else { return XCTFail("no ClientHello") }
        guard case .transportParameters(let range) = hello.withUnsafeBytes({ s.peekHelloTransportParameters($0) }) else {
            return XCTFail("extension not found")
        }
        XCTAssertEqual(Array(hello[range]), clientParameters)
        for n in [0, 3, 4, 40, hello.count - 1] {
            XCTAssertEqual(hello[..<n].withUnsafeBytes { s.peekHelloTransportParameters($0) }, .needMoreBytes, "\(n)")
        }
        let replaced: [UInt8] = [0x11, 0x08, 0x6b, 0x33, 0x43, 0xcf, 0x6b, 0x33, 0x43, 0xcf]
        s.replaceLocalTransportParameters(replaced)
        try s.receive(hello, at: .initial)
        let pipe = HandshakePipe(client: c, server: s)
        XCTAssertEqual(pipe.run(), .completed)
        XCTAssertEqual(c.peerTransportParameters, replaced)
    }

    func testEmptyTransportParametersAreParameters() throws {
        let pipe = try HandshakePipe(server, client, transportParameters: [])
        XCTAssertEqual(pipe.run(), .completed)
        XCTAssertEqual(pipe.server.peerTransportParameters, [])
    }

    /// RFC 9001 §6: "Endpoints MUST treat the receipt of a TLS KeyUpdate
    /// message as a connection error of type 0x010a".
    func testServerRefusesKeyUpdate() throws {
        let pipe = try HandshakePipe(server, client)
        assertCompleted(pipe, pipe.run())
        let keyUpdate: [UInt8] = [HandshakeType.keyUpdate, 0, 0, 1, 0]  // update_not_requested
        XCTAssertThrowsError(try pipe.server.receive(keyUpdate, at: .application)) { error in
            XCTAssertEqual((error as? HandshakeFailure)?.alert, 10)
            XCTAssertEqual((error as? HandshakeFailure)?.transportErrorCode, 0x10a)
        }
    }

    /// The type byte alone is enough to refuse, and a KeyUpdate after a
    /// whole message in the same bytes is found too.
    func testClientRefusesKeyUpdateSeenByItsTypeByte() throws {
        let pipe = try HandshakePipe(server, client)
        assertCompleted(pipe, pipe.run())
        XCTAssertThrowsError(try pipe.client.receive([HandshakeType.keyUpdate], at: .application)) { error in
            XCTAssertEqual((error as? HandshakeFailure)?.alert, 10)
        }
        let second = try HandshakePipe(server, client)
        XCTAssertEqual(second.run(), .completed)
        let ticket = second.sent(by: .server, at: .application)
        XCTAssertThrowsError(try second.client.receive(ticket + [HandshakeType.keyUpdate, 0, 0, 1, 1], at: .application)) {
            XCTAssertEqual(($0 as? HandshakeFailure)?.alert, 10)
        }
    }

    /// A client sends nothing at the application level in TLS over QUIC; a
    /// NewSessionTicket from it is unexpected (OpenSSL's own verdict).
    func testServerRefusesPostHandshakeMessageFromClient() throws {
        let pipe = try HandshakePipe(server, client)
        assertCompleted(pipe, pipe.run())
        let ticket = pipe.sent(by: .server, at: .application)
        XCTAssertThrowsError(try pipe.server.receive(ticket, at: .application)) { error in
            XCTAssertEqual((error as? HandshakeFailure)?.alert, 10)
        }
    }

    /// Bytes at a level whose keys the receiver has not derived (or has
    /// moved past) cannot be the peer's next handshake bytes.
    func testRefusesBytesAtALevelNotBeingRead() throws {
        let early = server.makeSession(transportParameters: serverParameters)!
        XCTAssertThrowsError(try early.receive([HandshakeType.finished, 0, 0, 0], at: .handshake)) { error in
            XCTAssertEqual((error as? HandshakeFailure)?.alert, 10)
        }
        let zeroRTT = server.makeSession(transportParameters: serverParameters)!
        XCTAssertThrowsError(try zeroRTT.receive([1], at: .earlyData))
        let pipe = try HandshakePipe(server, client)
        assertCompleted(pipe, pipe.run())
        let hello = pipe.sent(by: .client, at: .initial)
        XCTAssertThrowsError(try pipe.server.receive(hello, at: .initial)) { error in
            XCTAssertEqual((error as? HandshakeFailure)?.alert, 10)
        }
    }

    /// Bytes after the client's Finished at the Handshake level: OpenSSL
    /// finds them inside the record that changed its keys.
    func testRefusesBytesAfterFinishedInTheSameLevel() throws {
        let pipe = try HandshakePipe(server, client)
        _ = pipe.client.nextEvent().map { event in
            guard case .send(let level, let bytes) = event else { return }
            try? pipe.server.receive(bytes, at: level)
        }
        var flight: [(EncryptionLevel, [UInt8])] = []
        for case .send(let level, let bytes) in pipe.server.drain() { flight.append((level, bytes)) }
        for (level, bytes) in flight { try pipe.client.receive(bytes, at: level) }
        let finished = pipe.client.drain().compactMap { event -> [UInt8]? in
            if case .send(.handshake, let bytes) = event { return bytes }
            return nil
        }
        XCTAssertEqual(finished.count, 1)
        XCTAssertThrowsError(try pipe.server.receive(finished[0] + [HandshakeType.finished, 0, 0, 0], at: .handshake)) { error in
            XCTAssertEqual((error as? HandshakeFailure)?.alert, 10)
        }
        XCTAssertFalse(pipe.server.drain().contains(.complete))
    }

    /// Bytes that are no ClientHello: OpenSSL's alert for them.
    func testGarbageInsteadOfClientHello() throws {
        let session = server.makeSession(transportParameters: serverParameters)!
        XCTAssertThrowsError(try session.receive([HandshakeType.clientHello, 0, 0, 4, 3, 3, 0, 0], at: .initial)) { error in
            XCTAssertEqual((error as? HandshakeFailure)?.alert, 50)  // decode_error
        }
        let other = server.makeSession(transportParameters: serverParameters)!
        XCTAssertThrowsError(try other.receive([HandshakeType.finished, 0, 0, 0], at: .initial)) { error in
            XCTAssertEqual((error as? HandshakeFailure)?.alert, 10)
        }
    }

    /// A failed handshake stays failed: later bytes throw the same failure.
    func testFailureIsSticky() throws {
        let pipe = try HandshakePipe(server, client, alpn: ["h2"])
        guard case .failed(.server, let failure) = pipe.run() else { return XCTFail("handshake went on") }
        let hello = pipe.sent(by: .client, at: .initial)
        XCTAssertThrowsError(try pipe.server.receive(hello, at: .initial)) { error in
            XCTAssertEqual(error as? HandshakeFailure, failure)
        }
        XCTAssertThrowsError(try pipe.server.receive([], at: .initial))
        XCTAssertNil(pipe.server.nextEvent())
        XCTAssertFalse(failure.reason.isEmpty)
    }

    /// A client that cannot verify the server's certificate fails with the
    /// alert it sends (unknown_ca).
    func testClientVerificationFailureIsItsAlert() throws {
        let trustsB = try QUICTLSClientContext(trustedCertificates: Fixture.path("b.pem"))
        let pipe = try HandshakePipe(server, trustsB, serverName: "a.example")
        guard case .failed(.client, let failure) = pipe.run() else { return XCTFail("handshake went on") }
        XCTAssertEqual(failure.alert, 48)
        XCTAssertFalse(pipe.completed(.client))
    }
}
