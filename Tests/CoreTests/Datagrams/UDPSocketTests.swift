import CSys
import XCTest

import Core

/// The batch receive and send on real loopback sockets: the paths the
/// kernel reports, the source address a reply leaves from, truncation,
/// refusals, and an empty socket.
final class UDPSocketTests: XCTestCase {
    private var listeners: [Int32] = []
    private var descriptors: [Int32] = []

    override func tearDown() {
        for fd in listeners + descriptors { _ = csys_close(fd) }
        listeners = []
        descriptors = []
    }

    /// A TCP listener on `host` (what the UDP group mirrors), or nil if the
    /// host cannot be bound here (no IPv6).
    private func listener(_ host: String) -> Int32? {
        var err = [CChar](repeating: 0, count: 256)
        let fd = csys_listen_tcp(host, 0, 16, &err, 256)
        guard fd >= 0 else { return nil }
        listeners.append(fd)
        return fd
    }

    private func group(_ host: String, count: Int, port: Int = 0) throws -> (sockets: [UDPSocket], port: Int) {
        guard let tcp = listener(host) else { throw XCTSkip("cannot bind \(host) here") }
        switch UDPSocket.bindGroup(like: tcp, port: port, count: count) {
        case .failure(let f): XCTFail(f.reason); return ([], 0)
        case .success(let (fds, port)):
            descriptors += fds
            return (fds.enumerated().map { UDPSocket(fd: $1, index: $0)! }, port)
        }
    }

    /// Sends `payloads` from `from` to `to` in one batch.
    private func send(_ payloads: [[UInt8]], from: UDPSocket, path: DatagramPath) -> Int? {
        var batch = DatagramBatch(capacity: max(payloads.count, 1), slotSize: 2048)!
        for (i, p) in payloads.enumerated() {
            let slot = batch.slot(i)
            for (j, b) in p.enumerated() { slot[j] = b }
            batch.setOutgoing(i, length: p.count, path: path)
        }
        return from.send(&batch, 0..<payloads.count)
    }

    private func receiveAll(_ socket: UDPSocket, batch: inout DatagramBatch, expecting: Int) -> [([UInt8], DatagramPath, Bool)] {
        var out: [([UInt8], DatagramPath, Bool)] = []
        for _ in 0..<200 where out.count < expecting {
            let n = socket.receive(into: &batch)!
            for i in 0..<n { out.append((Array(batch.bytes(i)), batch.path(i), batch.isTruncated(i))) }
            if n == 0 { _ = csys_poll_one(socket.fd, 1, 20) }
        }
        return out
    }

    private let loopback4 = SocketAddress.ipv4(0x7F00_0001, port: 0)

    func testABatchArrivesWithEachPeerAndTheLocalAddressItWasSentTo() throws {
        let (server, port) = try group("127.0.0.1", count: 1)
        let (client, clientPort) = try group("127.0.0.1", count: 1)
        XCTAssertEqual(server[0].family, 4)
        XCTAssertEqual(Int(server[0].port), port)
        var to = loopback4
        to.port = UInt16(port)
        let payloads = (0..<5).map { [UInt8](repeating: UInt8($0), count: 100 + $0) }
        XCTAssertEqual(send(payloads, from: client[0], path: DatagramPath(peer: to, local: loopback4)), 5)
        var batch = DatagramBatch(capacity: 8, slotSize: 1500)!
        let got = receiveAll(server[0], batch: &batch, expecting: 5)
        XCTAssertEqual(got.map(\.0), payloads)
        for (_, path, truncated) in got {
            XCTAssertFalse(truncated)
            XCTAssertEqual(path.peer.family, .ipv4)
            XCTAssertEqual(path.peer.ipv4Value, 0x7F00_0001)
            XCTAssertEqual(Int(path.peer.port), clientPort)
            XCTAssertEqual(path.local.ipv4Value, 0x7F00_0001, "IP_PKTINFO destination")
            XCTAssertEqual(Int(path.local.port), port)
            XCTAssertEqual(path.local.scopeID, 1, "the loopback interface")
        }
        XCTAssertEqual(server[0].receive(into: &batch), 0, "nothing left: 0, not an error")
    }

    func testAReplyLeavesFromTheLocalAddressOfThePath() throws {
        // Bound to the wildcard, the server replies from 127.0.0.2, where
        // the client sent, and not from the address the kernel would pick.
        let (server, port) = try group("0.0.0.0", count: 1)
        let (client, _) = try group("127.0.0.1", count: 1)
        let to = SocketAddress.ipv4(0x7F00_0002, port: UInt16(port))
        XCTAssertEqual(send([[1, 2, 3]], from: client[0], path: DatagramPath(peer: to, local: loopback4)), 1)
        var batch = DatagramBatch(capacity: 4, slotSize: 1500)!
        let request = receiveAll(server[0], batch: &batch, expecting: 1)
        XCTAssertEqual(request.count, 1)
        let path = request[0].1
        XCTAssertEqual(path.local.ipv4Value, 0x7F00_0002)
        XCTAssertEqual(send([[4, 5]], from: server[0], path: DatagramPath(peer: path.peer, local: path.local)), 1)
        let reply = receiveAll(client[0], batch: &batch, expecting: 1)
        XCTAssertEqual(reply.first?.0, [4, 5])
        XCTAssertEqual(reply.first?.1.peer.ipv4Value, 0x7F00_0002, "the reply's source")
        XCTAssertEqual(Int(reply.first?.1.peer.port ?? 0), port)
    }

    func testADualStackSocketSeesIPv4PeersAsIPv4AndAnswersThem() throws {
        let (server, port) = try group("::", count: 1)
        XCTAssertEqual(server[0].family, 6)
        let (client4, client4Port) = try group("127.0.0.1", count: 1)
        let to = SocketAddress.ipv4(0x7F00_0001, port: UInt16(port))
        XCTAssertEqual(send([[9]], from: client4[0], path: DatagramPath(peer: to, local: loopback4)), 1)
        var batch = DatagramBatch(capacity: 4, slotSize: 1500)!
        let got = receiveAll(server[0], batch: &batch, expecting: 1)
        XCTAssertEqual(got.count, 1)
        let path = got[0].1
        XCTAssertEqual(path.peer, SocketAddress.ipv4(0x7F00_0001, port: UInt16(client4Port)), "not IPv4-mapped")
        XCTAssertEqual(path.local.family, .ipv4)
        XCTAssertEqual(path.local.ipv4Value, 0x7F00_0001)
        XCTAssertEqual(send([[10]], from: server[0], path: path), 1)
        XCTAssertEqual(receiveAll(client4[0], batch: &batch, expecting: 1).first?.0, [10])

        // And an IPv6 peer, where the host has IPv6 loopback.
        guard let (client6, client6Port) = try? group("::1", count: 1) else { return }
        let loopback6 = SocketAddress(family: .ipv6, port: UInt16(port), high: 0, low: 1)
        XCTAssertEqual(send([[11]], from: client6[0], path: DatagramPath(peer: loopback6, local: loopback6)), 1)
        let got6 = receiveAll(server[0], batch: &batch, expecting: 1)
        XCTAssertEqual(got6.first?.1.peer, SocketAddress(family: .ipv6, port: UInt16(client6Port), high: 0, low: 1))
        XCTAssertEqual(got6.first?.1.local.family, .ipv6)
        XCTAssertEqual(got6.first?.1.local.low, 1)
        XCTAssertEqual(send([[12]], from: server[0], path: got6[0].1), 1)
        XCTAssertEqual(receiveAll(client6[0], batch: &batch, expecting: 1).first?.0, [12])
    }

    func testADatagramLargerThanItsSlotIsFlaggedTruncated() throws {
        let (server, port) = try group("127.0.0.1", count: 1)
        let (client, _) = try group("127.0.0.1", count: 1)
        let to = SocketAddress.ipv4(0x7F00_0001, port: UInt16(port))
        XCTAssertEqual(send([[UInt8](repeating: 1, count: 1400), [2]], from: client[0],
                            path: DatagramPath(peer: to, local: loopback4)), 2)
        var batch = DatagramBatch(capacity: 4, slotSize: 1200)!
        let got = receiveAll(server[0], batch: &batch, expecting: 2)
        XCTAssertEqual(got.map(\.2), [true, false])
        XCTAssertEqual(got[0].0.count, 1200, "only the slot's bytes")
        XCTAssertEqual(got[1].0, [2])
    }

    func testADatagramTheSocketCannotSendIsDroppedAndTheRestGoOut() throws {
        let (server, port) = try group("127.0.0.1", count: 1)
        let (client, _) = try group("127.0.0.1", count: 1)
        let to = SocketAddress.ipv4(0x7F00_0001, port: UInt16(port))
        let v6Peer = SocketAddress(family: .ipv6, port: 9, high: 0, low: 1)
        var batch = DatagramBatch(capacity: 3, slotSize: 64)!
        for i in 0..<3 { batch.slot(i)[0] = UInt8(i) }
        batch.setOutgoing(0, length: 1, path: DatagramPath(peer: to, local: loopback4))
        batch.setOutgoing(1, length: 1, path: DatagramPath(peer: v6Peer, local: loopback4))  // IPv6 on an IPv4 socket
        batch.setOutgoing(2, length: 1, path: DatagramPath(peer: to, local: loopback4))
        XCTAssertEqual(client[0].send(&batch, 0..<3), 3)
        XCTAssertEqual(batch.sendError(0), 0)
        XCTAssertNotEqual(batch.sendError(1), 0)
        XCTAssertEqual(batch.sendError(2), 0)
        var rx = DatagramBatch(capacity: 4, slotSize: 64)!
        XCTAssertEqual(receiveAll(server[0], batch: &rx, expecting: 2).map(\.0), [[0], [2]])
    }

    func testSendingToAClosedPortLeavesTheSocketUsable() throws {
        let (server, port) = try group("127.0.0.1", count: 1)
        let (closed, closedPort) = try group("127.0.0.1", count: 1)
        _ = csys_close(closed[0].fd)
        descriptors.removeAll { $0 == closed[0].fd }
        let dead = SocketAddress.ipv4(0x7F00_0001, port: UInt16(closedPort))
        for _ in 0..<3 { XCTAssertEqual(send([[1]], from: server[0], path: DatagramPath(peer: dead, local: loopback4)), 1) }
        var batch = DatagramBatch(capacity: 4, slotSize: 64)!
        XCTAssertEqual(server[0].receive(into: &batch), 0)
        let (client, _) = try group("127.0.0.1", count: 1)
        let to = SocketAddress.ipv4(0x7F00_0001, port: UInt16(port))
        XCTAssertEqual(send([[7]], from: client[0], path: DatagramPath(peer: to, local: loopback4)), 1)
        XCTAssertEqual(receiveAll(server[0], batch: &batch, expecting: 1).first?.0, [7])
    }

    func testAPortSomeoneElseHoldsIsRefusedEvenWithSOReuseport() throws {
        let (_, port) = try group("127.0.0.1", count: 2)
        guard let tcp = listener("127.0.0.1") else { throw XCTSkip("no loopback") }
        guard case .failure(let f) = UDPSocket.bindGroup(like: tcp, port: port, count: 1) else {
            return XCTFail("joined another group")
        }
        XCTAssertTrue(f.reason.contains("in use"), f.reason)
    }

    func testTheBuffersAreRaisedFromTheDefault() throws {
        let (server, _) = try group("127.0.0.1", count: 1)
        let sizes = server[0].bufferSizes
        XCTAssertGreaterThan(sizes.receive, 212_992, "the usual default")
        XCTAssertGreaterThan(sizes.send, 212_992)
    }

    func testBatchSizesAreBounded() {
        func makes(_ capacity: Int, _ slotSize: Int) -> Bool {
            guard let batch = DatagramBatch(capacity: capacity, slotSize: slotSize) else { return false }
            XCTAssertEqual(batch.slot(capacity - 1).count, slotSize)
            return true
        }
        XCTAssertFalse(makes(0, 1500))
        XCTAssertFalse(makes(1025, 1500))
        XCTAssertFalse(makes(1, 0))
        XCTAssertFalse(makes(1, 65_537))
        XCTAssertTrue(makes(16, 65_536), "64 KiB slots, for coalesced receives")
    }
}
