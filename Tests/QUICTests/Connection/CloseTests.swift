// Idle timeout, closing and draining (RFC 9000 §10).

import XCTest
import Core
@testable import QUIC

final class CloseTests: XCTestCase {
    private func established() -> (ConnectionHarness, QUICConnection) {
        let h = ConnectionHarness()
        let answer = h.completeHandshake()
        _ = h.takeEvents()
        h.ack1RTT(answer)
        return (h, h.connection!)
    }

    private func closeFrames(_ packets: [ReceivedPacket]) -> [ConnectionCloseFrame] {
        packets.allFrames.compactMap { if case .connectionClose(let c) = $0 { c } else { nil } }
    }

    /// §10.1: the idle timeout is the smaller of both (30 s ours, 60 s the
    /// client's); the connection closes silently and leaves the endpoint.
    func testIdleTimeout() {
        let (h, _) = established()
        h.advance(nanoseconds: 29_000_000_000)
        XCTAssertTrue(h.takeEvents().isEmpty)
        h.send1RTT(Frames.ack([0...0]))  // activity restarts the timer
        h.advance(nanoseconds: 29_000_000_000)
        XCTAssertTrue(h.takeEvents().isEmpty)
        h.advance(nanoseconds: 1_000_000_000)
        XCTAssertEqual(h.takeEvents(), [.closed(.idleTimeout)])
        XCTAssertTrue(h.drain().isEmpty)
        XCTAssertEqual(h.endpoint.connectionCount, 0)
        XCTAssertNil(h.endpoint.nextDeadline)
        XCTAssertNil(h.endpoint.context.routes[h.client.serverSourceID!])
    }

    /// The client's smaller idle timeout wins.
    func testPeerIdleTimeoutWins() {
        let client = TestClient()
        client.parameters.maxIdleTimeout = 5_000
        let h = ConnectionHarness(client: client)
        let answer = h.completeHandshake()
        _ = h.takeEvents()
        h.ack1RTT(answer)
        h.advance(nanoseconds: 5_000_000_000)
        XCTAssertEqual(h.takeEvents(), [.closed(.idleTimeout)])
    }

    /// §10.2.1: application close → 0x1d with code and reason; closing
    /// resends at a falling rate; ends after 3×PTO.
    func testApplicationCloseAndClosingState() throws {
        let (h, c) = established()
        c.close(errorCode: 0x100, reason: Array("bye".utf8), application: true)
        h.collectEvents()
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x100, application: true))])
        let first = closeFrames(h.exchange())
        XCTAssertEqual(first.count, 1)
        XCTAssertTrue(first[0].isApplicationClose)
        XCTAssertEqual(first[0].errorCode, 0x100)
        XCTAssertTrue(h.drain().isEmpty, "sent once, then only in answer to packets")
        var answers = 0
        for _ in 0..<8 {
            h.send1RTT(Frames.ping)
            answers += h.drain().count
        }
        XCTAssertEqual(answers, 4, "answers to the 1st, 2nd, 4th and 8th packets")
        XCTAssertEqual(h.endpoint.connectionCount, 1)
        let end = try XCTUnwrap(h.endpoint.nextDeadline)
        XCTAssertEqual(end.nanoseconds - h.now.nanoseconds, c.recovery.probeTimeout(includingMaxAckDelay: true))
        h.advance(toDeadline: ())
        XCTAssertEqual(h.endpoint.connectionCount, 0)
        XCTAssertTrue(h.takeEvents().isEmpty, ".closed was posted once")
        // Application calls after close do nothing.
        XCTAssertEqual([UInt8](repeating: 1, count: 3).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }, 0)
    }

    /// §10.2.2: the peer's CONNECTION_CLOSE → draining: nothing is sent.
    func testPeerCloseDrains() {
        let (h, _) = established()
        h.send1RTT(Frames.connectionClose(code: 0x101, application: true, reason: Array("done".utf8)))
        XCTAssertEqual(h.takeEvents(), [.closed(.peer(errorCode: 0x101, application: true, reason: Array("done".utf8)))])
        XCTAssertTrue(h.drain().isEmpty)
        h.send1RTT(Frames.ping)
        XCTAssertTrue(h.drain().isEmpty, "draining sends nothing")
        h.advance(toDeadline: ())
        XCTAssertEqual(h.endpoint.connectionCount, 0)
    }

    /// What the peer sent before its CONNECTION_CLOSE (here in the same
    /// packet) can still be read while draining, in order and with its
    /// FIN: a WebTransport session's close capsule followed at once by the
    /// connection's close was lost before. Once terminated, nothing.
    func testDataBeforeThePeerCloseCanBeReadWhileDraining() {
        let (h, c) = established()
        let capsule: [UInt8] = Array("close capsule".utf8)
        h.send1RTT(Frames.stream(0, capsule, fin: true) + Frames.connectionClose(code: 0, application: true, reason: []))
        XCTAssertEqual(h.takeEvents(), [.streamOpened(0), .streamReadable(0),
                                        .closed(.peer(errorCode: 0, application: true, reason: []))])
        let read = c.withReadableBytes(stream: 0) { bytes, fin in (bytes.count, (Array(bytes), fin)) }
        XCTAssertEqual(read?.0, capsule)
        XCTAssertEqual(read?.1, true)
        XCTAssertTrue(h.drain().isEmpty, "reading while draining sends nothing (no MAX_STREAM_DATA)")
        h.advance(toDeadline: ())
        XCTAssertEqual(h.endpoint.connectionCount, 0)
        XCTAssertNil(c.withReadableBytes(stream: 0) { bytes, _ in (bytes.count, ()) })
    }

    /// We closed (closing state): the streams are not read any more.
    func testNothingIsReadOnceWeClosed() {
        let (h, c) = established()
        h.send1RTT(Frames.stream(0, Array("late".utf8)))
        _ = h.takeEvents()
        c.close(errorCode: 0x100, reason: [], application: true)
        XCTAssertNil(c.withReadableBytes(stream: 0) { bytes, _ in (bytes.count, ()) })
    }

    /// §10.2.3: a close before the handshake completes goes in Initial and
    /// Handshake packets; an application close becomes APPLICATION_ERROR
    /// without its reason; the datagram with the Initial is padded.
    func testCloseDuringHandshake() {
        let h = ConnectionHarness()
        h.sendClientHello()
        let c = h.connection ?? { () -> QUICConnection? in
            // no event yet: find it through the route of the original DCID
            h.endpoint.context.routes[h.client.originalDestinationID]
        }()!
        c.close(errorCode: 0x100, reason: Array("secret".utf8), application: true)
        let out = h.drain()
        XCTAssertEqual(out.count, 1)
        XCTAssertGreaterThanOrEqual(out[0].bytes.count, 1200)
        let packets = h.client.read(out[0].bytes)
        XCTAssertEqual(packets.map(\.space), [.initial, .handshake])
        for f in closeFrames(packets) {
            XCTAssertFalse(f.isApplicationClose)
            XCTAssertEqual(f.errorCode, TransportErrorCode.applicationError.rawValue)
            XCTAssertEqual(f.reasonPhrase.count, 0)
        }
    }

    /// §10.3.1: a datagram ending in the reset token of one of the client's
    /// connection IDs is a stateless reset → draining.
    func testStatelessResetFromClient() {
        let (h, _) = established()
        let token = StatelessResetToken(high: 0x0102_0304_0506_0708, low: 0x1112_1314_1516_1718)
        h.send1RTT(Frames.newConnectionID(sequence: 1, id: cid("abcdef01"), token: token))
        _ = h.takeEvents()
        var reset = [UInt8](repeating: 0x47, count: 40)
        reset[0] = 0x40 | 0x0a
        for i in 0..<8 { reset[1 + i] = h.client.serverSourceID!.bytes[i] }
        let t: [UInt8] = (0..<8).map { UInt8(truncatingIfNeeded: token.high >> (56 - 8 * UInt64($0))) }
            + (0..<8).map { UInt8(truncatingIfNeeded: token.low >> (56 - 8 * UInt64($0))) }
        reset.replaceSubrange(24..<40, with: t)
        h.deliver(reset)
        XCTAssertEqual(h.takeEvents(), [.closed(.statelessReset)])
        XCTAssertTrue(h.drain().isEmpty)
    }

    /// A protocol error closes with the frame type that caused it (§19.19).
    func testProtocolErrorNamesTheFrame() {
        let (h, _) = established()
        h.send1RTT([0x1e])  // HANDSHAKE_DONE from a client
        XCTAssertEqual(h.takeEvents(), [.closed(.local(errorCode: 0x0a, application: false))])
        let close = closeFrames(h.exchange())
        XCTAssertEqual(close.first?.frameType, 0x1e)
        XCTAssertFalse(close.first!.isApplicationClose)
    }
}

extension CloseTests {
    /// Firing a deadline and sending what is due always moves the next
    /// deadline forward (or clears it): the worker's loop never spins.
    func testDeadlinesAlwaysMoveForward() {
        let h = ConnectionHarness()
        h.sendClientHello()  // the client then goes silent: PTOs, then the idle timeout
        var last = h.now
        for _ in 0..<60 {
            guard let d = h.endpoint.nextDeadline else { break }
            XCTAssertGreaterThan(d, last)
            last = d
            h.advance(toDeadline: ())
            _ = h.drain()
        }
        XCTAssertNil(h.endpoint.nextDeadline, "the connection eventually idles out")
        XCTAssertEqual(h.endpoint.connectionCount, 0)
    }
}
