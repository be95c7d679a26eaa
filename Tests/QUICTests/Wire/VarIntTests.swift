// RFC 9000 §16 and Appendix A.1 variable-length integers.

import XCTest
@testable import QUIC

final class VarIntTests: XCTestCase {
    /// RFC 9000 §16 Table 4 / Appendix A.1 examples, including the
    /// non-minimal two-byte encoding of 37.
    func testRFC9000AppendixA1Examples() {
        let vectors: [(String, UInt64, Int)] = [
            ("c2197c5eff14e88c", 151_288_809_941_952_652, 8),  // eight-byte
            ("9d7f3e7d", 494_878_333, 4),                      // four-byte
            ("7bbd", 15_293, 2),                               // two-byte
            ("25", 37, 1),                                     // one-byte
            ("4025", 37, 2),                                   // 37 in two bytes: valid, not minimal
        ]
        for (h, value, length) in vectors {
            let b = hex(h)
            let r = b.withUnsafeBytes { VarInt.decode($0, at: 0) }
            XCTAssertEqual(r?.value, value, h)
            XCTAssertEqual(r?.length, length, h)
            XCTAssertEqual(VarInt.isMinimal(value, length: length), h != "4025", h)
        }
    }

    func testEncodeIsMinimalAndMatchesTheRFC() {
        for (value, h) in [(UInt64(151_288_809_941_952_652), "c2197c5eff14e88c"), (494_878_333, "9d7f3e7d"),
                           (15_293, "7bbd"), (37, "25")] {
            let out = encoded(size: VarInt.encodedLength(value)) { VarInt.encode(value, to: $0.baseAddress!) }
            XCTAssertEqual(out, hex(h))
        }
        // A wider encoding on request (back-filled lengths, STYLE §2).
        XCTAssertEqual(encoded(size: 2) { VarInt.encode(37, to: $0.baseAddress!, length: 2) }, hex("4025"))
        XCTAssertEqual(encoded(size: 8) { VarInt.encode(VarInt.max, to: $0.baseAddress!) }, hex("ffffffffffffffff"))
    }

    func testBoundariesOfEachLength() {
        for (value, length) in [(UInt64(63), 1), (64, 2), (16_383, 2), (16_384, 4), (1_073_741_823, 4),
                                (1_073_741_824, 8), (VarInt.max, 8)] {
            XCTAssertEqual(VarInt.encodedLength(value), length)
            let out = encoded(size: length) { VarInt.encode(value, to: $0.baseAddress!) }
            XCTAssertEqual(out.withUnsafeBytes { VarInt.decode($0, at: 0)?.value }, value)
        }
    }

    /// Incremental: every prefix shorter than the encoding needs more data
    /// and consumes nothing; trailing bytes are not read.
    func testSplitAtEveryByteNeedsMoreDataThenDecodes() {
        let b = hex("c2197c5eff14e88c") + [0x6b, 0xcd]
        for cut in 0..<8 {
            XCTAssertNil(Array(b[..<cut]).withUnsafeBytes { VarInt.decode($0, at: 0) }, "prefix \(cut)")
        }
        let r = b.withUnsafeBytes { VarInt.decode($0, at: 0) }
        XCTAssertEqual(r?.value, 151_288_809_941_952_652)
        XCTAssertEqual(r?.length, 8)
        XCTAssertEqual(b.withUnsafeBytes { VarInt.decode($0, at: 8)?.value }, 0x2b << 8 | 0xcd)
    }
}
