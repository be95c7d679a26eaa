import XCTest
@testable import Core

final class StaticStringSameTextTests: XCTestCase {
    private static let constant: StaticString = "invalid Content-Length"

    func testOneConstantHasItsOwnText() {
        XCTAssertTrue(Self.constant.sameText(as: Self.constant))
    }

    func testSeparateLiteralsWithTheSameBytesAreTheSameText() {
        XCTAssertTrue(Self.constant.sameText(as: "invalid Content-Length"))
        XCTAssertTrue(StaticString("").sameText(as: ""))
    }

    func testDifferentBytesOrLengthsAreDifferentText() {
        XCTAssertFalse(Self.constant.sameText(as: "invalid Content-Lengtx"))
        XCTAssertFalse(Self.constant.sameText(as: "invalid Content-Length "))
        XCTAssertFalse(Self.constant.sameText(as: "invalid"))
        XCTAssertFalse(StaticString("").sameText(as: "a"))
    }

    func testNonASCIITextComparesByItsUTF8() {
        XCTAssertTrue(StaticString("caf\u{e9}").sameText(as: "café"))
        XCTAssertFalse(StaticString("cafe").sameText(as: "café"))
    }
}
