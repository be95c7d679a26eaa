// Packet protection beyond the RFC vectors: every suite both ways, key
// updates (RFC 9001 §6), short packets (§5.4.2) and reserved bits (RFC
// 9000 §17.2).

import XCTest
import Core
@testable import QUIC

final class PacketProtectionTests: XCTestCase {
    private let secret32 = [UInt8](repeating: 0x42, count: 32)
    private let secret48 = [UInt8](repeating: 0x43, count: 48)

    private func protect(_ keys: PacketKeys, pn: UInt64, payload: [UInt8], keyPhase: Bool = false) -> [UInt8] {
        let id = cid("0102030405060708")
        var packet = [UInt8](repeating: 0, count: 1 + 8 + 2 + payload.count + 16)
        packet.withUnsafeMutableBytes { out in
            let h = PacketHeaderEncoder.encodeShort(destinationID: id, keyPhase: keyPhase, packetNumber: pn, packetNumberLength: 2, into: out)
            out.baseAddress!.advanced(by: h).copyMemory(from: payload, byteCount: payload.count)
            PacketProtection.seal(out, headerLength: h, payloadLength: payload.count, packetNumber: pn, keys: keys)
        }
        return packet
    }

    func testEverySuiteSealsAndOpens() throws {
        for (suite, secret) in [(CipherSuite.aes128GCM, secret32), (.aes256GCM, secret48), (.chacha20Poly1305, secret32)] {
            let keys = PacketKeys(suite: suite, secret: secret, version: .v1)
            let payload = bytes("frames for \(suite)")
            var packet = protect(keys, pn: 300, payload: payload)
            let opened = try packet.withUnsafeMutableBytes {
                try PacketProtection.open($0, packetNumberOffset: 9, largestReceived: 299, keys: keys)
            }
            XCTAssertEqual(opened.header.packetNumber, 300, "\(suite)")
            XCTAssertEqual(slice(packet, opened.payload), payload, "\(suite)")
        }
    }

    /// §6: a key update derives new AEAD keys with "quic ku" and keeps the
    /// header protection key; the key phase bit is readable before choosing
    /// keys, and the old keys no longer authenticate.
    func testKeyUpdateKeepsHeaderProtectionAndChangesTheAEAD() throws {
        let current = PacketKeys(suite: .aes128GCM, secret: secret32, version: .v1)
        let next = current.nextGeneration()
        XCTAssertTrue(next.headerProtection === current.headerProtection)
        XCTAssertNotEqual(next.aead.iv, current.aead.iv)
        XCTAssertEqual(next.secret, HKDF.expandLabel(.sha256, secret: secret32, label: "quic ku", length: 32))
        var packet = protect(next, pn: 5, payload: bytes("after the update"), keyPhase: true)
        var copy = packet
        let header = try packet.withUnsafeMutableBytes {
            try PacketProtection.removeHeaderProtection($0, packetNumberOffset: 9, largestReceived: 4, key: current.headerProtection)
        }
        XCTAssertTrue(header.keyPhase)
        XCTAssertEqual(header.packetNumber, 5)
        XCTAssertNoThrow(try packet.withUnsafeMutableBytes { try PacketProtection.decryptPayload($0, header: header, key: next.aead) })
        _ = try copy.withUnsafeMutableBytes {
            try PacketProtection.removeHeaderProtection($0, packetNumberOffset: 9, largestReceived: 4, key: current.headerProtection)
        }
        XCTAssertThrowsError(try copy.withUnsafeMutableBytes { try PacketProtection.decryptPayload($0, header: header, key: current.aead) }) {
            XCTAssertEqual($0 as? PacketDrop, .decryptionFailed)
        }
    }

    /// §5.4.2: too short to sample → dropped, not a crash.
    func testPacketTooShortForTheSampleIsDropped() {
        let keys = PacketKeys(suite: .aes128GCM, secret: secret32, version: .v1)
        for length in 0..<(9 + 4 + 16) {
            var packet = [UInt8](repeating: 0x40, count: length)
            XCTAssertThrowsError(try packet.withUnsafeMutableBytes {
                try PacketProtection.open($0, packetNumberOffset: 9, largestReceived: nil, keys: keys)
            }) { XCTAssertEqual($0 as? PacketProtection.OpenError, .dropped(.sampleTooShort)) }
        }
    }

    /// RFC 9000 §17.3.1: reserved bits set once both protections are off is
    /// a PROTOCOL_VIOLATION, not a drop.
    func testReservedBitsSetIsAProtocolViolation() {
        let keys = PacketKeys(suite: .chacha20Poly1305, secret: secret32, version: .v2)
        let payload = bytes("0123456789")
        var packet = [UInt8](repeating: 0, count: 1 + 8 + 2 + payload.count + 16)
        packet.withUnsafeMutableBytes { out in
            var h = PacketHeaderEncoder.encodeShort(destinationID: cid("0102030405060708"), keyPhase: false, packetNumber: 1,
                                                    packetNumberLength: 2, into: out)
            out[0] |= 0x18  // reserved bits, set before sealing so the AEAD covers them
            out.baseAddress!.advanced(by: h).copyMemory(from: payload, byteCount: payload.count)
            h = PacketProtection.seal(out, headerLength: h, payloadLength: payload.count, packetNumber: 1, keys: keys)
        }
        XCTAssertThrowsError(try packet.withUnsafeMutableBytes {
            try PacketProtection.open($0, packetNumberOffset: 9, largestReceived: 0, keys: keys)
        }) { XCTAssertEqual($0 as? PacketProtection.OpenError, .connection(.reservedBitsSet)) }
    }

    func testWrongKeyLengthsAreRefused() {
        XCTAssertNil(AEADKey(suite: .aes256GCM, key: [UInt8](repeating: 0, count: 16), iv: [UInt8](repeating: 0, count: 12)))
        XCTAssertNil(AEADKey(suite: .aes128GCM, key: [UInt8](repeating: 0, count: 16), iv: [UInt8](repeating: 0, count: 8)))
        XCTAssertNil(HeaderProtectionKey(suite: .chacha20Poly1305, key: [UInt8](repeating: 0, count: 16)))
    }

    /// AES-256-GCM derives with SHA-384 (TLS_AES_256_GCM_SHA384).
    func testSuiteHashes() {
        XCTAssertEqual(CipherSuite.aes256GCM.hash, .sha384)
        XCTAssertEqual(CipherSuite.aes128GCM.hash, .sha256)
        XCTAssertEqual(CipherSuite.chacha20Poly1305.keyLength, 32)
    }
}
