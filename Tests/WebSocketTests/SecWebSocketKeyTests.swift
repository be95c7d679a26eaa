import XCTest

@testable import WebSocket

/// RFC 6455 §1.3 / §4.2.2 step 5: Sec-WebSocket-Accept from Sec-WebSocket-Key,
/// and the 16-byte key rule of §4.2.1 item 5.
final class SecWebSocketKeyTests: XCTestCase {
    func testRFC6455Section1_3ExampleAccept() {
        // "dGhlIHNhbXBsZSBub25jZQ==" is base64 of "the sample nonce".
        XCTAssertEqual(accept("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    func testRFC6455Section4_1ExampleKeyDecodesToTheSampleNonce() {
        let key = key("dGhlIHNhbXBsZSBub25jZQ==")!
        var out = [UInt8](repeating: 0, count: SecWebSocketKey.encodedLength)
        out.withUnsafeMutableBytes { _ = key.writeEncoded(into: $0) }
        XCTAssertEqual(String(decoding: out, as: UTF8.self), "dGhlIHNhbXBsZSBub25jZQ==")
        XCTAssertEqual(key.high, 0x7468_6520_7361_6D70)  // "the samp"
        XCTAssertEqual(key.low, 0x6C65_206E_6F6E_6365)   // "le nonce"
    }

    func testOtherPublishedKeyAcceptPairs() {
        // The widely quoted example pair (English Wikipedia's "WebSocket"
        // article), and a key whose pad bits are not zero.
        XCTAssertEqual(accept("x3JJHMbDL1EzLkh9GBhXDw=="), "HSmrc0sMlYUkAGmm5OPpG2HaGWk=")
        XCTAssertEqual(accept("AQIDBAUGBwgJCgsMDQ4PEC=="), nil)  // non-canonical pad bits
        XCTAssertNotNil(accept("AQIDBAUGBwgJCgsMDQ4PEA=="))
    }

    func testSurroundingWhitespaceIsIgnored() {
        XCTAssertEqual(accept(" \tdGhlIHNhbXBsZSBub25jZQ== "), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    func testKeysThatAreNotBase64Of16BytesAreRefused() {
        for bad in ["", "dGhlIHNhbXBsZSBub25jZQ", "dGhlIHNhbXBsZSBub25jZQ=", "dGhlIHNhbXBsZSBub25jZ===",
                    "dGhlIHNhbXBsZSBub25jZUE=", "dGhlIHNhbXBsZSBub25jZUFB", "dGhlIHNhbXBsZSBub25j",
                    "dGhlIHNhbXBsZSBub25jZQ==dGhl", "dGhlIHNhbXBsZSBub2 jZQ==", "dGhlIHNhbXBsZSBub25jZQ-="] {
            XCTAssertNil(key(bad), bad)
        }
    }

    private func key(_ text: String) -> SecWebSocketKey? {
        Array(text.utf8).withUnsafeBytes { SecWebSocketKey(fieldValue: $0) }
    }

    private func accept(_ text: String) -> String? {
        guard let key = key(text) else { return nil }
        var out = [UInt8](repeating: 0xEE, count: SecWebSocketKey.acceptLength + 4)
        let n = out.withUnsafeMutableBytes { key.writeAccept(into: $0) }
        XCTAssertEqual(n, SecWebSocketKey.acceptLength)
        XCTAssertEqual(Array(out[n...]), [0xEE, 0xEE, 0xEE, 0xEE])
        return String(decoding: out[..<n], as: UTF8.self)
    }
}
