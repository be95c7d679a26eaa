// RFC 9001 Appendix A: sample packet protection, byte for byte.
// https://www.rfc-editor.org/rfc/rfc9001#appendix-A
// The client's Destination Connection ID is 0x8394c8f03e515708 throughout.

import XCTest
import Core
@testable import QUIC

final class RFC9001AppendixATests: XCTestCase {
    static let dcid = cid("8394c8f03e515708")

    /// A.1 Keys: initial, client and server secrets, key, iv, hp.
    func testA1Keys() {
        let initial = Self.dcid.withUnsafeBytes { HKDF.extract(.sha256, salt: InitialKeys.saltV1, inputKeyingMaterial: $0) }
        XCTAssertEqual(initial, hex("7db5df06e7a69e432496adedb0085192 3595221596ae2ae9fb8115c1e9ed0a44"))
        let (client, server) = InitialKeys.secrets(destinationID: Self.dcid, version: .v1)
        XCTAssertEqual(client, hex("c00cf151ca5be075ed0ebfb5c80323c4 2d6b7db67881289af4008f1f6c357aea"))
        XCTAssertEqual(server, hex("3c199828fd139efd216c155ad844cc81 fb82fa8d7446fa7d78be803acdda951b"))
        // Client key, iv, hp.
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: client, label: "quic key", length: 16), hex("1f369613dd76d5467730efcbe3b1a22d"))
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: client, label: "quic iv", length: 12), hex("fa044b2f42a3fd3b46fb255c"))
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: client, label: "quic hp", length: 16), hex("9f50449e04a0e810283a1e9933adedd2"))
        // Server key, iv, hp.
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: server, label: "quic key", length: 16), hex("cf3a5331653c364c88f0f379b6067e37"))
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: server, label: "quic iv", length: 12), hex("0ac1493ca1905853b0bba03e"))
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: server, label: "quic hp", length: 16), hex("c206b8d9b9f0f37644430b490eeaa314"))
        let keys = InitialKeys.derive(destinationID: Self.dcid, version: .v1)
        XCTAssertEqual(keys.client.aead.iv, hex("fa044b2f42a3fd3b46fb255c"))
        XCTAssertEqual(keys.server.aead.iv, hex("0ac1493ca1905853b0bba03e"))
    }

    /// A.2 Client Initial: protect the CRYPTO frame padded to 1162 bytes
    /// under the given header and compare every byte; then unprotect it.
    func testA2ClientInitial() throws {
        let header = hex("c300000001088394c8f03e5157080000449e00000002")
        let payload = Self.clientCrypto + [UInt8](repeating: 0, count: 1162 - Self.clientCrypto.count)
        let keys = InitialKeys.derive(destinationID: Self.dcid, version: .v1).client
        // The header our encoder writes is the RFC's.
        let ours = encoded(size: header.count) {
            PacketHeaderEncoder.encodeLong(type: .initial, version: .v1, destinationID: Self.dcid, sourceID: .empty,
                                           token: UnsafeRawBufferPointer(start: nil, count: 0), packetNumber: 2,
                                           packetNumberLength: 4, payloadLength: 1162, into: $0)
        }
        XCTAssertEqual(ours, header)
        try sealAndOpen(header: header, payload: payload, pn: 2, keys: keys, expected: Self.clientPacket,
                        expectedSample: "d1b1c98dd7689fb8ec11d242b123dc9b", expectedHeader: "c000000001088394c8f03e5157080000449e7b9aec34")
    }

    /// A.2 and A.5 again with keys whose libcrypto contexts were given
    /// back first (an idle connection's, QUICConnection+IdleMemory.swift):
    /// made again from the key bytes kept, they protect byte for byte as
    /// the first ones.
    func testVectorsWithContextsMadeAgain() throws {
        let header = hex("c300000001088394c8f03e5157080000449e00000002")
        let payload = Self.clientCrypto + [UInt8](repeating: 0, count: 1162 - Self.clientCrypto.count)
        let keys = InitialKeys.derive(destinationID: Self.dcid, version: .v1).client
        keys.releaseContexts()
        XCTAssertFalse(keys.holdsContexts)
        try sealAndOpen(header: header, payload: payload, pn: 2, keys: keys, expected: Self.clientPacket,
                        expectedSample: "d1b1c98dd7689fb8ec11d242b123dc9b", expectedHeader: "c000000001088394c8f03e5157080000449e7b9aec34")
        let secret = hex("9ac312a7f877468ebe69422748ad00a1 5443f18203a07d6060f688f30f21632b")
        let chacha = PacketKeys(suite: .chacha20Poly1305, secret: secret, version: .v1)
        chacha.releaseContexts()
        try sealAndOpen(header: hex("4200bff4"), payload: [0x01], pn: 654_360_564, keys: chacha,
                        expected: hex("4cfe4189655e5cd55c41f69080575d7999c25a5bfb"),
                        expectedSample: "5e5cd55c41f69080575d7999c25a5bfb", expectedHeader: "4cfe4189",
                        largestReceived: 654_360_563, shortIDLength: 0)
    }

    /// A.3 Server Initial: ACK + CRYPTO, 2-byte packet number 1.
    func testA3ServerInitial() throws {
        let header = hex("c1000000010008f067a5502a4262b50040750001")
        let keys = InitialKeys.derive(destinationID: Self.dcid, version: .v1).server
        let ours = encoded(size: header.count) {
            PacketHeaderEncoder.encodeLong(type: .initial, version: .v1, destinationID: .empty,
                                           sourceID: cid("f067a5502a4262b5"), token: UnsafeRawBufferPointer(start: nil, count: 0),
                                           packetNumber: 1, packetNumberLength: 2, payloadLength: Self.serverPayload.count, into: $0)
        }
        XCTAssertEqual(ours, header)
        try sealAndOpen(header: header, payload: Self.serverPayload, pn: 1, keys: keys, expected: Self.serverPacket,
                        expectedSample: "2cd0991cd25b0aac406a5816b6394100", expectedHeader: "cf000000010008f067a5502a4262b5004075c0d9")
    }

    /// A.4 Retry: built from its fields, the tag matches; parsed, it verifies
    /// against the original DCID and not against another.
    func testA4Retry() {
        let expected = hex("ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba")
        let token = bytes("token")
        let ours = token.withUnsafeBytes { t in
            encoded(size: RetryPacket.size(destinationID: .empty, sourceID: cid("f067a5502a4262b5"), tokenLength: 5)) {
                RetryPacket.encode(version: .v1, destinationID: .empty, sourceID: cid("f067a5502a4262b5"), token: t,
                                   originalDestinationID: Self.dcid, unusedBits: 0x0f, into: $0)
            }
        }
        XCTAssertEqual(ours, expected)
        checkRetryParses(expected, version: .v1)
    }

    /// A.5 ChaCha20-Poly1305 short header: keys from the secret, then the
    /// 21-byte packet carrying PING with packet number 654360564.
    func testA5ChaCha20Poly1305ShortHeader() throws {
        let secret = hex("9ac312a7f877468ebe69422748ad00a1 5443f18203a07d6060f688f30f21632b")
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: secret, label: "quic key", length: 32),
                       hex("c6d98ff3441c3fe1b2182094f69caa2e d4b716b65488960a7a984979fb23e1c8"))
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: secret, label: "quic iv", length: 12), hex("e0459b3474bdd0e44a41c144"))
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: secret, label: "quic hp", length: 32),
                       hex("25a282b9e82f06f21f488917a4fc8f1b 73573685608597d0efcb076b0ab7a7a4"))
        let keys = PacketKeys(suite: .chacha20Poly1305, secret: secret, version: .v1)
        // "ku" is the next generation's secret (§6.1).
        XCTAssertEqual(keys.nextGeneration().secret, hex("1223504755036d556342ee9361d25342 1a826c9ecdf3c7148684b36b714881f9"))
        XCTAssertEqual(Self.nonce(keys, 654_360_564), hex("e0459b3474bdd0e46d417eb0"))
        let header = hex("4200bff4")
        let ours = encoded(size: 4) {
            PacketHeaderEncoder.encodeShort(destinationID: .empty, keyPhase: false, packetNumber: 654_360_564,
                                            packetNumberLength: 3, into: $0)
        }
        XCTAssertEqual(ours, header)
        try sealAndOpen(header: header, payload: [0x01], pn: 654_360_564, keys: keys,
                        expected: hex("4cfe4189655e5cd55c41f69080575d7999c25a5bfb"),
                        expectedSample: "5e5cd55c41f69080575d7999c25a5bfb", expectedHeader: "4cfe4189",
                        largestReceived: 654_360_563, shortIDLength: 0)
    }

    // MARK: vectors and helpers

    static let clientCrypto = hex("""
        060040f1010000ed0303ebf8fa56f129 39b9584a3896472ec40bb863cfd3e868
        04fe3a47f06a2b69484c000004130113 02010000c000000010000e00000b6578
        616d706c652e636f6dff01000100000a 00080006001d00170018001000070005
        04616c706e0005000501000000000033 00260024001d00209370b2c9caa47fba
        baf4559fedba753de171fa71f50f1ce1 5d43e994ec74d748002b000302030400
        0d0010000e0403050306030203080408 050806002d00020101001c0002400100
        3900320408ffffffffffffffff050480 00ffff07048000ffff08011001048000
        75300901100f088394c8f03e51570806 048000ffff
        """)

    static let clientPacket = hex("""
        c000000001088394c8f03e5157080000 449e7b9aec34d1b1c98dd7689fb8ec11
        d242b123dc9bd8bab936b47d92ec356c 0bab7df5976d27cd449f63300099f399
        1c260ec4c60d17b31f8429157bb35a12 82a643a8d2262cad67500cadb8e7378c
        8eb7539ec4d4905fed1bee1fc8aafba1 7c750e2c7ace01e6005f80fcb7df6212
        30c83711b39343fa028cea7f7fb5ff89 eac2308249a02252155e2347b63d58c5
        457afd84d05dfffdb20392844ae81215 4682e9cf012f9021a6f0be17ddd0c208
        4dce25ff9b06cde535d0f920a2db1bf3 62c23e596d11a4f5a6cf3948838a3aec
        4e15daf8500a6ef69ec4e3feb6b1d98e 610ac8b7ec3faf6ad760b7bad1db4ba3
        485e8a94dc250ae3fdb41ed15fb6a8e5 eba0fc3dd60bc8e30c5c4287e53805db
        059ae0648db2f64264ed5e39be2e20d8 2df566da8dd5998ccabdae053060ae6c
        7b4378e846d29f37ed7b4ea9ec5d82e7 961b7f25a9323851f681d582363aa5f8
        9937f5a67258bf63ad6f1a0b1d96dbd4 faddfcefc5266ba6611722395c906556
        be52afe3f565636ad1b17d508b73d874 3eeb524be22b3dcbc2c7468d54119c74
        68449a13d8e3b95811a198f3491de3e7 fe942b330407abf82a4ed7c1b311663a
        c69890f4157015853d91e923037c227a 33cdd5ec281ca3f79c44546b9d90ca00
        f064c99e3dd97911d39fe9c5d0b23a22 9a234cb36186c4819e8b9c5927726632
        291d6a418211cc2962e20fe47feb3edf 330f2c603a9d48c0fcb5699dbfe58964
        25c5bac4aee82e57a85aaf4e2513e4f0 5796b07ba2ee47d80506f8d2c25e50fd
        14de71e6c418559302f939b0e1abd576 f279c4b2e0feb85c1f28ff18f58891ff
        ef132eef2fa09346aee33c28eb130ff2 8f5b766953334113211996d20011a198
        e3fc433f9f2541010ae17c1bf202580f 6047472fb36857fe843b19f5984009dd
        c324044e847a4f4a0ab34f719595de37 252d6235365e9b84392b061085349d73
        203a4a13e96f5432ec0fd4a1ee65accd d5e3904df54c1da510b0ff20dcc0c77f
        cb2c0e0eb605cb0504db87632cf3d8b4 dae6e705769d1de354270123cb11450e
        fc60ac47683d7b8d0f811365565fd98c 4c8eb936bcab8d069fc33bd801b03ade
        a2e1fbc5aa463d08ca19896d2bf59a07 1b851e6c239052172f296bfb5e724047
        90a2181014f3b94a4e97d117b4381303 68cc39dbb2d198065ae3986547926cd2
        162f40a29f0c3c8745c0f50fba3852e5 66d44575c29d39a03f0cda721984b6f4
        40591f355e12d439ff150aab7613499d bd49adabc8676eef023b15b65bfc5ca0
        6948109f23f350db82123535eb8a7433 bdabcb909271a6ecbcb58b936a88cd4e
        8f2e6ff5800175f113253d8fa9ca8885 c2f552e657dc603f252e1a8e308f76f0
        be79e2fb8f5d5fbbe2e30ecadd220723 c8c0aea8078cdfcb3868263ff8f09400
        54da48781893a7e49ad5aff4af300cd8 04a6b6279ab3ff3afb64491c85194aab
        760d58a606654f9f4400e8b38591356f bf6425aca26dc85244259ff2b19c41b9
        f96f3ca9ec1dde434da7d2d392b905dd f3d1f9af93d1af5950bd493f5aa731b4
        056df31bd267b6b90a079831aaf579be 0a39013137aac6d404f518cfd4684064
        7e78bfe706ca4cf5e9c5453e9f7cfd2b 8b4c8d169a44e55c88d4a9a7f9474241
        e221af44860018ab0856972e194cd934
        """)

    static let serverPayload = hex("""
        02000000000600405a020000560303ee fce7f7b37ba1d1632e96677825ddf739
        88cfc79825df566dc5430b9a045a1200 130100002e00330024001d00209d3c94
        0d89690b84d08a60993c144eca684d10 81287c834d5311bcf32bb9da1a002b00
        020304
        """)

    static let serverPacket = hex("""
        cf000000010008f067a5502a4262b500 4075c0d95a482cd0991cd25b0aac406a
        5816b6394100f37a1c69797554780bb3 8cc5a99f5ede4cf73c3ec2493a1839b3
        dbcba3f6ea46c5b7684df3548e7ddeb9 c3bf9c73cc3f3bded74b562bfb19fb84
        022f8ef4cdd93795d77d06edbb7aaf2f 58891850abbdca3d20398c276456cbc4
        2158407dd074ee
        """)

    static func nonce(_ keys: PacketKeys, _ pn: UInt64) -> [UInt8] {
        var n = keys.aead.nonce(pn)
        return withUnsafeBytes(of: &n) { Array($0) }
    }
}

/// Seals `header + payload`, compares with `expected` (and the sample and
/// protected header the RFC prints), then parses and opens the result back.
func sealAndOpen(header: [UInt8], payload: [UInt8], pn: UInt64, keys: PacketKeys, expected: [UInt8],
                 expectedSample: String, expectedHeader: String, largestReceived: UInt64? = nil, shortIDLength: Int = 8,
                 file: StaticString = #filePath, line: UInt = #line) throws {
    var packet = header + payload + [UInt8](repeating: 0, count: PacketProtection.tagLength)
    let n = packet.withUnsafeMutableBytes {
        PacketProtection.seal($0, headerLength: header.count, payloadLength: payload.count, packetNumber: pn, keys: keys)
    }
    XCTAssertEqual(n, expected.count, file: file, line: line)
    let pnLength = Int(header[0] & 3) + 1
    let sampleAt = header.count - pnLength + 4
    XCTAssertEqual(Array(packet[sampleAt..<sampleAt + 16]), hex(expectedSample), "sample", file: file, line: line)
    XCTAssertEqual(Array(packet[..<header.count]), hex(expectedHeader), "protected header", file: file, line: line)
    XCTAssertEqual(packet, expected, "protected packet", file: file, line: line)

    // Receive it: split the datagram, then open.
    var datagram = expected
    var packets = datagram.withUnsafeBytes { CoalescedPackets($0, shortHeaderIDLength: shortIDLength) }
    guard case .packet(let parsed)? = packets.next() else { return XCTFail("did not parse", file: file, line: line) }
    XCTAssertNil(packets.next(), file: file, line: line)
    let pnOffset: Int
    switch parsed {
    case .long(let h): pnOffset = h.packetNumberOffset
    case .short(let h): pnOffset = h.packetNumberOffset
    default: return XCTFail("unexpected kind \(parsed)", file: file, line: line)
    }
    XCTAssertEqual(parsed.packet, ByteSpan(offset: 0, length: expected.count), file: file, line: line)
    let opened = try datagram.withUnsafeMutableBytes {
        try PacketProtection.open($0, packetNumberOffset: pnOffset, largestReceived: largestReceived, keys: keys)
    }
    XCTAssertEqual(opened.header.packetNumber, pn, file: file, line: line)
    XCTAssertEqual(opened.header.payloadOffset, header.count, file: file, line: line)
    XCTAssertEqual(slice(datagram, opened.payload), payload, file: file, line: line)
    XCTAssertEqual(Array(datagram[..<header.count]), header, "header after unprotecting", file: file, line: line)

    // Any flipped byte in the protected packet fails authentication.
    for at in [0, header.count - 1, header.count, expected.count - 1] {
        var bad = expected
        bad[at] ^= 0x01
        let opened = bad.withUnsafeMutableBytes { buffer -> Bool in
            do {
                _ = try PacketProtection.open(buffer, packetNumberOffset: pnOffset, largestReceived: largestReceived, keys: keys)
                return true
            } catch {
                return false
            }
        }
        XCTAssertFalse(opened, "flipped byte \(at) still opened", file: file, line: line)
    }
}

/// Parses a Retry datagram and checks its tag against the Appendix's DCID.
func checkRetryParses(_ datagram: [UInt8], version: QUICVersion, file: StaticString = #filePath, line: UInt = #line) {
    datagram.withUnsafeBytes { d in
        var packets = CoalescedPackets(d, shortHeaderIDLength: 8)
        guard case .packet(.retry(let h))? = packets.next() else { return XCTFail("not a Retry", file: file, line: line) }
        XCTAssertEqual(h.version, version, file: file, line: line)
        XCTAssertEqual(h.sourceID, cid("f067a5502a4262b5"), file: file, line: line)
        XCTAssertEqual(Array(d.slice(h.retryToken)), bytes("token"), file: file, line: line)
        XCTAssertTrue(RetryPacket.verify(h, in: d, originalDestinationID: RFC9001AppendixATests.dcid), file: file, line: line)
        XCTAssertFalse(RetryPacket.verify(h, in: d, originalDestinationID: cid("8394c8f03e515709")), file: file, line: line)
    }
}
