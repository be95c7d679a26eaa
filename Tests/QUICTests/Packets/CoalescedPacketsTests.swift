// Coalesced packets (RFC 9000 §12.2).

import XCTest
import Core
@testable import QUIC

final class CoalescedPacketsTests: XCTestCase {
    private func items(_ d: [UInt8], idLength: Int = 2) -> [CoalescedPackets.Item] {
        d.withUnsafeBytes { b in
            var p = CoalescedPackets(b, shortHeaderIDLength: idLength)
            var out: [CoalescedPackets.Item] = []
            while let i = p.next() { out.append(i) }
            XCTAssertEqual(p.remaining, 0)
            return out
        }
    }

    private func longPacket(_ type: LongPacketType, dcid: String = "0102", payload: Int = 20) -> [UInt8] {
        let token: [UInt8] = []
        let header = token.withUnsafeBytes { t in
            encoded(size: PacketHeaderEncoder.longHeaderSize(destinationID: cid(dcid), sourceID: .empty,
                                                             tokenLength: type == .initial ? 0 : nil,
                                                             packetNumberLength: 1, payloadLength: payload)) {
                PacketHeaderEncoder.encodeLong(type: type, version: .v1, destinationID: cid(dcid), sourceID: .empty,
                                               token: type == .initial ? t : nil, packetNumber: 0, packetNumberLength: 1,
                                               payloadLength: payload, into: $0)
            }
        }
        return header + [UInt8](repeating: 0x55, count: payload + 16)
    }

    /// Initial + Handshake + 1-RTT in one datagram: split by Length, the
    /// short header takes the rest.
    func testInitialHandshakeAndShortHeaderSplit() {
        let initial = longPacket(.initial)
        let handshake = longPacket(.handshake, payload: 5)
        let short = hex("40 0102 00") + [UInt8](repeating: 0x66, count: 30)
        let all = items(initial + handshake + short)
        XCTAssertEqual(all.count, 3)
        XCTAssertEqual(all.map { item -> ByteSpan in
            if case .packet(let h) = item { return h.packet }
            return .empty
        }, [ByteSpan(offset: 0, length: initial.count), ByteSpan(offset: initial.count, length: handshake.count),
            ByteSpan(offset: initial.count + handshake.count, length: short.count)])
    }

    /// A bad packet after a good one drops only the rest.
    func testGarbageAfterAPacketDropsOnlyTheRest() {
        let initial = longPacket(.initial)
        let all = items(initial + hex("c0 00000001 15"))
        XCTAssertEqual(all.count, 2)
        guard case .packet = all[0], case .dropped(let why, let span) = all[1] else { return XCTFail("\(all)") }
        XCTAssertEqual(why, .truncated)
        XCTAssertEqual(span, ByteSpan(offset: initial.count, length: 6))
    }

    /// "Receivers SHOULD ignore any subsequent packets with a different
    /// Destination Connection ID than the first packet in the datagram."
    func testDifferentDestinationIDIsDroppedButTheNextStillRead() {
        let a = longPacket(.initial)
        let b = longPacket(.handshake, dcid: "0909")
        let c = longPacket(.handshake)
        let all = items(a + b + c)
        XCTAssertEqual(all.count, 3)
        XCTAssertEqual(all[1], .dropped(.differentDestinationID, ByteSpan(offset: a.count, length: b.count)))
        guard case .packet = all[2] else { return XCTFail() }
    }

    /// Split at every byte: the first part alone never yields a packet that
    /// runs past it, and the spans always stay inside the datagram.
    func testEveryPrefixKeepsSpansInside() {
        let d = longPacket(.initial) + longPacket(.handshake, payload: 3)
        for cut in 0...d.count {
            for item in items(Array(d[..<cut])) {
                switch item {
                case .packet(let h): XCTAssertLessThanOrEqual(h.packet.end, cut)
                case .dropped(_, let s): XCTAssertLessThanOrEqual(s.end, cut)
                }
            }
        }
    }
}
