import XCTest
import HTTPFields

final class IntegerCodingTests: XCTestCase {
    private func decode(_ b: [UInt8], prefix: Int) throws -> (value: Int, length: Int) {
        try b.withUnsafeBytes { try IntegerCoding.decode($0, at: 0, prefixBits: prefix) }
    }

    private func encode(_ v: Int, prefix: Int, first: UInt8 = 0) -> [UInt8] {
        var out = [UInt8](repeating: 0xee, count: 16)
        let n = out.withUnsafeMutableBytes { IntegerCoding.encode(v, prefixBits: prefix, firstByte: first, into: $0.baseAddress!) }
        XCTAssertEqual(n, IntegerCoding.encodedLength(v, prefixBits: prefix))
        var appended: [UInt8] = []
        IntegerCoding.append(v, prefixBits: prefix, firstByte: first, to: &appended)
        XCTAssertEqual(Array(out[..<n]), appended)
        XCTAssertEqual(out[n], 0xee, "wrote past its length")
        return Array(out[..<n])
    }

    // RFC 7541 Appendix C.1.1 https://www.rfc-editor.org/rfc/rfc7541#appendix-C.1.1
    func testAppendixC11EncodesTenWithFiveBitPrefix() throws {
        XCTAssertEqual(encode(10, prefix: 5), [0x0a])  // 01010: 10 fits the prefix
        XCTAssertEqual(try decode([0x0a], prefix: 5).value, 10)
    }

    // RFC 7541 Appendix C.1.2
    func testAppendixC12Encodes1337WithFiveBitPrefix() throws {
        let wire: [UInt8] = [0x1f,  // 11111: prefix full, 1337 - 31 = 1306 follows
                             0x9a,  // 1306 % 128 = 26, continuation bit set
                             0x0a]  // 1306 / 128 = 10, last byte
        XCTAssertEqual(encode(1337, prefix: 5), wire)
        let r = try decode(wire, prefix: 5)
        XCTAssertEqual(r.value, 1337)
        XCTAssertEqual(r.length, 3)
    }

    // RFC 7541 Appendix C.1.3
    func testAppendixC13Encodes42AtOctetBoundary() throws {
        XCTAssertEqual(encode(42, prefix: 8), [0x2a])
        XCTAssertEqual(try decode([0x2a], prefix: 8).value, 42)
    }

    func testHighBitsOfFirstByteAreIgnoredOnDecodeAndKeptOnEncode() throws {
        XCTAssertEqual(try decode([0xea], prefix: 5).value, 10)
        XCTAssertEqual(encode(10, prefix: 5, first: 0xe0), [0xea])
    }

    func testPrefixMinusOneNeedsAContinuationByte() throws {
        XCTAssertEqual(encode(31, prefix: 5), [0x1f, 0x00])
        XCTAssertEqual(try decode([0x1f, 0x00], prefix: 5).value, 31)
    }

    func testRoundTripsAcrossPrefixesAndMagnitudes() throws {
        for prefix in 1...8 {
            for v in [0, 1, 126, 127, 128, 255, 256, 16383, 16384, 1 << 21, maxPrefixedInteger] {
                let w = encode(v, prefix: prefix)
                let r = try decode(w, prefix: prefix)
                XCTAssertEqual(r.value, v)
                XCTAssertEqual(r.length, w.count)
            }
        }
    }

    func testDecodeReadsOnlyItsOwnBytes() throws {
        let r = try decode([0x1f, 0x9a, 0x0a, 0xff, 0xff], prefix: 5)
        XCTAssertEqual(r.value, 1337)
        XCTAssertEqual(r.length, 3)
    }

    func testTruncatedIntegerIsAnError() {
        XCTAssertThrowsFieldCoding(.integerTruncated) { _ = try decode([], prefix: 5) }
        XCTAssertThrowsFieldCoding(.integerTruncated) { _ = try decode([0x1f], prefix: 5) }
        XCTAssertThrowsFieldCoding(.integerTruncated) { _ = try decode([0x1f, 0x9a], prefix: 5) }
    }

    func testIntegerAbove32BitsIsOverflow() {
        // 2^32 with a 5-bit prefix: 31 + (2^32 - 31).
        var w: [UInt8] = []
        IntegerCoding.append(maxPrefixedInteger + 1, prefixBits: 5, firstByte: 0, to: &w)
        XCTAssertThrowsFieldCoding(.integerOverflow) { _ = try decode(w, prefix: 5) }
    }

    func testEndlessContinuationBytesAreOverflowNotASpin() {
        let w: [UInt8] = [0x1f] + [UInt8](repeating: 0x80, count: 64) + [0x00]
        XCTAssertThrowsFieldCoding(.integerOverflow) { _ = try decode(w, prefix: 5) }
    }
}
