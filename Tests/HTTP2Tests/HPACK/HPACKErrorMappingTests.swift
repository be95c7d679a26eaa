// The shared integer and Huffman failures (HTTPFields) are COMPRESSION_ERROR
// in HPACK (RFC 9113 §4.3), with the reasons HPACK has always sent.

import XCTest
@testable import HTTP2

final class HPACKErrorMappingTests: XCTestCase {
    func testSharedCodingFailuresMapToCompressionErrors() {
        XCTAssertEqual(HPACKError(FieldCodingError.integerTruncated), .integerTruncated)
        XCTAssertEqual(HPACKError(FieldCodingError.integerOverflow), .integerOverflow)
        XCTAssertEqual(HPACKError(FieldCodingError.huffmanEOS), .huffmanEOS)
        XCTAssertEqual(HPACKError(FieldCodingError.huffmanPadding), .huffmanPadding)
        for e in [HPACKError.integerTruncated, .integerOverflow, .huffmanEOS, .huffmanPadding] {
            XCTAssertEqual(e.errorCode, .compressionError)
        }
    }

    func testHuffmanFailureInsideABlockIsCompressionError() {
        var d = HPACKDecoder()
        // Literal without indexing, new name "a" (Huffman 0x1f = 'a' + padding 111),
        // value Huffman-encoded as one 0xff byte: 8 bits of padding.
        XCTAssertThrowsHPACK(.huffmanPadding) { _ = try d.decode([0x00, 0x81, 0x1f, 0x81, 0xff]) }
        XCTAssertThrowsHPACK(.integerTruncated) { _ = try d.decode([0x7f]) }
    }
}
