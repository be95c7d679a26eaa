import XCTest
@testable import HTTP2

final class HPACKDecoderTests: XCTestCase {
    func testIndexZeroIsCompressionError() {
        var d = HPACKDecoder()
        XCTAssertThrowsHPACK(.indexZero) { _ = try d.decode([0x80]) }
        XCTAssertEqual(HPACKError.indexZero.errorCode, .compressionError)
        XCTAssertTrue(HPACKError.indexZero.isConnectionError)
    }

    func testIndexBeyondStaticAndDynamicTablesIsCompressionError() {
        var d = HPACKDecoder()
        XCTAssertThrowsHPACK(.indexOutOfRange) { _ = try d.decode([0xbe]) }  // 62, table empty
        XCTAssertThrowsHPACK(.indexOutOfRange) { _ = try d.decode([0x7e, 0x01, 0x61]) }  // literal, name index 62
    }

    func testStringLongerThanTheBlockIsCompressionError() {
        var d = HPACKDecoder()
        XCTAssertThrowsHPACK(.stringTruncated) { _ = try d.decode([0x40, 0x05, 0x61]) }
        XCTAssertThrowsHPACK(.integerTruncated) { _ = try d.decode([0x40]) }
    }

    func testBadHuffmanInALiteralIsCompressionError() {
        var d = HPACKDecoder()
        XCTAssertThrowsHPACK(.huffmanEOS) { _ = try d.decode([0x00, 0x84, 0xff, 0xff, 0xff, 0xff, 0x00]) }
        XCTAssertThrowsHPACK(.huffmanPadding) { _ = try d.decode([0x00, 0x81, 0xff, 0x00]) }
    }

    func testTableSizeUpdateAtStartIsApplied() throws {
        var d = HPACKDecoder()
        _ = try d.decode(hex("400161 0162"))  // a: b indexed
        XCTAssertEqual(d.table.count, 1)
        let list = try d.decode([0x20, 0x3f, 0xe1, 0x1f, 0x82])  // update 0, update 4096, :method GET
        XCTAssertEqual(pairs(list), [[":method", "GET"]])
        XCTAssertEqual(d.table.count, 0)
        XCTAssertEqual(d.table.maxSize, 4096)
    }

    // RFC 7541 §4.2: the update "MUST occur at the beginning of the first header block".
    func testTableSizeUpdateAfterAFieldIsCompressionError() {
        var d = HPACKDecoder()
        XCTAssertThrowsHPACK(.tableSizeUpdateNotAtStart) { _ = try d.decode([0x82, 0x20]) }
    }

    // RFC 7541 §6.3: "The new maximum size MUST be lower than or equal to the limit".
    func testTableSizeUpdateAboveTheSettingIsCompressionError() {
        var d = HPACKDecoder(maxTableSize: 256)
        XCTAssertThrowsHPACK(.tableSizeUpdateTooLarge) { _ = try d.decode([0x3f, 0xe2, 0x01]) }  // 257
    }

    func testLoweredSettingRequiresAnUpdateInTheNextBlock() throws {
        var d = HPACKDecoder()
        d.setMaxTableSizeSetting(100)
        XCTAssertThrowsHPACK(.tableSizeUpdateMissing) { _ = try d.decode([0x82]) }
        XCTAssertThrowsHPACK(.tableSizeUpdateMissing) { _ = try d.decode([]) }
        XCTAssertEqual(try d.decode([0x3f, 0x45]).count, 0)  // update to 100 (31 + 69), no fields
        XCTAssertEqual(d.table.maxSize, 100)
        var d2 = HPACKDecoder()
        d2.setMaxTableSizeSetting(100)
        XCTAssertEqual(pairs(try d2.decode([0x3f, 0x41, 0x82])), [[":method", "GET"]])  // update to 96
        XCTAssertEqual(d2.table.maxSize, 96)
        XCTAssertEqual(pairs(try d2.decode([0x82])), [[":method", "GET"]])  // satisfied
    }

    func testRaisedSettingNeedsNoUpdate() throws {
        var d = HPACKDecoder(maxTableSize: 256)
        d.setMaxTableSizeSetting(4096)
        XCTAssertEqual(pairs(try d.decode([0x82])), [[":method", "GET"]])
        XCTAssertEqual(pairs(try d.decode([0x3f, 0xe1, 0x1f, 0x82])), [[":method", "GET"]])  // may now ask for 4096
    }

    // RFC 9113 §6.5.2: size = sum of name + value + 32.
    func testHeaderListAtTheLimitIsAccepted() throws {
        var d = HPACKDecoder(maxHeaderListSize: 42 + 42)  // two fields of 7 + 3 + 32
        XCTAssertEqual(try d.decode([0x82, 0x82]).count, 2)
    }

    func testHeaderListOverTheLimitIsAStreamErrorAndKeepsTheTableInStep() throws {
        var d = HPACKDecoder(maxHeaderListSize: 60)
        var list = HeaderList()
        // :method GET (42), then literal-with-indexing a: b (34) → 76 > 60.
        XCTAssertThrowsHPACK(.headerListTooLarge) {
            try hex("82 400161 0162").withUnsafeBytes { try d.decode($0, into: &list) }
        }
        XCTAssertEqual(list.count, 0, "a failed block leaves nothing behind")
        XCTAssertEqual(list.bytes.count, 0)
        XCTAssertEqual(rows(d.table), [["a", "b", "34"]], "the table still took the entry")
        XCTAssertEqual(HPACKError.headerListTooLarge.status, 431)
        XCTAssertFalse(HPACKError.headerListTooLarge.isConnectionError)
        // The connection goes on: the next block can refer to the entry.
        XCTAssertEqual(pairs(try d.decode([0xbe])), [["a", "b"]])
    }

    func testIndexedReferencesFarBeyondTheLimitAreAnHPACKBomb() throws {
        var d = HPACKDecoder(maxHeaderListSize: 1000)
        let big = [UInt8](repeating: 0x61, count: 900)
        var wire: [UInt8] = [0x40, 0x01, 0x62]
        IntegerCoding.append(big.count, prefixBits: 7, firstByte: 0, to: &wire)
        wire += big
        _ = try d.decode(wire)  // one 933-byte entry
        // Each 0xbe byte decodes to 933 bytes: 5 of them pass 4 × 1000.
        XCTAssertThrowsHPACK(.hpackBomb) { _ = try d.decode([UInt8](repeating: 0xbe, count: 5)) }
        XCTAssertEqual(HPACKError.hpackBomb.errorCode, .enhanceYourCalm)
    }

    func testDecodeAppendsAfterExistingFieldsWithCorrectSpans() throws {
        var d = HPACKDecoder()
        var list = HeaderList()
        try [UInt8]([0x82]).withUnsafeBytes { try d.decode($0, into: &list) }
        try [UInt8]([0x84]).withUnsafeBytes { try d.decode($0, into: &list) }
        XCTAssertEqual(pairs(list), [[":method", "GET"], [":path", "/"]])
    }

    func testSteadyStateReusesListCapacity() throws {
        var d = HPACKDecoder()
        var list = HeaderList(reservingBytes: 256, fields: 8)
        let wire = hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff")
        for _ in 0..<3 {
            list.removeAll()
            try wire.withUnsafeBytes { try d.decode($0, into: &list) }
        }
        let bytesCapacity = list.bytes.capacity, fieldsCapacity = list.fields.capacity
        for _ in 0..<100 {
            list.removeAll()
            try wire.withUnsafeBytes { try d.decode($0, into: &list) }
        }
        XCTAssertEqual(list.bytes.capacity, bytesCapacity)
        XCTAssertEqual(list.fields.capacity, fieldsCapacity)
    }
}
