// The QPACK decoder's rules (RFC 9204 §2.1.2, §2.2, §4.3, §4.5): each hostile
// input with its specific error, blocking bounds, size limits, splits.

import XCTest
import HTTPFields
@testable import HTTP3

final class QPACKDecoderTests: XCTestCase {
    private func decodeError(_ section: [UInt8], _ expected: H3Error, decoder: QPACKDecoder = QPACKDecoder(),
                             file: StaticString = #filePath, line: UInt = #line) {
        var d = decoder
        XCTAssertThrowsH3(expected, file: file, line: line) { _ = try d.decode(section, stream: 0) }
    }

    // §4.1.1 with RFC 7541 §5.1 limits: an index past 2^32 is refused.
    func testIntegerOverflowInASectionIsDecompressionFailed() {
        decodeError(hex("0000 ff ffffffff0f"), H3Error(.integerOverflow, in: .fieldSection))
        decodeError(hex("0000 ff") + [UInt8](repeating: 0x80, count: 40) + [0], H3Error(.integerOverflow, in: .fieldSection))
        XCTAssertEqual(H3Error(.integerOverflow, in: .fieldSection).code, .qpackDecompressionFailed)
    }

    // §4.1.2 via RFC 7541 §5.2: padding over 7 bits, padding not ones, EOS.
    func testBadHuffmanIsDecompressionFailed() {
        decodeError(hex("0000 29 ff 00"), H3Error(.huffmanPadding, in: .fieldSection))
        decodeError(hex("0000 5f00 81 00"), H3Error(.huffmanPadding, in: .fieldSection))
        decodeError(hex("0000 2c ffffffff 00"), H3Error(.huffmanEOS, in: .fieldSection))
    }

    func testTruncatedRepresentationsAreDecompressionFailed() {
        decodeError(hex(""), .qpackTruncatedSection)
        decodeError(hex("00"), .qpackTruncatedSection)
        decodeError(hex("0000 5f"), .qpackTruncatedSection)
        decodeError(hex("0000 51 05 2f"), .qpackTruncatedSection)  // value longer than the section
        decodeError(hex("0000 23 61 62"), .qpackTruncatedSection)
    }

    // Appendix A has 99 entries (0...98).
    func testStaticIndexPastAppendixAIsDecompressionFailed() throws {
        var d = QPACKDecoder()
        XCTAssertEqual(try d.decode(hex("0000 ff23"), stream: 0), [["x-frame-options", "sameorigin"]])
        decodeError(hex("0000 ff24"), .qpackBadStaticReference)
        decodeError(hex("0000 5f54 00"), .qpackBadStaticReference)
    }

    // §2.2.3: any dynamic reference with Required Insert Count 0, or at or
    // past it, or to an evicted entry.
    func testReferencesOutsideTheRequiredInsertCountAreDecompressionFailed() throws {
        decodeError(hex("0000 80"), .qpackBadDynamicReference)
        decodeError(hex("0000 10"), .qpackBadDynamicReference)
        decodeError(hex("0000 40 00"), .qpackBadDynamicReference)
        decodeError(hex("0000 00 00"), .qpackBadDynamicReference)
        var d = QPACKDecoder()
        try d.feed(hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d"))  // one entry
        // RIC 1, Base 1: relative 1 would be absolute -1.
        decodeError(hex("0200 81"), .qpackBadDynamicReference, decoder: d)
        // RIC 1, Base 0: post-base 1 is absolute 1 ≥ RIC.
        decodeError(hex("0200 11"), .qpackBadDynamicReference, decoder: d)
        XCTAssertEqual(try d.decode(hex("0200 80"), stream: 0), [[":authority", "www.example.com"]])
        // Evicted: shrink the capacity to 0, then insert count 1 stays but the entry is gone.
        try d.feed(hex("20"))
        decodeError(hex("0200 80"), .qpackBadDynamicReference, decoder: d)
    }

    // §2.2.1: a Required Insert Count larger than the references need.
    func testRequiredInsertCountLargerThanNeededIsRefused() throws {
        var d = QPACKDecoder()
        try d.feed(hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d"))
        decodeError(hex("0200 d1"), .qpackRequiredInsertCountTooLarge, decoder: d)
    }

    // §4.5.1.1: an encoded value above 2 * MaxEntries, a value that would
    // decode to 0, and any non-zero value with capacity 0.
    func testImpossibleRequiredInsertCountsAreRefused() {
        decodeError(hex("ff02 00"), .qpackBadRequiredInsertCount)  // 257 > 256
        decodeError(hex("01 00"), .qpackBadRequiredInsertCount, decoder: QPACKDecoder(maxTableCapacity: 0))
        XCTAssertThrowsH3(.qpackBadRequiredInsertCount) {
            // MaxEntries 1, FullRange 2, no inserts: encoded 2 → 1 > MaxValue 1? no;
            // encoded 1 with MaxValue 1: ReqInsertCount = 0 → error.
            _ = try QPACKRequiredInsertCount.decode(1, maxTableCapacity: 32, totalInserts: 0)
        }
    }

    // §4.5.1.2: Base = RIC - DeltaBase - 1 below zero.
    func testNegativeBaseIsRefused() throws {
        var d = QPACKDecoder()
        try d.feed(hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d"))
        decodeError(hex("0281 10"), .qpackNegativeBase, decoder: d)
    }

    // §4.5.1.1: the insert count wraps modulo 2 * MaxEntries and is recovered
    // from the decoder's own count.
    func testRequiredInsertCountWrapsAndRoundTrips() throws {
        let capacity = 10 * 32  // MaxEntries 10, FullRange 20
        for total in 0 ... 100 {
            for ric in max(1, total - 9) ... total + 10 {
                let enc = QPACKRequiredInsertCount.encode(ric, maxTableCapacity: capacity)
                XCTAssertLessThanOrEqual(enc, 20)
                XCTAssertEqual(try QPACKRequiredInsertCount.decode(enc, maxTableCapacity: capacity, totalInserts: total), ric,
                               "ric \(ric) total \(total)")
            }
        }
    }

    // §2.1.2: more blocked streams than SETTINGS_QPACK_BLOCKED_STREAMS.
    func testBlockedStreamsAreBounded() throws {
        var d = QPACKDecoder(maxBlockedStreams: 1)
        XCTAssertNil(try d.decode(hex("0200 80"), stream: 0))
        XCTAssertThrowsH3(.qpackTooManyBlockedStreams) { _ = try d.decode(hex("0200 80"), stream: 4) }
        var none = QPACKDecoder(maxBlockedStreams: 0)
        XCTAssertThrowsH3(.qpackTooManyBlockedStreams) { _ = try none.decode(hex("0200 80"), stream: 0) }
    }

    // RFC 9114 §4.2.2: over SETTINGS_MAX_FIELD_SECTION_SIZE the stream fails,
    // the section is still acknowledged, and the list is left as it was.
    func testFieldSectionOverTheLimitIsAStreamError() throws {
        var d = QPACKDecoder(maxFieldSectionSize: 60)
        try d.feed(hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d"))
        var list = HeaderList()
        XCTAssertThrowsH3(.fieldSectionTooLarge) {
            _ = try hex("0200 80 80").withUnsafeBytes { try d.decodeFieldSection($0, stream: 4, into: &list) }
        }
        XCTAssertEqual(list.count, 0)
        XCTAssertEqual(list.bytes.count, 0)
        XCTAssertFalse(H3Error.fieldSectionTooLarge.isConnectionError)
        XCTAssertEqual(d.decoderStream(), hex("84"))
        XCTAssertEqual(try d.decode(hex("0200 80"), stream: 8), [[":authority", "www.example.com"]], "15 + 10 + 32 ≤ 60")
    }

    // §4.3: encoder-stream errors.
    func testEncoderStreamErrors() throws {
        var d = QPACKDecoder(maxTableCapacity: 100)
        XCTAssertThrowsH3(.qpackCapacityTooLarge) { try d.feed(hex("3f46")) }  // 101
        d = QPACKDecoder(maxTableCapacity: 100)
        try d.feed(hex("3f41"))  // 96... 31 + 65 = 96
        XCTAssertEqual(d.table.capacity, 96)
        XCTAssertThrowsH3(.qpackEntryTooLarge) { try d.feed(hex("c0") + [0x7f, 0x22] + [UInt8](repeating: 0x61, count: 161 - 127 + 127)) }
        d = QPACKDecoder()
        XCTAssertThrowsH3(.qpackEncoderBadReference) { try d.feed(hex("00")) }
        XCTAssertThrowsH3(.qpackEncoderBadReference) { try d.feed(hex("80 00")) }
        XCTAssertThrowsH3(.qpackEncoderBadStaticReference) { try d.feed(hex("ff24 00")) }
        XCTAssertThrowsH3(H3Error(.integerOverflow, in: .encoderStream)) { try d.feed(hex("3f ffffffff0f")) }
        XCTAssertThrowsH3(H3Error(.huffmanPadding, in: .encoderStream)) { try d.feed(hex("3fbd01 61 ff 00")) }
        XCTAssertEqual(H3Error(.huffmanPadding, in: .encoderStream).code, .qpackEncoderStreamError)
    }

    // A declared string longer than any insert could be is refused before
    // its bytes arrive (memory bound on the pending instruction).
    func testOversizedEncoderStringIsRefusedEarly() throws {
        var d = QPACKDecoder(maxTableCapacity: 256)
        try d.feed(hex("3fe101"))
        XCTAssertThrowsH3(.qpackEncoderInstructionTooLong) { try d.feed(hex("c0 7f ffff03")) }
    }

    // Every section decoded whole, split is not a thing for sections (they
    // come whole in a HEADERS frame), but trailing bytes are more lines: a
    // section with garbage after its last line fails.
    func testTrailingGarbageAfterASectionIsAnError() {
        decodeError(hex("0000 d1 ff"), .qpackTruncatedSection)
    }
}
