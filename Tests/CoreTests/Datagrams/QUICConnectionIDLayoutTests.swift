import XCTest

import Core

final class QUICConnectionIDLayoutTests: XCTestCase {
    private func id(_ index: Int, random: UInt64) -> [UInt8] {
        var out = [UInt8](repeating: 0xAA, count: 9)
        out.withUnsafeMutableBytes { QUICConnectionIDLayout.write(socketIndex: index, random: random, into: $0) }
        XCTAssertEqual(out[8], 0xAA, "wrote past the 8 bytes")
        return Array(out.prefix(8))
    }

    private func index(_ bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBytes { QUICConnectionIDLayout.socketIndex(of: $0) }
    }

    func testTheIndexSitsBigEndianInBytesOneAndTwo() {
        XCTAssertEqual(id(0x0102, random: 0xFFFF_FFFF_FFFF_FFFF), [0x1F, 0x01, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        XCTAssertEqual(id(0, random: 0x1122_3344_5566_7788), [0x11, 0x00, 0x00, 0x88, 0x77, 0x66, 0x55, 0x44])
    }

    func testEveryIndexRoundTripsWhateverTheRandomBits() {
        var random: UInt64 = 0x9E37_79B9_7F4A_7C15
        for i in [0, 1, 2, 255, 256, 4095, 65_534, 65_535] {
            random = random &* 6_364_136_223_846_793_005 &+ 1
            let bytes = id(i, random: random)
            XCTAssertEqual(bytes[0] & 0xE0, 0, "config rotation bits must be 0")
            XCTAssertEqual(index(bytes), i)
        }
    }

    func testIDsThatCannotBeOursNameNoSocket() {
        XCTAssertNil(index([0x20, 0, 1, 0, 0, 0, 0, 0]), "config rotation 1")
        XCTAssertNil(index([0xE0, 0, 1, 0, 0, 0, 0, 0]), "config rotation 7")
        XCTAssertNil(index([0, 0, 1, 0, 0, 0, 0]), "7 bytes")
        XCTAssertNil(index([0, 0, 1, 0, 0, 0, 0, 0, 0]), "9 bytes")
        XCTAssertNil(index([]))
    }
}
