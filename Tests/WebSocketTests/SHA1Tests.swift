import XCTest

@testable import WebSocket

/// SHA-1 against the FIPS 180 examples as RFC 3174 §7.3 lists them
/// (https://www.rfc-editor.org/rfc/rfc3174#section-7.3), plus the empty input.
final class SHA1Tests: XCTestCase {
    func testRFC3174Test1ABC() {
        XCTAssertEqual(sha1(Array("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d")
    }

    func testRFC3174Test2TwoBlockMessage() {
        // 56 bytes: the padding no longer fits the first block.
        XCTAssertEqual(sha1(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
                       "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
    }

    func testRFC3174Test3OneMillionAs() {
        XCTAssertEqual(sha1([UInt8](repeating: 0x61, count: 1_000_000)), "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    func testRFC3174Test4TenRepeats() {
        let once = Array("0123456701234567012345670123456701234567012345670123456701234567")
        XCTAssertEqual(sha1(Array([[UInt8]](repeating: once, count: 10).joined())), "dea356a2cddd90c7a7ecedc5ebb563934f460452")
    }

    func testEmptyInput() {
        XCTAssertEqual(sha1([]), "da39a3ee5e6b4b0d3255bfef95601890afd80709")
    }

    func testUpdatesInPiecesEqualOneUpdate() {
        let message = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
        for cut in 0...message.count {
            var sha = SHA1()
            Array(message[..<cut]).withUnsafeBytes { sha.update($0) }
            Array(message[cut...]).withUnsafeBytes { sha.update($0) }
            XCTAssertEqual(hex(finish(&sha)), "84983e441c3bd26ebaae4aa1f95129e5e54670f1", "cut \(cut)")
        }
    }

    private func sha1(_ bytes: [UInt8]) -> String {
        var sha = SHA1()
        bytes.withUnsafeBytes { sha.update($0) }
        return hex(finish(&sha))
    }

    private func finish(_ sha: inout SHA1) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: SHA1.digestLength)
        out.withUnsafeMutableBytes { sha.finish(into: $0) }
        return out
    }

    private func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }
}
