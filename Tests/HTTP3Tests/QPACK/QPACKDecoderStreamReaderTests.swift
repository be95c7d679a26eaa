// The client's decoder stream as our (non-inserting) encoder reads it
// (RFC 9204 §4.4).

import XCTest
@testable import HTTP3

final class QPACKDecoderStreamReaderTests: XCTestCase {
    func testStreamCancellationIsAcceptedAcrossSplits() throws {
        let wire = hex("48 7f 81 01")  // cancel 8; cancel 63 + 129 = 192
        for cut in 0 ... wire.count {
            var r = QPACKDecoderStreamReader()
            var got = try Array(wire[..<cut]).withUnsafeBytes { try r.read($0) }
            got += try Array(wire[cut...]).withUnsafeBytes { try r.read($0) }
            XCTAssertEqual(got, [8, 192], "cut \(cut)")
        }
    }

    // §4.4.1: nothing of ours is ever unacknowledged.
    func testSectionAcknowledgmentIsDecoderStreamError() {
        var r = QPACKDecoderStreamReader()
        XCTAssertThrowsH3(.qpackUnexpectedAcknowledgment) { _ = try hex("84").withUnsafeBytes { try r.read($0) } }
        XCTAssertEqual(H3Error.qpackUnexpectedAcknowledgment.code, .qpackDecoderStreamError)
    }

    // §4.4.3: zero, or past the zero inserts we sent.
    func testInsertCountIncrementIsDecoderStreamError() {
        for wire in [hex("00"), hex("01")] {
            var r = QPACKDecoderStreamReader()
            XCTAssertThrowsH3(.qpackBadInsertCountIncrement) { _ = try wire.withUnsafeBytes { try r.read($0) } }
        }
    }

    func testOverflowIsDecoderStreamError() {
        var r = QPACKDecoderStreamReader()
        XCTAssertThrowsH3(H3Error(.integerOverflow, in: .decoderStream)) { _ = try hex("7f ffffffff0f").withUnsafeBytes { try r.read($0) } }
    }
}
