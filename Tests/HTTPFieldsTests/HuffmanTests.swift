import XCTest
import HTTPFields

final class HuffmanTests: XCTestCase {
    private func encode(_ b: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        b.withUnsafeBytes { r in
            Huffman.encode(r, to: &out)
            XCTAssertEqual(Huffman.encodedLength(r), out.count)
        }
        return out
    }

    private func decode(_ b: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        try b.withUnsafeBytes { try Huffman.decode($0, to: &out) }
        return out
    }

    func testEverySingleByteValueRoundTrips() throws {
        for v in 0...255 {
            let b = [UInt8(v)]
            XCTAssertEqual(try decode(encode(b)), b, "byte \(v)")
        }
    }

    func testAll256ByteValuesInOneStringRoundTrip() throws {
        let all = (0...255).map { UInt8($0) }
        let both = all + all.reversed()
        XCTAssertEqual(try decode(encode(both)), both)
        XCTAssertLessThanOrEqual(both.count, Huffman.maxDecodedLength(encodedLength: encode(both).count))
    }

    // RFC 7541 Appendix C.4.1: "www.example.com" → f1e3 c2e5 f23a 6ba0 ab90 f4ff
    func testAppendixC4HuffmanVector() throws {
        let wire = hex("f1e3 c2e5 f23a 6ba0 ab90 f4ff")
        XCTAssertEqual(encode(bytes("www.example.com")), wire)
        XCTAssertEqual(try decode(wire), bytes("www.example.com"))
    }

    func testEmptyStringIsEmpty() throws {
        XCTAssertEqual(encode([]), [])
        XCTAssertEqual(try decode([]), [])
    }

    func testPaddingLongerThanSevenBitsIsRejected() {
        // '0' is 00000 (5 bits); then a whole 0xff byte of padding.
        XCTAssertThrowsFieldCoding(.huffmanPadding) { _ = try decode([0x07, 0xff]) }
        // A lone all-ones byte: 8 bits of padding.
        XCTAssertThrowsFieldCoding(.huffmanPadding) { _ = try decode([0xff]) }
    }

    func testPaddingThatIsNotAllOnesIsRejected() {
        // '0' (00000) then padding 000 instead of 111.
        XCTAssertThrowsFieldCoding(.huffmanPadding) { _ = try decode([0x00]) }
        XCTAssertEqual(try? decode([0x07]), bytes("0"))
    }

    func testEOSInsideTheStringIsRejected() {
        // EOS is 30 ones; four 0xff bytes contain it.
        XCTAssertThrowsFieldCoding(.huffmanEOS) { _ = try decode([0xff, 0xff, 0xff, 0xff]) }
    }
}
