import XCTest
@testable import HTTP2

final class HPACKEncoderTests: XCTestCase {
    func testRoundTripThroughDecoderWithAllIndexingKinds() throws {
        var e = HPACKEncoder()
        var d = HPACKDecoder()
        let fields = [(":status", "200"), ("content-type", "text/plain"), ("x-a", "1"), ("x-a", "1"), ("x-a", "2")]
        for kind in [HPACKEncoder.Indexing.incremental, .withoutIndexing, .neverIndexed] {
            let wire = e.encode(fields, indexing: kind)
            let list = try d.decode(wire)
            XCTAssertEqual(pairs(list), fields.map { [$0.0, $0.1] })
            XCTAssertEqual(rows(d.table), rows(e.table))
        }
    }

    func testRepeatedFieldBecomesOneByteIndexedReference() {
        var e = HPACKEncoder()
        _ = e.encode([("x-request-id", "abc")])
        XCTAssertEqual(e.encode([("x-request-id", "abc")]), [0xbe])
    }

    func testNeverIndexedFieldStaysOutOfTheTableAndIsMarked() throws {
        var e = HPACKEncoder()
        var d = HPACKDecoder()
        let wire = e.encode([("set-cookie", "session=1")], indexing: .neverIndexed)
        XCTAssertEqual(wire[0], 0x1f)  // 0001 + name index 55 (15 + 40)
        XCTAssertEqual(e.table.count, 0)
        let list = try d.decode(wire)
        XCTAssertTrue(list.fields[0].isNeverIndexed)
        XCTAssertEqual(d.table.count, 0)
    }

    func testHuffmanIsNotUsedWhenLonger() {
        var e = HPACKEncoder()
        let wire = e.encode([("x", "\u{1}\u{2}")], indexing: .withoutIndexing)
        // value bytes 0x01 0x02 have 23-bit codes: raw is shorter.
        XCTAssertEqual(Array(wire.suffix(3)), [0x02, 0x01, 0x02])
    }

    // RFC 7541 §4.2: a change of SETTINGS_HEADER_TABLE_SIZE is signalled at
    // the start of the next block.
    func testPeerTableSizeChangeEmitsAnUpdateBeforeTheNextField() throws {
        var e = HPACKEncoder()
        var d = HPACKDecoder()
        _ = try d.decode(e.encode([("a", "b")]))
        e.setPeerMaxTableSize(0)
        let wire = e.encode([(":method", "GET")])
        XCTAssertEqual(wire, [0x20, 0x82])
        d.setMaxTableSizeSetting(0)
        XCTAssertEqual(pairs(try d.decode(wire)), [[":method", "GET"]])
        XCTAssertEqual(e.table.count, 0)
        XCTAssertEqual(d.table.count, 0)
    }

    // §4.2: "the smallest maximum table size that occurs in that interval
    // MUST be signaled", then the final size.
    func testDownThenUpSignalsTheMinimumThenTheFinalSize() {
        var e = HPACKEncoder()
        e.setPeerMaxTableSize(100)
        e.setPeerMaxTableSize(4096)
        var out: [UInt8] = []
        e.emitSizeUpdates(into: &out)
        XCTAssertEqual(out, [0x3f, 0x45, 0x3f, 0xe1, 0x1f])  // 100, then 4096
        XCTAssertEqual(e.table.maxSize, 4096)
    }

    func testOurLimitCapsThePeersSetting() {
        var e = HPACKEncoder(maxTableSizeLimit: 256)
        XCTAssertEqual(e.encode([(":method", "GET")]), [0x3f, 0xe1, 0x01, 0x82])  // update to 256 first
        e.setPeerMaxTableSize(65536)
        XCTAssertEqual(e.encode([(":method", "GET")]), [0x82], "still 256: no update")
    }

    func testSettingTheSameSizeEmitsNothing() {
        var e = HPACKEncoder()
        e.setPeerMaxTableSize(4096)
        XCTAssertEqual(e.encode([(":method", "GET")]), [0x82])
    }
}
