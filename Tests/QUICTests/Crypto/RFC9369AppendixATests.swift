// RFC 9369 (QUIC version 2) Appendix A: the same samples under v2's salt,
// labels, type bits and Retry key. https://www.rfc-editor.org/rfc/rfc9369#appendix-A

import XCTest
import Core
@testable import QUIC

final class RFC9369AppendixATests: XCTestCase {
    static let dcid = RFC9001AppendixATests.dcid

    /// A.1 Keys.
    func testA1Keys() {
        let initial = Self.dcid.withUnsafeBytes { HKDF.extract(.sha256, salt: InitialKeys.saltV2, inputKeyingMaterial: $0) }
        XCTAssertEqual(initial, hex("2062e8b3cd8d52092614b8071d0aa1fb 7c2e3ac193f78b280e72d8f5751f6aba"))
        let (client, server) = InitialKeys.secrets(destinationID: Self.dcid, version: .v2)
        XCTAssertEqual(client, hex("14ec9d6eb9fd7af83bf5a668bc17a7e2 83766aade7ecd0891f70f9ff7f4bf47b"))
        XCTAssertEqual(server, hex("0263db1782731bf4588e7e4d93b74639 07cb8cd8200b5da55a8bd488eafc37c1"))
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: client, label: "quicv2 key", length: 16), hex("8b1a0bc121284290a29e0971b5cd045d"))
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: client, label: "quicv2 iv", length: 12), hex("91f73e2351d8fa91660e909f"))
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: client, label: "quicv2 hp", length: 16), hex("45b95e15235d6f45a6b19cbcb0294ba9"))
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: server, label: "quicv2 key", length: 16), hex("82db637861d55e1d011f19ea71d5d2a7"))
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: server, label: "quicv2 iv", length: 12), hex("dd13c276499c0249d3310652"))
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: server, label: "quicv2 hp", length: 16), hex("edf6d05c83121201b436e16877593c3a"))
        let keys = InitialKeys.derive(destinationID: Self.dcid, version: .v2)
        XCTAssertEqual(keys.client.aead.iv, hex("91f73e2351d8fa91660e909f"))
        XCTAssertEqual(keys.server.aead.iv, hex("dd13c276499c0249d3310652"))
    }

    /// A.2 Client Initial (v2 type bits 0b01).
    func testA2ClientInitial() throws {
        let header = hex("d36b3343cf088394c8f03e5157080000449e00000002")
        let crypto = RFC9001AppendixATests.clientCrypto
        let payload = crypto + [UInt8](repeating: 0, count: 1162 - crypto.count)
        let ours = encoded(size: header.count) {
            PacketHeaderEncoder.encodeLong(type: .initial, version: .v2, destinationID: Self.dcid, sourceID: .empty,
                                           token: UnsafeRawBufferPointer(start: nil, count: 0), packetNumber: 2,
                                           packetNumberLength: 4, payloadLength: 1162, into: $0)
        }
        XCTAssertEqual(ours, header)
        try sealAndOpen(header: header, payload: payload, pn: 2, keys: InitialKeys.derive(destinationID: Self.dcid, version: .v2).client,
                        expected: Self.clientPacket, expectedSample: "ffe67b6abcdb4298b485dd04de806071",
                        expectedHeader: "d76b3343cf088394c8f03e5157080000449ea0c95e82")
    }

    /// A.3 Server Initial.
    func testA3ServerInitial() throws {
        let header = hex("d16b3343cf0008f067a5502a4262b50040750001")
        let payload = RFC9001AppendixATests.serverPayload
        try sealAndOpen(header: header, payload: payload, pn: 1, keys: InitialKeys.derive(destinationID: Self.dcid, version: .v2).server,
                        expected: hex("""
                            dc6b3343cf0008f067a5502a4262b500 4075d92faaf16f05d8a4398c47089698
                            baeea26b91eb761d9b89237bbf872630 17915358230035f7fd3945d88965cf17
                            f9af6e16886c61bfc703106fbaf3cb4c fa52382dd16a393e42757507698075b2
                            c984c707f0a0812d8cd5a6881eaf21ce da98f4bd23f6fe1a3e2c43edd9ce7ca8
                            4bed8521e2e140
                            """),
                        expectedSample: "6f05d8a4398c47089698baeea26b91eb", expectedHeader: "dc6b3343cf0008f067a5502a4262b5004075d92f")
    }

    /// A.4 Retry (v2 type bits 0b00, v2 integrity key and nonce).
    func testA4Retry() {
        let expected = hex("cf6b3343cf0008f067a5502a4262b5746f6b656ec8646ce8bfe3395 2d955543665dcc7b6")
        let token = bytes("token")
        let ours = token.withUnsafeBytes { t in
            encoded(size: expected.count) {
                RetryPacket.encode(version: .v2, destinationID: .empty, sourceID: cid("f067a5502a4262b5"), token: t,
                                   originalDestinationID: Self.dcid, unusedBits: 0x0f, into: $0)
            }
        }
        XCTAssertEqual(ours, expected)
        checkRetryParses(expected, version: .v2)
    }

    /// A.5 ChaCha20-Poly1305 short header with v2 labels.
    func testA5ChaCha20Poly1305ShortHeader() throws {
        let secret = hex("9ac312a7f877468ebe69422748ad00a1 5443f18203a07d6060f688f30f21632b")
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: secret, label: "quicv2 key", length: 32),
                       hex("3bfcddd72bcf02541d7fa0dd1f5f9eee a817e09a6963a0e6c7df0f9a1bab90f2"))
        XCTAssertEqual(HKDF.expandLabel(.sha256, secret: secret, label: "quicv2 hp", length: 32),
                       hex("d659760d2ba434a226fd37b35c69e2da 8211d10c4f12538787d65645d5d1b8e2"))
        let keys = PacketKeys(suite: .chacha20Poly1305, secret: secret, version: .v2)
        XCTAssertEqual(keys.aead.iv, hex("a6b5bc6ab7dafce30ffff5dd"))
        XCTAssertEqual(keys.nextGeneration().secret, hex("c69374c49e3d2a9466fa689e49d476db 5d0dfbc87d32ceeaa6343fd0ae4c7d88"))
        XCTAssertEqual(RFC9001AppendixATests.nonce(keys, 654_360_564), hex("a6b5bc6ab7dafce328ff4a29"))
        try sealAndOpen(header: hex("4200bff4"), payload: [0x01], pn: 654_360_564, keys: keys,
                        expected: hex("5558b1c60ae7b6b932bc27d786f4bc2bb20f2162ba"),
                        expectedSample: "e7b6b932bc27d786f4bc2bb20f2162ba", expectedHeader: "5558b1c6",
                        largestReceived: 654_360_563, shortIDLength: 0)
    }

    static let clientPacket = hex("""
        d76b3343cf088394c8f03e5157080000 449ea0c95e82ffe67b6abcdb4298b485
        dd04de806071bf03dceebfa162e75d6c 96058bdbfb127cdfcbf903388e99ad04
        9f9a3dd4425ae4d0992cfff18ecf0fdb 5a842d09747052f17ac2053d21f57c5d
        250f2c4f0e0202b70785b7946e992e58 a59ac52dea6774d4f03b55545243cf1a
        12834e3f249a78d395e0d18f4d766004 f1a2674802a747eaa901c3f10cda5500
        cb9122faa9f1df66c392079a1b40f0de 1c6054196a11cbea40afb6ef5253cd68
        18f6625efce3b6def6ba7e4b37a40f77 32e093daa7d52190935b8da58976ff33
        12ae50b187c1433c0f028edcc4c2838b 6a9bfc226ca4b4530e7a4ccee1bfa2a3
        d396ae5a3fb512384b2fdd851f784a65 e03f2c4fbe11a53c7777c023462239dd
        6f7521a3f6c7d5dd3ec9b3f233773d4b 46d23cc375eb198c63301c21801f6520
        bcfb7966fc49b393f0061d974a2706df 8c4a9449f11d7f3d2dcbb90c6b877045
        636e7c0c0fe4eb0f697545460c806910 d2c355f1d253bc9d2452aaa549e27a1f
        ac7cf4ed77f322e8fa894b6a83810a34 b361901751a6f5eb65a0326e07de7c12
        16ccce2d0193f958bb3850a833f7ae43 2b65bc5a53975c155aa4bcb4f7b2c4e5
        4df16efaf6ddea94e2c50b4cd1dfe060 17e0e9d02900cffe1935e0491d77ffb4
        fdf85290fdd893d577b1131a610ef6a5 c32b2ee0293617a37cbb08b847741c3b
        8017c25ca9052ca1079d8b78aebd4787 6d330a30f6a8c6d61dd1ab5589329de7
        14d19d61370f8149748c72f132f0fc99 f34d766c6938597040d8f9e2bb522ff9
        9c63a344d6a2ae8aa8e51b7b90a4a806 105fcbca31506c446151adfeceb51b91
        abfe43960977c87471cf9ad4074d30e1 0d6a7f03c63bd5d4317f68ff325ba3bd
        80bf4dc8b52a0ba031758022eb025cdd 770b44d6d6cf0670f4e990b22347a7db
        848265e3e5eb72dfe8299ad7481a4083 22cac55786e52f633b2fb6b614eaed18
        d703dd84045a274ae8bfa73379661388 d6991fe39b0d93debb41700b41f90a15
        c4d526250235ddcd6776fc77bc97e7a4 17ebcb31600d01e57f32162a8560cacc
        7e27a096d37a1a86952ec71bd89a3e9a 30a2a26162984d7740f81193e8238e61
        f6b5b984d4d3dfa033c1bb7e4f0037fe bf406d91c0dccf32acf423cfa1e70710
        10d3f270121b493ce85054ef58bada42 310138fe081adb04e2bd901f2f13458b
        3d6758158197107c14ebb193230cd115 7380aa79cae1374a7c1e5bbcb80ee23e
        06ebfde206bfb0fcbc0edc4ebec30966 1bdd908d532eb0c6adc38b7ca7331dce
        8dfce39ab71e7c32d318d136b6100671 a1ae6a6600e3899f31f0eed19e3417d1
        34b90c9058f8632c798d4490da498730 7cba922d61c39805d072b589bd52fdf1
        e86215c2d54e6670e07383a27bbffb5a ddf47d66aa85a0c6f9f32e59d85a44dd
        5d3b22dc2be80919b490437ae4f36a0a e55edf1d0b5cb4e9a3ecabee93dfc6e3
        8d209d0fa6536d27a5d6fbb17641cde2 7525d61093f1b28072d111b2b4ae5f89
        d5974ee12e5cf7d5da4d6a31123041f3 3e61407e76cffcdcfd7e19ba58cf4b53
        6f4c4938ae79324dc402894b44faf8af bab35282ab659d13c93f70412e85cb19
        9a37ddec600545473cfb5a05e08d0b20 9973b2172b4d21fb69745a262ccde96b
        a18b2faa745b6fe189cf772a9f84cbfc
        """)
}
