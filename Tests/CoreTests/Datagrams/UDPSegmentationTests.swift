import CSys
import Glibc
import XCTest

import Core

/// UDP segmentation offload on real loopback sockets: a batch sent with
/// UDP_SEGMENT (GSO) arrives as the datagrams it was built from, a
/// coalescing receive (UDP_GRO) is cut back into them with the right peers,
/// and a send the kernel refuses segmented goes out without it. Skipped
/// where the kernel lacks the feature (the probe says so), not faked.
final class UDPSegmentationTests: XCTestCase {
    private var descriptors: [Int32] = []

    override func tearDown() {
        for fd in descriptors { _ = csys_close(fd) }
        descriptors = []
    }

    /// One UDP socket on `host` (a group of one beside a TCP listener).
    private func socket(_ host: String = "127.0.0.1") throws -> UDPSocket {
        var err = [CChar](repeating: 0, count: 256)
        let tcp = csys_listen_tcp(host, 0, 16, &err, 256)
        guard tcp >= 0 else { throw XCTSkip("no loopback here") }
        descriptors.append(tcp)
        guard case .success(let (fds, _)) = UDPSocket.bindGroup(like: tcp, port: 0, count: 1) else {
            XCTFail("bind")
            throw XCTSkip("no UDP socket")
        }
        descriptors += fds
        return UDPSocket(fd: fds[0], index: 0)!
    }

    private func path(to socket: UDPSocket) -> DatagramPath {
        DatagramPath(peer: .ipv4(0x7F00_0001, port: socket.port), local: .ipv4(0x7F00_0001, port: 0))
    }

    /// Datagram `k` of a test: `size` bytes that say which one it is.
    private func payload(_ k: Int, size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: k &* 31 &+ $0) }
    }

    /// Fills entries `0..<payloads.count` of `batch` to `path`.
    private func fill(_ batch: inout DatagramBatch, _ payloads: [[UInt8]], path: DatagramPath) {
        for (i, p) in payloads.enumerated() {
            let slot = batch.slot(i)
            for (j, b) in p.enumerated() { slot[j] = b }
            batch.setOutgoing(i, length: p.count, path: path)
        }
    }

    /// Receives until `expecting` datagrams (after cutting coalesced
    /// entries) came, or a second passed: each datagram with its path, and
    /// how many entries carried them.
    private func receive(_ socket: UDPSocket, into batch: inout DatagramBatch,
                         expecting: Int) -> (datagrams: [([UInt8], DatagramPath)], entries: Int) {
        var out: [([UInt8], DatagramPath)] = []
        var entries = 0
        for _ in 0..<50 where out.count < expecting {
            let n = socket.receive(into: &batch)!
            for i in 0..<n {
                XCTAssertFalse(batch.isTruncated(i))
                entries += 1
                for d in batch.datagrams(i) { out.append((Array(d), batch.path(i))) }
            }
            if n == 0 { _ = csys_poll_one(socket.fd, 1, 20) }
        }
        return (out, entries)
    }

    func testASegmentedSendArrivesAsItsDatagramsWithAShorterLastOne() throws {
        let server = try socket()
        let client = try socket()
        guard client.supportsSegmentation else { throw XCTSkip("no UDP_SEGMENT in this kernel") }
        // 40 datagrams of 1200 bytes and a last of 300: one run.
        let payloads = (0..<40).map { payload($0, size: 1200) } + [payload(40, size: 300)]
        var batch = DatagramBatch(capacity: 64, slotSize: 1500)!
        batch.usesSegmentation = true
        fill(&batch, payloads, path: path(to: server))
        XCTAssertEqual(client.send(&batch, 0..<payloads.count), payloads.count)
        XCTAssertTrue(batch.usesSegmentation, "loopback takes GSO")
        XCTAssertEqual(batch.segmentedSends.runs, 1, "one sendmsg for the run")
        XCTAssertEqual(batch.segmentedSends.datagrams, 41)
        for i in 0..<payloads.count { XCTAssertEqual(batch.sendError(i), 0) }
        // Without GRO on the receiver, the kernel cuts the run back into
        // datagrams: 41 entries of their own size.
        var rx = DatagramBatch(capacity: 64, slotSize: 2048)!
        let got = receive(server, into: &rx, expecting: payloads.count)
        XCTAssertEqual(got.datagrams.map(\.0), payloads)
        XCTAssertEqual(got.entries, payloads.count)
        for (_, p) in got.datagrams { XCTAssertEqual(p.peer, .ipv4(0x7F00_0001, port: client.port)) }
    }

    func testRunsBreakAtAnotherPeerALongerDatagramAndTheSegmentLimit() throws {
        let a = try socket()
        let b = try socket()
        let client = try socket()
        guard client.supportsSegmentation else { throw XCTSkip("no UDP_SEGMENT in this kernel") }
        var batch = DatagramBatch(capacity: 128, slotSize: 1500)!
        batch.usesSegmentation = true
        // to a: 3 × 100 bytes | to b: 2 × 100 | to a: 50, 100 (a shorter one
        // cannot lead a run of longer ones) | to a: 70 × 10 (over the 64
        // segments of one send).
        var plan: [(UDPSocket, Int)] = []
        plan += [(a, 100), (a, 100), (a, 100), (b, 100), (b, 100), (a, 50), (a, 100)]
        plan += Array(repeating: (a, 10), count: 70)
        for (i, (to, size)) in plan.enumerated() {
            let p = payload(i, size: size)
            for (j, byte) in p.enumerated() { batch.slot(i)[j] = byte }
            batch.setOutgoing(i, length: size, path: path(to: to))
        }
        XCTAssertEqual(client.send(&batch, 0..<plan.count), plan.count)
        // Runs: a 100 ×3; b 100 ×2; a 50 alone (unsegmented: a longer one
        // cannot follow); a 100 with the first a 10 as its shorter last;
        // the other 69 × 10 as 64 and 5.
        XCTAssertEqual(batch.segmentedSends.runs, 5)
        XCTAssertEqual(batch.segmentedSends.datagrams, 3 + 2 + 2 + 64 + 5)
        var rx = DatagramBatch(capacity: 128, slotSize: 2048)!
        let toA = plan.enumerated().filter { $0.element.0.fd == a.fd }.map { payload($0.offset, size: $0.element.1) }
        let toB = plan.enumerated().filter { $0.element.0.fd == b.fd }.map { payload($0.offset, size: $0.element.1) }
        XCTAssertEqual(receive(a, into: &rx, expecting: toA.count).datagrams.map(\.0), toA)
        XCTAssertEqual(receive(b, into: &rx, expecting: toB.count).datagrams.map(\.0), toB)
    }

    func testACoalescedReceiveIsCutBackIntoItsDatagramsWithTheirPeers() throws {
        let server = try socket()
        guard server.enableReceiveCoalescing() else { throw XCTSkip("no UDP_GRO in this kernel") }
        let one = try socket()
        let two = try socket()
        guard one.supportsSegmentation else { throw XCTSkip("no UDP_SEGMENT in this kernel") }
        // Two senders' segmented runs (loopback hands a GSO send to a GRO
        // socket whole), and a single datagram between them.
        let fromOne = (0..<20).map { payload($0, size: 1200) } + [payload(20, size: 17)]
        let fromTwo = (0..<5).map { payload(100 + $0, size: 900) }
        var batch = DatagramBatch(capacity: 32, slotSize: 1500)!
        batch.usesSegmentation = true
        fill(&batch, fromOne, path: path(to: server))
        XCTAssertEqual(one.send(&batch, 0..<fromOne.count), fromOne.count)
        fill(&batch, [[42]], path: path(to: server))
        XCTAssertEqual(two.send(&batch, 0..<1), 1)
        fill(&batch, fromTwo, path: path(to: server))
        XCTAssertEqual(two.send(&batch, 0..<fromTwo.count), fromTwo.count)

        var rx = DatagramBatch(capacity: 8, slotSize: DatagramBatch.maxSlotSize)!
        let got = receive(server, into: &rx, expecting: fromOne.count + 1 + fromTwo.count)
        XCTAssertEqual(got.datagrams.map(\.0), fromOne + [[42]] + fromTwo)
        XCTAssertEqual(got.entries, 3, "each send arrived as one entry")
        let peers = got.datagrams.map(\.1.peer.port)
        XCTAssertEqual(peers, Array(repeating: one.port, count: fromOne.count) + Array(repeating: two.port, count: 1 + fromTwo.count))
        for (_, p) in got.datagrams { XCTAssertEqual(p.local.ipv4Value, 0x7F00_0001, "packet info still arrives") }
    }

    func testARunLeavesFromTheLocalAddressOfItsPathAndRunsBreakWhereItChanges() throws {
        // Bound to the wildcard, the server answers from the address each
        // client used (IP_PKTINFO): a run shares one source, so datagrams
        // to one peer from two local addresses are two runs.
        let server = try socket("0.0.0.0")
        let client = try socket()
        guard server.supportsSegmentation else { throw XCTSkip("no UDP_SEGMENT in this kernel") }
        var batch = DatagramBatch(capacity: 16, slotSize: 1500)!
        batch.usesSegmentation = true
        let peer = SocketAddress.ipv4(0x7F00_0001, port: client.port)
        for i in 0..<10 {
            for (j, byte) in payload(i, size: 500).enumerated() { batch.slot(i)[j] = byte }
            let local: UInt32 = i < 6 ? 0x7F00_0002 : 0x7F00_0003
            batch.setOutgoing(i, length: 500, path: DatagramPath(peer: peer, local: .ipv4(local, port: server.port)))
        }
        XCTAssertEqual(server.send(&batch, 0..<10), 10)
        XCTAssertEqual(batch.segmentedSends.runs, 2)
        XCTAssertEqual(batch.segmentedSends.datagrams, 10)
        var rx = DatagramBatch(capacity: 16, slotSize: 2048)!
        let got = receive(client, into: &rx, expecting: 10).datagrams
        XCTAssertEqual(got.map(\.0), (0..<10).map { payload($0, size: 500) })
        XCTAssertEqual(got.map { $0.1.peer.ipv4Value }, Array(repeating: 0x7F00_0002, count: 6) + Array(repeating: 0x7F00_0003, count: 4),
                       "each run's source")
        for (_, p) in got { XCTAssertEqual(p.peer.port, server.port) }
    }

    func testCoalescedBytesAreCutEverySegmentSizeWithAShorterLast() {
        let bytes = [UInt8](0..<10)
        bytes.withUnsafeBytes { b in
            func cut(_ size: Int) -> [[UInt8]] { DatagramBatch.Datagrams(bytes: b, segmentSize: size).map { Array($0) } }
            XCTAssertEqual(cut(10), [Array(0..<10)], "one datagram: itself")
            XCTAssertEqual(cut(4), [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]])
            XCTAssertEqual(cut(5), [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]])
            XCTAssertEqual(cut(1).count, 10)
            XCTAssertEqual(DatagramBatch.Datagrams(bytes: UnsafeRawBufferPointer(rebasing: b[0..<0]), segmentSize: 4).map(\.count), [])
        }
        let batch = DatagramBatch(capacity: 1, slotSize: 64)!
        XCTAssertFalse(batch.usesSegmentation, "off until asked for")
    }

    func testASendTheKernelRefusesSegmentedGoesOutWithoutIt() throws {
        let server = try socket()
        let client = try socket()
        guard client.supportsSegmentation else { throw XCTSkip("no UDP_SEGMENT in this kernel") }
        // SO_NO_CHECK (no UDP checksum on send) makes the kernel refuse
        // segmentation (EINVAL: it cannot checksum the segments it cuts),
        // as a device without checksum offload refuses it with EIO.
        var one: Int32 = 1
        guard setsockopt(client.fd, SOL_SOCKET, SO_NO_CHECK, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw XCTSkip("SO_NO_CHECK refused")
        }
        let payloads = (0..<10).map { payload($0, size: 1000) }
        var batch = DatagramBatch(capacity: 16, slotSize: 1500)!
        batch.usesSegmentation = true
        fill(&batch, payloads, path: path(to: server))
        XCTAssertEqual(client.send(&batch, 0..<payloads.count), payloads.count)
        XCTAssertFalse(batch.usesSegmentation, "turned off by the refusal")
        XCTAssertEqual(batch.segmentedSends.runs, 0)
        for i in 0..<payloads.count { XCTAssertEqual(batch.sendError(i), 0, "sent after all") }
        var rx = DatagramBatch(capacity: 16, slotSize: 2048)!
        XCTAssertEqual(receive(server, into: &rx, expecting: payloads.count).datagrams.map(\.0), payloads)
        // And later sends go unsegmented from the start.
        XCTAssertEqual(client.send(&batch, 0..<payloads.count), payloads.count)
        XCTAssertEqual(receive(server, into: &rx, expecting: payloads.count).datagrams.map(\.0), payloads)
    }
}
