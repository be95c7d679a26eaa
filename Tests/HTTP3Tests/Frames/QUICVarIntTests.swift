// QUIC variable-length integers (RFC 9000 §16, Appendix A.1 examples).

import XCTest
import Core

final class QUICVarIntTests: XCTestCase {
    private func decode(_ b: [UInt8]) -> (UInt64, Int)? {
        b.withUnsafeBytes { QUICVarInt.decode($0, at: 0) }.map { ($0.value, $0.length) }
    }

    func testAppendixA1Examples() {
        XCTAssertEqual(decode(hex("c2197c5eff14e88c"))?.0, 151_288_809_941_952_652)
        XCTAssertEqual(decode(hex("9d7f3e7d"))?.0, 494_878_333)
        XCTAssertEqual(decode(hex("7bbd"))?.0, 15293)
        XCTAssertEqual(decode(hex("25"))?.0, 37)
        XCTAssertEqual(decode(hex("4025"))?.0, 37, "§16: non-minimal encodings are valid")
    }

    func testShortestEncodingRoundTrips() {
        for v: UInt64 in [0, 63, 64, 16383, 16384, (1 << 30) - 1, 1 << 30, QUICVarInt.maxValue] {
            var out: [UInt8] = []
            QUICVarInt.append(v, to: &out)
            XCTAssertEqual(out.count, QUICVarInt.encodedLength(v))
            XCTAssertEqual(decode(out + [0xff])?.0, v)
            XCTAssertEqual(decode(out + [0xff])?.1, out.count, "trailing bytes are not read")
            for cut in 0 ..< out.count { XCTAssertNil(decode(Array(out[..<cut])), "truncated: need more") }
        }
        var out: [UInt8] = []
        QUICVarInt.append(151_288_809_941_952_652, to: &out)
        XCTAssertEqual(out, hex("c2197c5eff14e88c"))
    }
}
