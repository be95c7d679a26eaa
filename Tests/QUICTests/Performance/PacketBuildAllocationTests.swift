// Building and sending packets allocates nothing per packet once a transfer
// is under way (issue 15 point 2; STYLE.md §6, after swift-nio's
// allocation-count tests): a bulk download's 1-RTT packets are written in
// place into a DatagramBatch's slots by `QUICEndpoint.nextDatagram` and
// sent with UDP GSO on a loopback socket, and the mallocs made by this
// thread inside those calls are counted (AllocationCounter interposes
// malloc for the test executable). What is outside the counted region is
// the test's own client: decrypting, acknowledging, and the application's
// writes into the stream's send buffer.

import AllocationCounter
import CSys
import XCTest
import Core
@testable import QUIC

final class PacketBuildAllocationTests: XCTestCase {
    func testTheCounterSeesSwiftAndCAllocations() {
        let before = allocation_counter_thread_total()
        let array = [UInt8](repeating: 1, count: 1000 + Int(before & 1))
        XCTAssertEqual(array.count > 0, true)
        XCTAssertGreaterThan(allocation_counter_thread_total(), before, "a Swift array's buffer is a malloc")
    }

    func testBuildingAndSendingPacketsAllocatesNothingPerPacket() throws {
        // Loopback sockets for the real send path.
        var err = [CChar](repeating: 0, count: 256)
        let tcp = csys_listen_tcp("127.0.0.1", 0, 16, &err, 256)
        guard tcp >= 0 else { throw XCTSkip("no loopback") }
        defer { _ = csys_close(tcp) }
        guard case .success(let (fds, _)) = UDPSocket.bindGroup(like: tcp, port: 0, count: 1),
              case .success(let (sinkFDs, _)) = UDPSocket.bindGroup(like: tcp, port: 0, count: 1) else {
            return XCTFail("bind")
        }
        defer { _ = csys_close(fds[0]); _ = csys_close(sinkFDs[0]) }
        let sender = UDPSocket(fd: fds[0], index: 0)!
        let sink = UDPSocket(fd: sinkFDs[0], index: 0)!
        let toSink = DatagramPath(peer: .ipv4(0x7F00_0001, port: sink.port), local: .ipv4(0x7F00_0001, port: 0))

        let client = TestClient()
        client.parameters.initialMaxData = 1 << 30
        client.parameters.initialMaxStreamDataBidiLocal = 1 << 30
        let h = ConnectionHarness(client: client)
        let answer = h.completeHandshake()
        h.ack1RTT(answer)
        let c = try XCTUnwrap(h.connection)
        h.send1RTT(Frames.stream(0, [1], fin: true))
        _ = c.withReadableBytes(stream: 0) { b, _ in (b.count, ()) }
        _ = h.takeEvents()

        var out = DatagramBatch(capacity: 64, slotSize: 1500)!
        out.usesSegmentation = sender.supportsSegmentation
        var sinkBatch = DatagramBatch(capacity: 64, slotSize: 2048)!
        var lengths = [Int](repeating: 0, count: out.capacity)
        let chunk = [UInt8](repeating: 0x5a, count: 64 << 10)
        var acked = RangeSet()
        var built = 0
        var countedPackets = 0
        var counted: Int64 = 0
        let warmUp = 500
        let measured = 3000
        var rounds = 0
        while countedPackets < measured, rounds < 10_000 {
            rounds += 1
            // The application keeps the stream's send buffer full.
            while chunk.withUnsafeBytes({ c.write(stream: 0, $0, fin: false) }) > 0 {}

            let measuring = built >= warmUp
            let before = allocation_counter_thread_total()
            var n = 0
            while n < out.capacity,
                  let (length, _) = h.endpoint.nextDatagram(into: UnsafeMutableRawBufferPointer(rebasing: out.slot(n)[0..<1200]), now: h.now) {
                out.setOutgoing(n, length: length, path: toSink)
                lengths[n] = length
                n += 1
            }
            if n > 0 { XCTAssertEqual(sender.send(&out, 0..<n), n) }
            let after = allocation_counter_thread_total()
            if measuring {
                counted += after - before
                countedPackets += n
            }
            built += n

            // The client: decrypt what was sent, acknowledge it all.
            while let got = sink.receive(into: &sinkBatch), got > 0 {}
            for i in 0..<n {
                for p in client.read(Array(out.slot(i)[0..<lengths[i]])) where p.space == .application {
                    acked.insert(p.packetNumber)
                }
            }
            if n > 0 {
                let ranges = acked.ranges.reversed().prefix(1).map { $0.lowerBound...($0.upperBound - 1) }
                h.send1RTT(Frames.ack(Array(ranges)))
            } else {
                h.advance(toDeadline: ())
            }
        }
        XCTAssertGreaterThanOrEqual(countedPackets, measured, "the transfer ran")
        if sender.supportsSegmentation { XCTAssertGreaterThan(out.segmentedSends.runs, 0, "sent with GSO") }
        // Nothing per packet: what remains over thousands of packets is
        // one-time (a table growing to a new high-water mark, the runtime
        // caching a witness table on first use): about 20 here when written,
        // against 14.6 per packet before the per-packet paths lost their
        // closures, element copies and generic iteration (debug build).
        XCTAssertLessThan(counted, Int64(countedPackets / 50), "\(counted) allocations for \(countedPackets) packets")
        print("packet build allocations: \(counted) for \(countedPackets) packets (\(out.segmentedSends.runs) GSO sends)")
    }
}
