// QUICHandshakeSession.releaseAfterHandshake: a server's OpenSSL state is
// freed once its handshake is complete and every event (the session tickets
// among them) taken. What later code asks of it stays (ALPN, resumption,
// cipher suite, SNI's certificate); CRYPTO bytes after it are refused as a
// post-handshake message OpenSSL would have refused (RFC 9001 §4.1.3, §6);
// tickets issued before it still resume.

import XCTest
import QUIC
@testable import TLS

final class QUICHandshakeReleaseTests: XCTestCase {
    var server: QUICTLSContext!
    var client: QUICTLSClientContext!

    override func setUpWithError() throws {
        server = try QUICTLSContext(pairs: [Fixture.pair("a"), Fixture.pair("b")], ticketSecret: Fixture.secret)
        client = try QUICTLSClientContext()
    }

    func testReleaseFreesTheSSLObjectAndKeepsTheFacts() throws {
        let pipe = try HandshakePipe(server, client, serverName: "b.example")
        XCTAssertEqual(pipe.run(), .completed)
        let live = QUICHandshakeSession.liveCount
        XCTAssertFalse(pipe.server.isReleased)
        pipe.server.releaseAfterHandshake()
        XCTAssertTrue(pipe.server.isReleased)
        XCTAssertEqual(QUICHandshakeSession.liveCount, live - 1)
        XCTAssertEqual(pipe.server.negotiatedProtocol, Array("h3".utf8))
        XCTAssertEqual(pipe.server.cipherSuite, .aes128GCM)
        XCTAssertEqual(pipe.server.certificateIndex, 1)
        XCTAssertFalse(pipe.server.isResumed)
        XCTAssertNil(pipe.server.failure)
        XCTAssertNil(pipe.server.nextEvent())
        // Twice is once.
        pipe.server.releaseAfterHandshake()
        XCTAssertEqual(QUICHandshakeSession.liveCount, live - 1)
    }

    func testSessionObjectsCountedUntilFreed() throws {
        let live = QUICHandshakeSession.liveCount
        var pipe: HandshakePipe? = try HandshakePipe(server, client)
        XCTAssertEqual(QUICHandshakeSession.liveCount, live + 2)
        XCTAssertEqual(pipe?.run(), .completed)
        pipe = nil
        XCTAssertEqual(QUICHandshakeSession.liveCount, live)
    }

    /// RFC 9001 §4.1.3: CRYPTO data after the handshake goes to TLS, and a
    /// QUIC client has nothing to send there: unexpected_message (10), as
    /// OpenSSL answered a client's NewSessionTicket before the release.
    func testCryptoBytesAfterReleaseAreUnexpected() throws {
        let pipe = try HandshakePipe(server, client)
        XCTAssertEqual(pipe.run(), .completed)
        pipe.server.releaseAfterHandshake()
        let ticket = pipe.sent(by: .server, at: .application)
        XCTAssertFalse(ticket.isEmpty)
        XCTAssertThrowsError(try pipe.server.receive(ticket, at: .application)) { error in
            XCTAssertEqual((error as? HandshakeFailure)?.alert, 10)
            XCTAssertEqual((error as? HandshakeFailure)?.transportErrorCode, 0x10a)
        }
        // Sticky, as every failure; one byte is as unexpected as a message.
        XCTAssertThrowsError(try pipe.server.receive([HandshakeType.keyUpdate], at: .application)) { error in
            XCTAssertEqual((error as? HandshakeFailure)?.alert, 10)
        }
        XCTAssertEqual(pipe.server.failure?.alert, 10)
    }

    /// Nothing is freed while the handshake is under way, while its events
    /// (the tickets) are still queued, or on a client (whose
    /// NewSessionTicket comes after the handshake).
    func testReleaseWaitsForCompletionAndQueuedEvents() throws {
        let c = try client.makeSession(serverName: "a.example", alpn: ["h3"], transportParameters: clientParameters)
        let s = server.makeSession(transportParameters: serverParameters)!
        s.releaseAfterHandshake()
        XCTAssertFalse(s.isReleased)
        for case .send(let level, let bytes) in c.drain() { try s.receive(bytes, at: level) }
        s.releaseAfterHandshake()  // the ServerHello and secrets wait
        XCTAssertFalse(s.isReleased)
        for case .send(let level, let bytes) in s.drain() { try c.receive(bytes, at: level) }
        s.releaseAfterHandshake()  // the client's Finished has not come
        XCTAssertFalse(s.isReleased)
        let clientFinished = c.drain()
        for case .send(let level, let bytes) in clientFinished { try s.receive(bytes, at: level) }
        s.releaseAfterHandshake()  // complete, but .complete and the tickets are queued
        XCTAssertFalse(s.isReleased)
        let last = s.drain()
        XCTAssertTrue(last.contains(.complete))
        for case .send(let level, let bytes) in last {
            XCTAssertEqual(level, .application)
            try c.receive(bytes, at: level)
        }
        s.releaseAfterHandshake()
        XCTAssertTrue(s.isReleased)
        XCTAssertNotNil(c.sessionTicket)
        _ = c.drain()
        c.releaseAfterHandshake()
        XCTAssertFalse(c.isReleased)
    }

    func testFailedHandshakeIsNotReleased() throws {
        let s = server.makeSession(transportParameters: serverParameters)!
        XCTAssertThrowsError(try s.receive([0xff, 0, 0, 1, 0], at: .initial))
        _ = s.drain()
        s.releaseAfterHandshake()
        XCTAssertFalse(s.isReleased)
    }

    /// The ticket the server wrote before freeing its state resumes, and a
    /// resumed handshake's state is freed in turn, still saying resumed.
    func testTicketsIssuedBeforeTheReleaseResume() throws {
        let first = try HandshakePipe(server, client)
        XCTAssertEqual(first.run(), .completed)
        first.server.releaseAfterHandshake()
        XCTAssertTrue(first.server.isReleased)
        let session = try XCTUnwrap(first.client.sessionTicket)
        let second = try HandshakePipe(server, client, resuming: session)
        XCTAssertEqual(second.run(), .completed)
        second.server.releaseAfterHandshake()
        XCTAssertTrue(second.server.isReleased)
        XCTAssertTrue(second.server.isResumed)
        XCTAssertTrue(second.client.isResumed)
        XCTAssertEqual(second.server.negotiatedProtocol, Array("h3".utf8))
    }
}
