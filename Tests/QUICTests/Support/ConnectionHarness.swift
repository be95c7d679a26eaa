// An endpoint, a test client and a fake clock wired together: datagrams
// go from the client to the endpoint and back through in-memory calls, and
// a test can drop, reorder or rewrite any of them.

import XCTest
import Core
@testable import QUIC

final class ConnectionHarness {
    var now = Instant(nanoseconds: 1_000_000_000_000)
    let ids = TestConnectionIDs()
    let endpoint: QUICEndpoint
    let client: TestClient
    var configuration: QUICConfiguration
    let path = DatagramPath(peer: .ipv4(0x0a00_0001, port: 50_000), local: .ipv4(0x0a00_0002, port: 443))
    /// Every event, in order, with the connection it came from.
    private(set) var events: [QUICEvent] = []
    private(set) var connection: QUICConnection?
    /// Client crypto offsets per space (what it sent so far).
    var clientCryptoOffset: [UInt64] = [0, 0, 0]

    init(configuration: QUICConfiguration = QUICConfiguration(), client: TestClient = TestClient()) {
        self.configuration = configuration
        self.client = client
        let sizeBox = Box()
        self.sizeBox = sizeBox
        endpoint = QUICEndpoint(configuration: configuration, connectionIDs: ids) { tp in
            let h = FakeCryptoHandshake(serverTransportParameters: tp)
            h.certificateSize = sizeBox.certificateSize
            h.suite = sizeBox.suite
            sizeBox.made.append(h)
            return h
        }
    }

    private final class Box {
        var certificateSize = 900
        var suite = CipherSuite.aes128GCM
        var made: [FakeCryptoHandshake] = []
    }
    private let sizeBox: Box

    var handshake: FakeCryptoHandshake? { sizeBox.made.last }

    func setCertificateSize(_ n: Int) { sizeBox.certificateSize = n }
    func setSuite(_ suite: CipherSuite) { sizeBox.suite = suite }

    /// Feeds one datagram to the endpoint and collects the events.
    func deliver(_ datagram: [UInt8], path: DatagramPath? = nil) {
        var d = datagram
        d.withUnsafeMutableBytes { endpoint.receive($0, path: path ?? self.path, now: now) }
        collectEvents()
    }

    func collectEvents() {
        while let (c, e) = endpoint.nextEvent() {
            connection = c
            events.append(e)
        }
    }

    /// Takes every datagram the endpoint will send now.
    func drain(limit: Int = 1000) -> [(bytes: [UInt8], path: DatagramPath)] {
        var out: [(bytes: [UInt8], path: DatagramPath)] = []
        var buffer = [UInt8](repeating: 0, count: 1500)
        while out.count < limit {
            let r = buffer.withUnsafeMutableBytes { endpoint.nextDatagram(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<configuration.maxUDPPayloadSize]), now: now) }
            guard let r else { break }
            out.append((Array(buffer[0..<r.length]), r.path))
        }
        collectEvents()
        return out
    }

    /// Drains and decrypts what the client can read.
    func exchange() -> [ReceivedPacket] {
        drain().flatMap { client.read($0.bytes) }
    }

    func advance(nanoseconds: Int64) {
        now = Instant(nanoseconds: now.nanoseconds + nanoseconds)
        endpoint.expire(now: now)
        collectEvents()
    }

    func advance(toDeadline: Void = ()) {
        guard let d = endpoint.nextDeadline else { return }
        if d > now { now = d }
        endpoint.expire(now: now)
        collectEvents()
    }

    /// Drops the harness's reference to the connection (the endpoint may
    /// still hold it until it is closed and drained).
    func forgetConnection() { connection = nil }

    func takeEvents() -> [QUICEvent] {
        defer { events.removeAll() }
        return events
    }

    // MARK: scripted handshake

    /// Client Initial with the ClientHello; returns what the server answered.
    @discardableResult
    func sendClientHello() -> [ReceivedPacket] {
        let hello = client.clientHello
        deliver(client.initialDatagram(Frames.crypto(hello)))
        clientCryptoOffset[0] = UInt64(hello.count)
        client.installHandshakeKeys()
        return exchange()
    }

    /// The client's Finished in a Handshake packet (with ACKs of what it got),
    /// after which the server completes; returns the server's answer.
    @discardableResult
    func sendClientFinished(acking received: [ReceivedPacket]) -> [ReceivedPacket] {
        let finished = FakeTLS.message(FakeTLS.finished, [UInt8](repeating: 0xcf, count: 32))
        var packets: [[UInt8]] = []
        let initialPNs = received.filter { $0.space == .initial }.map(\.packetNumber)
        if let max = initialPNs.max(), let min = initialPNs.min() {
            packets.append(client.packet(.initial, Frames.ack([min...max])))
        }
        let handshakePNs = received.filter { $0.space == .handshake }.map(\.packetNumber)
        var frames = Frames.crypto(offset: clientCryptoOffset[1], finished)
        if let max = handshakePNs.max(), let min = handshakePNs.min() { frames = Frames.ack([min...max]) + frames }
        packets.append(client.packet(.handshake, frames))
        clientCryptoOffset[1] += UInt64(finished.count)
        client.installApplicationKeys()
        deliver(packets.reduce([], +))
        return exchange()
    }

    /// Runs the handshake to completion; returns the server's 1-RTT answer
    /// (HANDSHAKE_DONE etc.).
    @discardableResult
    func completeHandshake() -> [ReceivedPacket] {
        let flight = sendClientHello()
        return sendClientFinished(acking: flight)
    }

    /// A 1-RTT datagram with `frames`.
    func send1RTT(_ frames: [UInt8], packetNumber: UInt64? = nil) {
        deliver(client.packet(.application, frames, packetNumber: packetNumber))
    }

    /// ACKs every 1-RTT packet in `packets`.
    func ack1RTT(_ packets: [ReceivedPacket]) {
        let pns = packets.filter { $0.space == .application }.map(\.packetNumber).sorted(by: >)
        guard !pns.isEmpty else { return }
        var ranges: [ClosedRange<UInt64>] = []
        for pn in pns {
            if let last = ranges.last, last.lowerBound == pn + 1 {
                ranges[ranges.count - 1] = pn...last.upperBound
            } else {
                ranges.append(pn...pn)
            }
        }
        send1RTT(Frames.ack(ranges))
    }
}

extension Array where Element == ReceivedPacket {
    var allFrames: [Frame] { flatMap(\.frames) }

    /// Stream data received per stream, in arrival order, with FIN flags.
    func streamFrames(_ id: UInt64) -> [(offset: UInt64, data: [UInt8], fin: Bool)] {
        flatMap { p in
            p.frames.compactMap { f -> (UInt64, [UInt8], Bool)? in
                guard case .stream(let s) = f, s.streamID == id else { return nil }
                return (s.offset, p.slice(s.data), s.fin)
            }
        }
    }

    func crypto(_ space: PacketNumberSpace) -> [(offset: UInt64, data: [UInt8])] {
        filter { $0.space == space }.flatMap { p in
            p.frames.compactMap { f -> (UInt64, [UInt8])? in
                guard case .crypto(let c) = f else { return nil }
                return (c.offset, p.slice(c.data))
            }
        }
    }

    func contains(_ predicate: (Frame) -> Bool) -> Bool { allFrames.contains(where: predicate) }
}
