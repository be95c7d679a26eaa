// ECN through the connection (RFC 9000 §13.4; RFC 9002 §7.1, B.7): the
// marks the endpoint asks for on its datagrams, the counts its ACK frames
// report, validation against a client that echoes counts (or does not),
// and the congestion reaction to CE in both controllers — without loss.

import XCTest
import Core
@testable import QUIC

/// A client that counts the ECN field of what it receives per space, as a
/// network path with an optional CE-marking router would deliver it, and
/// reports the counts in ACK_ECN frames.
private final class ECNClient {
    let h: ConnectionHarness
    /// Per space: ECT(0), ECT(1), CE counts of packets received.
    var counts = [ECNCounts](repeating: ECNCounts(ect0: 0, ect1: 0, ce: 0), count: 3)
    /// The router marks CE instead of dropping (RFC 3168 §5) while true.
    var congested = false
    /// The markings of the datagrams the endpoint sent, in order.
    var marks: [ECNCodepoint] = []

    init(_ h: ConnectionHarness) { self.h = h }

    /// Takes every datagram the endpoint sends now, as the client reads it.
    func exchange() -> [ReceivedPacket] {
        var out: [ReceivedPacket] = []
        var buffer = [UInt8](repeating: 0, count: 1500)
        while let r = buffer.withUnsafeMutableBytes({ h.endpoint.nextDatagram(into: $0, now: h.now) }) {
            var mark = h.endpoint.lastDatagramECN
            if congested && mark != .notECT { mark = .ce }
            marks.append(mark)
            let packets = h.client.read(Array(buffer[0..<r.length]))
            for p in packets {
                switch mark {
                case .ect0: counts[p.space.rawValue].ect0 += 1
                case .ect1: counts[p.space.rawValue].ect1 += 1
                case .ce: counts[p.space.rawValue].ce += 1
                case .notECT: break
                }
            }
            out += packets
        }
        h.collectEvents()
        return out
    }

    /// An ACK_ECN frame for `packets` of `space` with the counts so far.
    func ack(_ space: PacketNumberSpace, _ packets: [ReceivedPacket]) -> [UInt8] {
        let pns = packets.filter { $0.space == space }.map(\.packetNumber).sorted(by: >)
        var ranges: [ClosedRange<UInt64>] = []
        for pn in pns {
            if let last = ranges.last, last.lowerBound == pn + 1 {
                ranges[ranges.count - 1] = pn...last.upperBound
            } else {
                ranges.append(pn...pn)
            }
        }
        let ecn = counts[space.rawValue]
        return Frames.build(FrameEncoder.ackSize(ranges: ranges, ackDelay: 0, ecn: ecn)) {
            FrameEncoder.encodeAck(ranges: ranges, ackDelay: 0, ecn: ecn, into: $0)
        }
    }

    /// The handshake, with every ACK carrying ECN counts; returns the
    /// server's 1-RTT answer, acknowledged.
    func completeHandshake() {
        let flight = h.sendClientHelloECN(self)
        let finished = FakeTLS.message(FakeTLS.finished, [UInt8](repeating: 0xcf, count: 32))
        var datagram = h.client.packet(.initial, ack(.initial, flight))
        datagram += h.client.packet(.handshake, ack(.handshake, flight) + Frames.crypto(offset: h.clientCryptoOffset[1], finished))
        h.clientCryptoOffset[1] += UInt64(finished.count)
        h.client.installApplicationKeys()
        deliver(datagram)
        let answer = exchange()
        deliver(h.client.packet(.application, ack(.application, answer)))
        _ = h.takeEvents()
    }

    func deliver(_ datagram: [UInt8], ecn: ECNCodepoint = .notECT) {
        var d = datagram
        d.withUnsafeMutableBytes { h.endpoint.receive($0, path: h.path, ecn: ecn, now: h.now) }
        h.collectEvents()
    }
}

private extension ConnectionHarness {
    func sendClientHelloECN(_ e: ECNClient) -> [ReceivedPacket] {
        let hello = client.clientHello
        deliver(client.initialDatagram(Frames.crypto(hello)))
        clientCryptoOffset[0] = UInt64(hello.count)
        client.installHandshakeKeys()
        return e.exchange()
    }
}

final class ECNTests: XCTestCase {
    /// §13.4.2: "The endpoint sets an ECT(0) codepoint in the IP header of
    /// early outgoing packets sent on a new path".
    func testFirstDatagramsCarryECT0() {
        let h = ConnectionHarness()
        let e = ECNClient(h)
        _ = h.sendClientHelloECN(e)
        XCTAssertFalse(e.marks.isEmpty)
        XCTAssertEqual(Set(e.marks), [.ect0])
        XCTAssertEqual(h.endpoint.context.connections.values.first?.ecnState, .testing)
    }

    /// A client that acknowledges marked packets without ECN counts (no ECN
    /// access, as aioquic) fails validation (§13.4.2.1): marking stops.
    func testPlainAcksDisableMarking() throws {
        let h = ConnectionHarness()
        let answer = h.completeHandshake()
        h.ack1RTT(answer)
        let c = try XCTUnwrap(h.connection)
        XCTAssertEqual(c.ecnState, .failed)
        XCTAssertEqual(h.endpoint.ecnValidationFailures, 1)
        h.send1RTT(Frames.stream(0, [1], fin: true))
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        XCTAssertEqual([UInt8](repeating: 7, count: 3000).withUnsafeBytes { c.write(stream: 0, $0, fin: true) }, 3000)
        let e = ECNClient(h)
        XCTAssertFalse(e.exchange().isEmpty)
        XCTAssertEqual(Set(e.marks), [.notECT])
    }

    /// A client that echoes the counts validates the path: "capable", and
    /// data keeps leaving with ECT(0).
    func testEchoedCountsMakeThePathCapable() throws {
        let h = ConnectionHarness()
        let e = ECNClient(h)
        e.completeHandshake()
        let c = try XCTUnwrap(h.connection)
        XCTAssertTrue([.testing, .capable].contains(c.ecnState))
        XCTAssertEqual(h.endpoint.ecnValidationFailures, 0)
        h.send1RTT(Frames.stream(0, [1], fin: true))
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        _ = [UInt8](repeating: 7, count: 12_000).withUnsafeBytes { c.write(stream: 0, $0, fin: true) }
        e.marks.removeAll()
        let data = e.exchange()
        XCTAssertGreaterThanOrEqual(data.count, 3)
        XCTAssertEqual(Set(e.marks), [.ect0])
        e.deliver(h.client.packet(.application, e.ack(.application, data)))
        XCTAssertEqual(c.ecnState, .capable, "past the ten testing packets, validated")
    }

    /// §13.4.1: our ACK frames count what arrived per packet by its ECN
    /// field (ACK_ECN, type 0x03) once anything marked arrived.
    func testAcksReportReceivedCounts() throws {
        let h = ConnectionHarness()
        let e = ECNClient(h)
        e.completeHandshake()
        // Three ack-eliciting packets: ECT(0), ECT(0), CE; one unmarked.
        e.deliver(h.client.packet(.application, Frames.ping), ecn: .ect0)
        e.deliver(h.client.packet(.application, Frames.ping), ecn: .ect0)
        e.deliver(h.client.packet(.application, Frames.ping), ecn: .ce)
        e.deliver(h.client.packet(.application, Frames.ping), ecn: .notECT)
        h.advance(toDeadline: ())  // the ACK delay
        let acks = e.exchange().allFrames.compactMap { f -> AckFrame? in
            if case .ack(let a) = f { return a }
            return nil
        }
        let ack = try XCTUnwrap(acks.last)
        XCTAssertEqual(ack.ecn, ECNCounts(ect0: 2, ect1: 0, ce: 1))
    }

    /// The Initial and Handshake spaces' ECN counts and sent-packet ledgers
    /// go with their keys (RFC 9001 §4.9, DroppablePerSpace): a server's
    /// when its handshake completes. The Application space's counting goes on.
    func testEarlySpacesStateGoesWithTheHandshake() throws {
        let h = ConnectionHarness()
        let e = ECNClient(h)
        e.completeHandshake()
        let c = try XCTUnwrap(h.connection)
        XCTAssertFalse(c.ecn.spaces.holdsEarlySpaces)
        XCTAssertFalse(c.recovery.ledgers.holdsEarlySpaces)
        XCTAssertEqual(c.ecnValidation.received[PacketNumberSpace.initial.rawValue], ECNCounts(ect0: 0, ect1: 0, ce: 0))
        e.deliver(h.client.packet(.application, Frames.ping), ecn: .ce)
        XCTAssertEqual(c.ecnValidation.received[PacketNumberSpace.application.rawValue].ce, 1)
        XCTAssertFalse(c.ecn.spaces.holdsEarlySpaces)
    }

    /// §13.4.1: a duplicate packet is not processed and not counted.
    func testDuplicatesAreNotCounted() throws {
        let h = ConnectionHarness()
        let e = ECNClient(h)
        e.completeHandshake()
        let packet = h.client.packet(.application, Frames.ping)
        e.deliver(packet, ecn: .ect0)
        e.deliver(packet, ecn: .ect0)
        let c = try XCTUnwrap(h.connection)
        XCTAssertEqual(c.ecnValidation.received[PacketNumberSpace.application.rawValue].ect0, 1)
    }

    /// RFC 9002 §7.1/B.7 with each controller: a CE increase reduces the
    /// window once per round (marks on packets sent before the reduction do
    /// nothing more), packets sent after it reduce it again, and nothing is
    /// declared lost or sent again.
    func testCEReducesTheWindowOncePerRoundNewReno() throws { try checkCEReaction(.newReno) }
    func testCEReducesTheWindowOncePerRoundCubic() throws { try checkCEReaction(.cubic) }

    private func checkCEReaction(_ algorithm: CongestionAlgorithm) throws {
        var config = QUICConfiguration()
        config.congestionControl = algorithm
        let h = ConnectionHarness(configuration: config)
        let e = ECNClient(h)
        e.completeHandshake()
        let c = try XCTUnwrap(h.connection)
        XCTAssertNotEqual(c.ecnState, .failed)
        h.send1RTT(Frames.stream(0, [1], fin: true))
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        let body = [UInt8](repeating: 9, count: 20_000)
        XCTAssertEqual(body.withUnsafeBytes { c.write(stream: 0, $0, fin: true) }, 20_000)

        h.advance(nanoseconds: 1_000_000)
        e.congested = true
        let round1 = e.exchange()
        XCTAssertGreaterThanOrEqual(round1.count, 4)
        let before = c.recovery.controller.congestionWindow
        h.advance(nanoseconds: 10_000_000)
        // First half of the round arrived and is acknowledged (the second
        // half's marks are not counted yet): CE grew, one reduction.
        let half = round1.count / 2
        let app = PacketNumberSpace.application.rawValue
        e.counts[app].ce -= UInt64(round1.count - half)
        e.deliver(h.client.packet(.application, e.ack(.application, Array(round1.prefix(half)))))
        let reduced = c.recovery.controller.congestionWindow
        XCTAssertLessThan(reduced, before)
        XCTAssertEqual(h.endpoint.ecnCongestionSignals, 1)
        // The rest of the same round, CE grown again: same recovery period.
        h.advance(nanoseconds: 1_000_000)
        e.counts[app].ce += UInt64(round1.count - half)
        e.deliver(h.client.packet(.application, e.ack(.application, round1)))
        XCTAssertEqual(c.recovery.controller.congestionWindow, reduced, "one reduction per round (RFC 9002 §7.3.2)")
        XCTAssertEqual(h.endpoint.ecnCongestionSignals, 2, "signalled, but inside the recovery period")
        // A packet sent after the reduction, CE-marked: a new round, a new reduction.
        var round2: [ReceivedPacket] = []
        for _ in 0..<20 where round2.isEmpty {  // past the pacer
            h.advance(nanoseconds: 2_000_000)
            round2 = e.exchange()
        }
        XCTAssertFalse(round2.isEmpty)
        h.advance(nanoseconds: 10_000_000)
        e.deliver(h.client.packet(.application, e.ack(.application, round1 + round2)))
        XCTAssertLessThan(c.recovery.controller.congestionWindow, reduced)
        // No loss: nothing was resent and the path stays ECN-capable.
        let offsets = (round1 + round2).streamFrames(0).map(\.offset)
        XCTAssertEqual(offsets.count, Set(offsets).count, "no stream data sent twice")
        XCTAssertEqual(c.ecnState, .capable)
        XCTAssertEqual(h.endpoint.ecnValidationFailures, 0)
    }
}
