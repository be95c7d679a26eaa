// The connection lets its TLS go once the handshake is confirmed (RFC 9001
// §4.1.2: a server's handshake is confirmed when it completes), after the
// session tickets TLS wrote have become 1-RTT CRYPTO data; CRYPTO data the
// client sends afterwards is answered as TLS would (§4.1.3: unexpected
// message, CRYPTO_ERROR 0x10a, §4.8).

import XCTest
import Core
@testable import QUIC

final class HandshakeReleaseTests: XCTestCase {
    func testTLSReleasedAtConfirmationAfterTheTicketIsTaken() throws {
        let h = ConnectionHarness()
        let flight = h.sendClientHello()
        let fake = try XCTUnwrap(h.handshake)
        XCTAssertFalse(fake.released)
        let answer = h.sendClientFinished(acking: flight)
        XCTAssertTrue(fake.released)
        XCTAssertFalse(fake.releasedWithEventsQueued)
        // The ticket went out all the same, and ALPN is still known.
        XCTAssertEqual(answer.crypto(.application).first?.data.first, FakeTLS.newSessionTicket)
        XCTAssertTrue(answer.filter { $0.space == .application }.contains { $0 == .handshakeDone })
        XCTAssertEqual(h.connection?.negotiatedProtocol, Array("h3".utf8))
    }

    func testCryptoDataAfterTheHandshakeClosesWithUnexpectedMessage() throws {
        let h = ConnectionHarness()
        _ = h.completeHandshake()
        _ = h.takeEvents()
        h.send1RTT(Frames.crypto(FakeTLS.message(FakeTLS.newSessionTicket, [9])))
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x10a, application: false))])
        let close = h.exchange().allFrames.compactMap { f -> ConnectionCloseFrame? in
            if case .connectionClose(let c) = f { c } else { nil }
        }
        XCTAssertEqual(close.map(\.errorCode), [0x10a])
        XCTAssertEqual(close.first?.frameType, FrameType.crypto)
    }

    /// A CRYPTO frame that brings no new bytes (empty, §19.6) reaches no
    /// TLS, released or not: nothing happens.
    func testEmptyCryptoFrameAfterTheHandshakeIsHarmless() throws {
        let h = ConnectionHarness()
        _ = h.completeHandshake()
        _ = h.takeEvents()
        h.send1RTT(Frames.crypto([]) + Frames.ping)
        XCTAssertTrue(h.takeEvents().isEmpty)
        XCTAssertFalse(h.exchange().contains { if case .connectionClose = $0 { true } else { false } })
    }
}
