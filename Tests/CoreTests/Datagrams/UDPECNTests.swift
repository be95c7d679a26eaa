import CSys
import XCTest

import Core

/// The ECN field on real loopback sockets (RFC 9000 §13.4, RFC 3168 §5): a
/// datagram sent with a codepoint arrives with it (IPv4, IPv6, and IPv4
/// through a dual-stack socket), an unmarked one arrives Not-ECT, and a
/// segmented run breaks where the codepoint changes (one control message
/// marks a whole run), each part arriving with its own.
final class UDPECNTests: XCTestCase {
    private var descriptors: [Int32] = []

    override func tearDown() {
        for fd in descriptors { _ = csys_close(fd) }
        descriptors = []
    }

    private func socket(_ host: String) throws -> UDPSocket {
        var err = [CChar](repeating: 0, count: 256)
        let tcp = csys_listen_tcp(host, 0, 16, &err, 256)
        guard tcp >= 0 else { throw XCTSkip("cannot bind \(host) here") }
        descriptors.append(tcp)
        guard case .success(let (fds, _)) = UDPSocket.bindGroup(like: tcp, port: 0, count: 1) else {
            XCTFail("bind")
            throw XCTSkip("no UDP socket")
        }
        descriptors += fds
        return UDPSocket(fd: fds[0], index: 0)!
    }

    /// Sends one datagram per codepoint (payload: its index) from `from` to
    /// `peer` and returns (payload byte, codepoint) as they arrived at `to`.
    private func roundTrip(_ marks: [ECNCodepoint], from: UDPSocket, to: UDPSocket, peer: SocketAddress,
                           segmented: Bool = false, size: Int = 1) -> [(UInt8, ECNCodepoint)] {
        var batch = DatagramBatch(capacity: marks.count, slotSize: 1500)!
        batch.usesSegmentation = segmented
        for (i, mark) in marks.enumerated() {
            for j in 0..<size { batch.slot(i)[j] = UInt8(i) }
            batch.setOutgoing(i, length: size, path: DatagramPath(peer: peer, local: SocketAddress(family: peer.family, port: 0, high: 0, low: 0)),
                              ecn: mark)
        }
        XCTAssertEqual(from.send(&batch, 0..<marks.count), marks.count)
        var rx = DatagramBatch(capacity: 16, slotSize: 2048)!
        var got: [(UInt8, ECNCodepoint)] = []
        for _ in 0..<50 where got.count < marks.count {
            let n = to.receive(into: &rx)!
            for i in 0..<n {
                for d in rx.datagrams(i) { got.append((d[0], rx.ecn(i))) }
            }
            if n == 0 { _ = csys_poll_one(to.fd, 1, 20) }
        }
        return got
    }

    private let all: [ECNCodepoint] = [.notECT, .ect0, .ect1, .ce, .ect0]

    func testEachCodepointArrivesOverIPv4() throws {
        let a = try socket("127.0.0.1"), b = try socket("127.0.0.1")
        let got = roundTrip(all, from: a, to: b, peer: .ipv4(0x7F00_0001, port: b.port))
        XCTAssertEqual(got.map(\.0), [0, 1, 2, 3, 4])
        XCTAssertEqual(got.map(\.1), all)
    }

    func testEachCodepointArrivesOverIPv6() throws {
        let a = try socket("::1"), b = try socket("::1")
        let got = roundTrip(all, from: a, to: b, peer: SocketAddress(family: .ipv6, port: b.port, high: 0, low: 1))
        XCTAssertEqual(got.map(\.1), all)
    }

    /// An IPv4 peer of a dual-stack socket: the IPv4 stack sends (IP_TOS,
    /// not IPV6_TCLASS) and the field arrives as IP_TOS on receive.
    func testIPv4PeersOfADualStackSocket() throws {
        let server = try socket("::"), client = try socket("127.0.0.1")
        let toServer = roundTrip(all, from: client, to: server, peer: .ipv4(0x7F00_0001, port: server.port))
        XCTAssertEqual(toServer.map(\.1), all, "received through the dual-stack socket")
        let toClient = roundTrip(all, from: server, to: client, peer: .ipv4(0x7F00_0001, port: client.port))
        XCTAssertEqual(toClient.map(\.1), all, "sent through the dual-stack socket")
    }

    /// A GSO run shares one control message: runs break at a new codepoint.
    func testSegmentedRunsBreakWhereTheCodepointChanges() throws {
        let a = try socket("127.0.0.1"), b = try socket("127.0.0.1")
        guard a.supportsSegmentation else { throw XCTSkip("no UDP_SEGMENT in this kernel") }
        let marks: [ECNCodepoint] = [.ect0, .ect0, .ect0, .notECT, .notECT, .ce, .ce]
        let got = roundTrip(marks, from: a, to: b, peer: .ipv4(0x7F00_0001, port: b.port), segmented: true, size: 100)
        XCTAssertEqual(got.map(\.0), [0, 1, 2, 3, 4, 5, 6])
        XCTAssertEqual(got.map(\.1), marks)
    }

    func testTheCodepointIsTheLowTwoBits() {
        XCTAssertEqual(ECNCodepoint.allCases.map(\.rawValue), [0, 1, 2, 3])
        XCTAssertEqual(ECNCodepoint(field: 0xfe), .ect0)
    }
}
