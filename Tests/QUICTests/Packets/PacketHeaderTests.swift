// Packet headers (RFC 9000 §17, RFC 8999): each kind parsed, and hostile
// headers dropped with their reason.

import XCTest
import Core
@testable import QUIC

final class PacketHeaderTests: XCTestCase {
    private func parse(_ d: [UInt8], idLength: Int = 8) throws -> PacketHeader {
        let r: Result<PacketHeader, PacketDrop> = d.withUnsafeBytes { b in
            do { return .success(try PacketHeader.decode(b, at: 0, shortHeaderIDLength: idLength)) } catch { return .failure(error as! PacketDrop) }
        }
        return try r.get()
    }

    private func assertDropped(_ d: [UInt8], _ expected: PacketDrop, idLength: Int = 8, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try parse(d, idLength: idLength), file: file, line: line) {
            XCTAssertEqual($0 as? PacketDrop, expected, file: file, line: line)
        }
    }

    /// An Initial with a token and a Handshake header (§17.2.2, §17.2.4).
    func testInitialAndHandshakeFields() throws {
        let token = bytes("tok")
        let initial = token.withUnsafeBytes { t in
            encoded(size: PacketHeaderEncoder.longHeaderSize(destinationID: cid("0102"), sourceID: cid("03"), tokenLength: 3,
                                                             packetNumberLength: 2, payloadLength: 20)) {
                PacketHeaderEncoder.encodeLong(type: .initial, version: .v1, destinationID: cid("0102"), sourceID: cid("03"),
                                               token: t, packetNumber: 7, packetNumberLength: 2, payloadLength: 20, into: $0)
            }
        }
        XCTAssertEqual(initial, hex("c1 00000001 02 0102 01 03 03") + token + hex("26 0007"))  // Length 38 = 2 + 20 + 16
        let datagram = initial + [UInt8](repeating: 0xaa, count: 36)
        guard case .long(let h) = try parse(datagram) else { return XCTFail() }
        XCTAssertEqual(h.type, .initial)
        XCTAssertEqual(h.version, .v1)
        XCTAssertEqual(h.destinationID, cid("0102"))
        XCTAssertEqual(h.sourceID, cid("03"))
        XCTAssertEqual(slice(datagram, h.token), token)
        XCTAssertEqual(h.packetNumberOffset, initial.count - 2)
        XCTAssertEqual(h.packet, ByteSpan(offset: 0, length: initial.count - 2 + 2 + 20 + 16))

        let handshake = encoded(size: PacketHeaderEncoder.longHeaderSize(destinationID: .empty, sourceID: .empty, tokenLength: nil,
                                                                        packetNumberLength: 1, payloadLength: 3)) {
            PacketHeaderEncoder.encodeLong(type: .handshake, version: .v2, destinationID: .empty, sourceID: .empty,
                                           packetNumber: 1, packetNumberLength: 1, payloadLength: 3, into: $0)
        }
        // v2 Handshake type bits are 0b11 (RFC 9369 §3.2).
        XCTAssertEqual(handshake, hex("f0 6b3343cf 00 00 14 01"))
        guard case .long(let hs) = try parse(handshake + [UInt8](repeating: 0, count: 19)) else { return XCTFail() }
        XCTAssertEqual(hs.type, .handshake)
        XCTAssertEqual(hs.version, .v2)
    }

    func testZeroRTTTypeBitsInBothVersions() throws {
        guard case .long(let v1) = try parse(hex("d0 00000001 00 00 01 00")) else { return XCTFail() }
        XCTAssertEqual(v1.type, .zeroRTT)
        guard case .long(let v2) = try parse(hex("e0 6b3343cf 00 00 01 00")) else { return XCTFail() }
        XCTAssertEqual(v2.type, .zeroRTT)
        for version in [QUICVersion.v1, .v2] {
            for type in LongPacketType.allCases { XCTAssertEqual(version.longPacketType(bits: version.typeBits(type)), type) }
        }
    }

    func testShortHeaderTakesTheRestOfTheDatagram() throws {
        let d = hex("41 0102030405060708 00") + [UInt8](repeating: 0, count: 20)
        guard case .short(let h) = try parse(d) else { return XCTFail() }
        XCTAssertEqual(h.destinationID, cid("0102030405060708"))
        XCTAssertEqual(h.packetNumberOffset, 9)
        XCTAssertEqual(h.packet, ByteSpan(offset: 0, length: d.count))
    }

    /// §17.2.1: Version 0; connection IDs are echoed spans.
    func testVersionNegotiationPacket() throws {
        let d = hex("80 00000000 01 aa 02 bbcc 00000001 6b3343cf")
        guard case .versionNegotiation(let h) = try parse(d) else { return XCTFail() }
        XCTAssertEqual(slice(d, h.destinationID), [0xaa])
        XCTAssertEqual(slice(d, h.sourceID), [0xbb, 0xcc])
        XCTAssertEqual(h.versionCount, 2)
        XCTAssertEqual(d.withUnsafeBytes { h.version(1, in: $0) }, .v2)
        assertDropped(hex("80 00000000 00 00 000000"), .badVersionList)
        assertDropped(hex("80 00000000 00 00"), .badVersionList)
    }

    /// §6.1, §17.2.1: an unknown version is answered with our versions, the
    /// connection IDs swapped and echoed — even 255-byte ones (RFC 8999).
    func testUnknownVersionIsAnsweredWithVersionNegotiation() throws {
        let longID = [UInt8](repeating: 0x11, count: 255)
        let d = hex("c0 1a2a3a4a") + [255] + longID + hex("02 abcd") + [UInt8](repeating: 0, count: 1200)
        guard case .unsupportedVersion(let h) = try parse(d) else { return XCTFail() }
        XCTAssertEqual(h.version, QUICVersion(rawValue: 0x1a2a_3a4a))
        XCTAssertTrue(h.version.isReservedForGreasing)
        XCTAssertTrue(VersionNegotiation.shouldAnswerUnsupportedVersion(datagramLength: d.count))
        XCTAssertFalse(VersionNegotiation.shouldAnswerUnsupportedVersion(datagramLength: 1199))
        let answer = d.withUnsafeBytes { src in
            encoded(size: VersionNegotiation.size(for: h)) { VersionNegotiation.encode(answering: h, in: src, unusedBits: 0x15, into: $0) }
        }
        XCTAssertEqual(answer, hex("d5 00000000 02 abcd") + [255] + longID + hex("00000001 6b3343cf"))
        guard case .versionNegotiation(let back) = try parse(answer) else { return XCTFail() }
        XCTAssertEqual(back.versionCount, 2)
    }

    func testHostileHeadersAreDropped() {
        // §17.2: connection IDs of 21 bytes in v1 and v2.
        assertDropped(hex("c0 00000001 15") + [UInt8](repeating: 1, count: 21) + hex("00 00 00"), .connectionIDTooLong)
        assertDropped(hex("c0 6b3343cf 00 15") + [UInt8](repeating: 1, count: 21) + hex("00 00"), .connectionIDTooLong)
        // Fixed bit 0.
        assertDropped(hex("80 00000001 00 00 00 01 00"), .fixedBitZero)
        assertDropped(hex("01 0102030405060708 00"), .fixedBitZero)
        // Length past the datagram (§12.2).
        assertDropped(hex("c0 00000001 00 00 00 05 0000"), .lengthPastDatagram)
        // Token length past the datagram.
        assertDropped(hex("c0 00000001 00 00 05 00"), .truncated)
        // A varint Length cut off.
        assertDropped(hex("c0 00000001 00 00 00 80"), .truncated)
        // Short header shorter than our connection IDs.
        assertDropped(hex("40 010203"), .truncated)
        // Retry without a whole tag.
        assertDropped(hex("f0 00000001 00 00") + [UInt8](repeating: 0, count: 15), .truncated)
        // An empty datagram.
        assertDropped([], .truncated)
    }

    /// Every prefix of a valid long header is dropped as truncated or as a
    /// Length past the datagram, never misread.
    func testEveryTruncationOfALongHeader() {
        let d = hex("c3 00000001 08 8394c8f03e515708 00 00 449e") + [UInt8](repeating: 0, count: 1182)
        for cut in 0..<(d.count) {
            XCTAssertThrowsError(try parse(Array(d[..<cut])), "cut \(cut)")
        }
        XCTAssertNoThrow(try parse(d))
    }
}
