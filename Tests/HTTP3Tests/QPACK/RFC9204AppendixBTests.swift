// RFC 9204 Appendix B: the encoder-stream bytes, field sections and
// decoder-stream instructions of the five examples, as exact vectors, with
// the dynamic table after each step.

import XCTest
import HTTPFields
@testable import HTTP3

final class RFC9204AppendixBTests: XCTestCase {
    let b2Encoder = hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d c10c 2f73 616d 706c 652f 7061 7468")
    let b3Encoder = hex("4a63 7573 746f 6d2d 6b65 790c 6375 7374 6f6d 2d76 616c 7565")
    let b4Encoder = hex("02")
    let b4Section = hex("0500 80 c1 81")
    let b5Encoder = hex("810d 6375 7374 6f6d 2d76 616c 7565 32")

    // B.1: Literal Field Line with Name Reference, static.
    func testB1LiteralWithStaticNameReference() throws {
        var d = QPACKDecoder()
        XCTAssertEqual(try d.decode(hex("0000 510b 2f69 6e64 6578 2e68 746d 6c"), stream: 0), [[":path", "/index.html"]])
        XCTAssertEqual(d.decoderStream(), [], "no dynamic references: no Section Acknowledgment (§4.4.1)")
        XCTAssertEqual(d.table.size, 0)
    }

    // B.2: capacity, two inserts by static name reference, a section with
    // post-base references, and its Section Acknowledgment.
    func testB2DynamicTable() throws {
        var d = QPACKDecoder()
        try d.feed(b2Encoder)
        XCTAssertEqual(d.table.capacity, 220)
        XCTAssertEqual(d.rows, [["0", ":authority", "www.example.com"], ["1", ":path", "/sample/path"]])
        XCTAssertEqual(d.table.size, 106)
        XCTAssertEqual(try d.decode(hex("0381 10 11"), stream: 4), [[":authority", "www.example.com"], [":path", "/sample/path"]])
        XCTAssertEqual(d.decoderStream(), hex("84"))
    }

    // B.3: speculative insert with a literal name; Insert Count Increment.
    func testB3SpeculativeInsert() throws {
        var d = QPACKDecoder()
        try d.feed(b2Encoder)
        _ = try d.decode(hex("0381 10 11"), stream: 4)
        XCTAssertEqual(d.decoderStream(), hex("84"))
        try d.feed(b3Encoder)
        XCTAssertEqual(d.table.size, 160)
        XCTAssertEqual(d.rows.last, ["2", "custom-key", "custom-value"])
        XCTAssertEqual(d.decoderStream(), hex("01"))
    }

    // B.4: the Duplicate is delayed, so the section on stream 8 blocks; the
    // stream is cancelled before the insert arrives.
    func testB4DuplicateAndStreamCancellation() throws {
        var d = QPACKDecoder()
        try d.feed(b2Encoder)
        _ = try d.decode(hex("0381 10 11"), stream: 4)
        try d.feed(b3Encoder)
        XCTAssertEqual(d.decoderStream(), hex("84 01"))
        XCTAssertNil(try d.decode(b4Section, stream: 8), "Required Insert Count 4 > 3 inserts: blocked")
        XCTAssertEqual(d.blockedStreamCount, 1)
        d.cancelStream(8)
        XCTAssertEqual(d.decoderStream(), hex("48"))
        try d.feed(b4Encoder)
        XCTAssertEqual(d.takeUnblockedStreams(), [], "a cancelled stream is not released")
        XCTAssertEqual(d.table.size, 217)
        XCTAssertEqual(d.rows.last, ["3", ":authority", "www.example.com"])
    }

    // B.4 without the cancellation: the section is released by the Duplicate.
    func testB4BlockedSectionIsReleasedWhenTheInsertArrives() throws {
        var d = QPACKDecoder()
        try d.feed(b2Encoder + b3Encoder)
        XCTAssertNil(try d.decode(b4Section, stream: 8))
        try d.feed(b4Encoder)
        XCTAssertEqual(d.takeUnblockedStreams(), [8])
        var list = HeaderList()
        try d.decodeUnblocked(stream: 8, into: &list)
        XCTAssertEqual(pairs(list), [[":authority", "www.example.com"], [":path", "/"], ["custom-key", "custom-value"]])
        XCTAssertEqual(d.decoderStream(), hex("88"), "Section Acknowledgment (stream 8) covers all four inserts")
        XCTAssertEqual(d.blockedStreamCount, 0)
    }

    // B.5: an insert by dynamic name reference evicts the oldest entry.
    func testB5InsertEvicts() throws {
        var d = QPACKDecoder()
        try d.feed(b2Encoder + b3Encoder + b4Encoder + b5Encoder)
        XCTAssertEqual(d.rows, [["1", ":path", "/sample/path"], ["2", "custom-key", "custom-value"],
                                ["3", ":authority", "www.example.com"], ["4", "custom-key", "custom-value2"]])
        XCTAssertEqual(d.table.size, 215)
        XCTAssertEqual(d.table.droppedCount, 1)
    }

    // The whole encoder stream of B.2–B.5, split at every byte boundary,
    // ends in the same table.
    func testEncoderStreamSplitAtEveryByteGivesTheSameTable() throws {
        let all = b2Encoder + b3Encoder + b4Encoder + b5Encoder
        for cut in 0 ... all.count {
            var d = QPACKDecoder()
            try d.feed(Array(all[..<cut]))
            try d.feed(Array(all[cut...]))
            XCTAssertEqual(d.table.size, 215, "cut \(cut)")
            XCTAssertEqual(d.table.insertCount, 5, "cut \(cut)")
            XCTAssertEqual(d.rows.last, ["4", "custom-key", "custom-value2"])
        }
        var d = QPACKDecoder()
        for b in all { try d.feed([b]) }
        XCTAssertEqual(d.table.size, 215)
    }
}
