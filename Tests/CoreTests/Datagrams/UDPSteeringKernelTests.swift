import CSys
import XCTest

import Core

/// The steering program attached to a real SO_REUSEPORT group: the kernel,
/// not an interpreter, decides which socket each crafted datagram reaches.
final class UDPSteeringKernelTests: XCTestCase {
    private var descriptors: [Int32] = []

    override func tearDown() {
        for fd in descriptors { _ = csys_close(fd) }
        descriptors = []
    }

    private func bind(count: Int) throws -> (sockets: [UDPSocket], port: UInt16) {
        var err = [CChar](repeating: 0, count: 256)
        let tcp = csys_listen_tcp("127.0.0.1", 0, 16, &err, 256)
        XCTAssertGreaterThanOrEqual(tcp, 0)
        descriptors.append(tcp)
        guard case .success(let (fds, port)) = UDPSocket.bindGroup(like: tcp, port: 0, count: count) else {
            throw XCTSkip("cannot bind a UDP group")
        }
        descriptors += fds
        return (fds.enumerated().map { UDPSocket(fd: $1, index: $0)! }, UInt16(port))
    }

    private func attach(_ socket: UDPSocket, size: Int, newConnections: [Int]) throws {
        let program = ReuseportSteering.program(groupSize: size, newConnectionSockets: newConnections)!
        let rc = program.withUnsafeBytes { csys_udp_attach_steering(socket.fd, $0.baseAddress, Int32(program.count)) }
        XCTAssertEqual(MemoryLayout<ReuseportSteering.Instruction>.stride, 8, "struct sock_filter")
        if rc != 0 { throw XCTSkip("SO_ATTACH_REUSEPORT_CBPF refused (errno \(csys_errno()))") }
    }

    /// Which socket of the group each datagram reached, in sending order.
    private func deliver(_ datagrams: [[UInt8]], to group: [UDPSocket], port: UInt16) throws -> [Int] {
        let (client, _) = try bind(count: 1)
        var tx = DatagramBatch(capacity: datagrams.count, slotSize: 1500)!
        let path = DatagramPath(peer: .ipv4(0x7F00_0001, port: port), local: .ipv4(0x7F00_0001, port: 0))
        for (i, d) in datagrams.enumerated() {
            // The first byte after the header numbers the datagram.
            let slot = tx.slot(i)
            for (j, b) in d.enumerated() { slot[j] = b }
            tx.setOutgoing(i, length: d.count, path: path)
        }
        XCTAssertEqual(client[0].send(&tx, 0..<datagrams.count), datagrams.count)
        var where_: [Int: Int] = [:]  // datagram number -> socket
        var rx = DatagramBatch(capacity: 64, slotSize: 1500)!
        for _ in 0..<100 where where_.count < datagrams.count {
            for s in group {
                let n = s.receive(into: &rx)!
                for i in 0..<n { where_[Int(rx.bytes(i).last!)] = s.index }
            }
            if where_.count < datagrams.count { csys_sleep_milliseconds(5) }
        }
        return (0..<datagrams.count).map { where_[$0] ?? -1 }
    }

    private func ourID(_ index: Int, random: UInt64) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 8)
        out.withUnsafeMutableBytes { QUICConnectionIDLayout.write(socketIndex: index, random: random, into: $0) }
        return out
    }

    func testTheKernelFollowsTheConnectionIDAndSpreadsNewConnectionsOverTheCurrentSockets() throws {
        let (group, port) = try bind(count: 6)
        // Sockets 0-2: an old generation; 3-5: the one taking new connections.
        try attach(group[0], size: 6, newConnections: [3, 4, 5])
        var datagrams: [[UInt8]] = []
        var expected: [Int] = []
        for n in 0..<24 {
            let k = n % 6
            let number = UInt8(datagrams.count)
            if n % 2 == 0 {
                datagrams.append([0x41] + ourID(k, random: UInt64(n) &* 0x9E37_79B9_7F4A_7C15) + [0, 0, number])
            } else {
                datagrams.append([0xC0, 0, 0, 0, 1, 8] + ourID(k, random: UInt64(n)) + [0, 0, number])
            }
            expected.append(k)
        }
        // Client Initials with DCIDs of their own: only sockets 3-5.
        var initialSockets: Set<Int> = []
        for n in 0..<30 {
            let number = UInt8(datagrams.count)
            let dcid: [UInt8] = [0xF0, UInt8(n), UInt8(truncatingIfNeeded: n * 7), 2, 1, 2, 3, 4, 5, 6]
            datagrams.append([0xC0, 0, 0, 0, 1, UInt8(dcid.count)] + dcid + [UInt8](repeating: 0, count: 20) + [number])
            let word = UInt32(dcid[0]) << 24 | UInt32(dcid[1]) << 16 | UInt32(dcid[2]) << 8 | UInt32(dcid[3])
            expected.append(3 + Int(word % 3))
            initialSockets.insert(3 + Int(word % 3))
        }
        XCTAssertEqual(initialSockets.count, 3)
        XCTAssertEqual(try deliver(datagrams, to: group, port: port), expected)
    }

    func testReattachingMovesNewConnectionsButNotEstablishedOnes() throws {
        let (group, port) = try bind(count: 4)
        try attach(group[0], size: 4, newConnections: [0, 1])
        let initial: [UInt8] = [0xC0, 0, 0, 0, 1, 8, 0xFF, 0, 0, 2, 9, 9, 9, 9, 0]  // word 0xFF000002: 0 % 2
        let established = [0x41] + ourID(1, random: 5) + [1]
        XCTAssertEqual(try deliver([initial, established], to: group, port: port), [0, 1])
        // A SIGHUP's new generation: sockets 2 and 3 take new connections.
        try attach(group[3], size: 4, newConnections: [2, 3])
        XCTAssertEqual(try deliver([initial, established], to: group, port: port), [2, 1])
    }
}
