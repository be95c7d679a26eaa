// A download over a lossy link: the server's packets are dropped at random
// (deterministic seed); the client acknowledges what arrives. Loss
// detection, PTO and retransmission must deliver every byte in order, with
// the FIN, and the connection must end up with nothing in flight.

import XCTest
import Core
@testable import QUIC

final class LossyTransferTests: XCTestCase {
    private struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 33
        }
    }

    /// Under each congestion controller (CUBIC, the default, and NewReno).
    func testDownloadWithRandomLoss() throws {
        for algorithm in CongestionAlgorithm.allCases {
            for (seed, lossPercent) in [(UInt64(1), UInt64(10)), (7, 25), (42, 40), (99, 60)] {
                try download(seed: seed, lossPercent: lossPercent, algorithm: algorithm)
            }
        }
    }

    private func download(seed: UInt64, lossPercent: UInt64, algorithm: CongestionAlgorithm) throws {
        var configuration = QUICConfiguration()
        configuration.congestionControl = algorithm
        let h = ConnectionHarness(configuration: configuration)
        let answer = h.completeHandshake()
        _ = h.takeEvents()
        h.ack1RTT(answer)
        let c = try XCTUnwrap(h.connection)
        XCTAssertEqual(c.recovery.controller.algorithm, algorithm)
        h.send1RTT(Frames.stream(0, [1], fin: true))
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        _ = h.takeEvents()
        let body = (0..<120_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        var written = 0
        var received = ReassemblyBuffer()
        var finAt: UInt64?
        var rng = Generator(state: seed)
        var rounds = 0
        var clientAcked = RangeSet()
        while rounds < 2000 {
            rounds += 1
            if written < body.count {
                written += body[written...].withUnsafeBytes { c.write(stream: 0, $0, fin: false) }
                if written == body.count { c.finish(stream: 0) }
            }
            let datagrams = h.drain()
            var delivered: [ReceivedPacket] = []
            for d in datagrams where rng.next() % 100 >= lossPercent { delivered += h.client.read(d.bytes) }
            for f in delivered.streamFrames(0) {
                f.data.withUnsafeBytes { received.write(offset: f.offset, $0) }
                if f.fin { finAt = f.offset + UInt64(f.data.count) }
            }
            for p in delivered where p.space == .application { clientAcked.insert(p.packetNumber) }
            if !delivered.isEmpty {
                // The newest 20 ranges, largest first, as a real client would.
                let ranges = clientAcked.ranges.reversed().prefix(20).map { $0.lowerBound...($0.upperBound - 1) }
                h.send1RTT(Frames.ack(Array(ranges)))
            }
            if let finAt, received.contiguousCount == Int(finAt), c.recovery.bytesInFlight == 0 { break }
            if datagrams.isEmpty { h.advance(toDeadline: ()) }
        }
        XCTAssertEqual(finAt, UInt64(body.count), "seed \(seed)")
        XCTAssertEqual(received.contiguousCount, body.count, "seed \(seed): inFlight \(c.recovery.bytesInFlight) pto \(c.recovery.ptoCount) open \(c.isOpen) events \(h.takeEvents())")
        XCTAssertTrue(received.withContiguousBytes { Array($0) } == body, "seed \(seed)")
        XCTAssertEqual(c.recovery.bytesInFlight, 0, "seed \(seed)")
        XCTAssertNil(c.streams[0], "the stream closed once its data was acknowledged (seed \(seed))")
        XCTAssertLessThan(rounds, 2000, "seed \(seed)")
    }
}
