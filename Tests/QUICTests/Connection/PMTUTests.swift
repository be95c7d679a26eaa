// Path MTU discovery through the connection (RFC 9000 §14.3, §14.4; RFC
// 8899): the probe on the wire, the datagram size it raises, a lost probe
// that is no congestion signal, and the fall back to 1200 bytes on a black
// hole.

import XCTest
import Core
@testable import QUIC

final class PMTUTests: XCTestCase {
    private struct Sent {
        var size: Int
        var isProbe: Bool
        var packets: [ReceivedPacket]
    }

    /// Every datagram the endpoint sends now, with its size and probe flag.
    private func drain(_ h: ConnectionHarness) -> [Sent] {
        var out: [Sent] = []
        var buffer = [UInt8](repeating: 0, count: 1500)
        while let r = buffer.withUnsafeMutableBytes({ h.endpoint.nextDatagram(into: $0, now: h.now) }) {
            out.append(Sent(size: r.length, isProbe: h.endpoint.lastDatagramIsPMTUProbe,
                            packets: h.client.read(Array(buffer[0..<r.length]))))
        }
        h.collectEvents()
        return out
    }

    private func isProbe(_ p: ReceivedPacket) -> Bool {
        !p.frames.isEmpty && Set(p.frames.map(frameKind)) == ["ping", "padding"]
    }

    /// A confirmed connection: the handshake's answer (which carries the
    /// first probe: the search starts once the handshake is confirmed)
    /// acknowledged, the probe only if `probeArrives`; then a request
    /// stream open with `bytes` of response queued.
    private func established(maximum: Int = 1452, probeArrives: Bool = true,
                             response bytes: Int = 60_000) -> (ConnectionHarness, QUICConnection, [ReceivedPacket]) {
        var config = QUICConfiguration()
        config.maxUDPPayloadSize = maximum
        let h = ConnectionHarness(configuration: config)
        let answer = h.completeHandshake()
        let c = h.connection!
        h.ack1RTT(probeArrives ? answer : answer.filter { !isProbe($0) })
        h.send1RTT(Frames.stream(0, [1], fin: true))
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        _ = h.takeEvents()
        let body = [UInt8](repeating: 5, count: bytes)
        XCTAssertEqual(body.withUnsafeBytes { c.write(stream: 0, $0, fin: false) }, bytes)
        return (h, c, answer)
    }

    /// §14.4: the probe is one 1-RTT packet of exactly the probed size with
    /// a PING and PADDING only, sent once the handshake is confirmed; the
    /// datagrams around it stay at 1200 until it is acknowledged, then full
    /// datagrams have the new size.
    func testAnAcknowledgedProbeRaisesTheDatagramSize() throws {
        var config = QUICConfiguration()
        config.maxUDPPayloadSize = 1452
        let h = ConnectionHarness(configuration: config)
        let flight = h.sendClientHello()
        XCTAssertFalse(flight.contains(where: isProbe), "no probe before the handshake is confirmed")
        let answer = h.sendClientFinished(acking: flight)
        let c = try XCTUnwrap(h.connection)
        let probes = answer.filter(isProbe)
        XCTAssertEqual(probes.map(\.size), [1452], "one probe, of the maximum")
        XCTAssertTrue((flight + answer).filter { !isProbe($0) }.allSatisfy { $0.size <= 1200 })
        XCTAssertEqual(c.maxDatagramSize, 1200)
        h.ack1RTT(answer)
        XCTAssertEqual(c.maxDatagramSize, 1452)
        XCTAssertEqual(h.endpoint.pmtuRaises, 1)
        h.send1RTT(Frames.stream(0, [1], fin: true))
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        XCTAssertEqual([UInt8](repeating: 5, count: 20_000).withUnsafeBytes { c.write(stream: 0, $0, fin: true) }, 20_000)
        let next = drain(h)
        XCTAssertFalse(next.contains { $0.isProbe }, "the maximum is confirmed: the search is over")
        XCTAssertGreaterThan(next.filter { $0.size > 1400 }.count, 3)
        XCTAssertTrue(next.allSatisfy { $0.size <= 1452 })
    }

    /// §14.4 / RFC 8899 §3: a lost probe is not a congestion signal — the
    /// window is untouched and the data goes on at 1200; after MAX_PROBES
    /// losses a smaller size is probed, and the search settles below the
    /// path's limit.
    func testLostProbesAreNoCongestionSignal() throws {
        let (h, c, answer) = established(probeArrives: false)
        var probeSizes = answer.filter(isProbe).map(\.size)
        for _ in 0..<16 {
            _ = [UInt8](repeating: 6, count: 12_000).withUnsafeBytes { c.write(stream: 0, $0, fin: false) }
            let sent = drain(h)
            probeSizes += sent.filter(\.isProbe).map(\.size)
            // The path carries 1300 bytes at most: bigger datagrams vanish.
            let arrived = sent.filter { $0.size <= 1300 }.flatMap(\.packets)
            let window = c.recovery.controller.congestionWindow
            h.ack1RTT(arrived)
            h.advance(nanoseconds: 5_000_000)
            XCTAssertGreaterThanOrEqual(c.recovery.controller.congestionWindow, window, "no reduction")
            XCTAssertNil(c.recovery.controller.recoveryStartTime, "no recovery period")
        }
        XCTAssertEqual(Array(probeSizes.prefix(3)), [1452, 1452, 1452], "\(probeSizes)")
        XCTAssertLessThan(probeSizes[3], 1452, "after MAX_PROBES losses, halfway")
        XCTAssertGreaterThan(c.maxDatagramSize, 1200, "\(probeSizes)")
        XCTAssertLessThanOrEqual(c.maxDatagramSize, 1300)
    }

    /// RFC 8899 §4.3: after a raise, a path that drops everything (the MTU
    /// shrank) fires probe timeouts; at three in a row the size goes back
    /// to 1200, and the probes that follow are 1200-byte datagrams.
    func testBlackHoleFallsBackTo1200() throws {
        let (h, c, _) = established()
        XCTAssertEqual(c.maxDatagramSize, 1452)
        _ = drain(h)  // lost
        var sizes: [Int] = []
        for _ in 0..<4 {
            h.advance(toDeadline: ())
            sizes = drain(h).filter { !$0.isProbe }.map(\.size)
        }
        XCTAssertGreaterThanOrEqual(c.recovery.ptoCount, PathMTUDiscovery.blackHoleProbeTimeouts)
        XCTAssertEqual(c.maxDatagramSize, 1200)
        XCTAssertEqual(h.endpoint.pmtuBlackHoles, 1)
        XCTAssertFalse(sizes.isEmpty)
        XCTAssertTrue(sizes.allSatisfy { $0 <= 1200 }, "\(sizes)")
    }

    /// The library default (1200) probes nothing: datagrams stay 1200.
    func testNoSearchAtTheDefaultMaximum() {
        let (h, c, answer) = established(maximum: 1200)
        XCTAssertFalse(answer.contains(where: isProbe))
        let sent = drain(h)
        XCTAssertFalse(sent.contains { $0.isProbe })
        XCTAssertTrue(sent.allSatisfy { $0.size <= 1200 })
        XCTAssertEqual(c.pathMTU.phase, .complete(raiseAt: nil))
    }

    private func frameKind(_ f: Frame) -> String {
        switch f {
        case .ping: "ping"
        case .padding: "padding"
        default: "other"
        }
    }
}
