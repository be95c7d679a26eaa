import XCTest

@testable import WebSocket

/// The element steps of `#element` lists (RFC 9110 §5.6.1).
final class FieldSyntaxListElementsTests: XCTestCase {
    func testSkipToListElementPassesOWSAndEmptyElements() {
        // §5.6.1: "a recipient MUST accept empty list elements".
        XCTAssertEqual(skip(" ,\t, a", from: 0), 5)
        XCTAssertEqual(skip("a", from: 0), 0)
        XCTAssertEqual(skip("a, b", from: 2), 3)
    }

    func testSkipToListElementAnswersFalseAtTheEnd() {
        XCTAssertNil(skip("", from: 0))
        XCTAssertNil(skip(" , ,\t", from: 0))
        XCTAssertNil(skip("a ,", from: 1))
    }

    func testEndListElementTakesTheEndOrOneComma() {
        XCTAssertEqual(end("a", from: 1), 1)
        XCTAssertEqual(end("a \t", from: 1), 3)
        XCTAssertEqual(end("a , b", from: 1), 3)
        XCTAssertEqual(end("a,,b", from: 1), 2)
    }

    func testEndListElementRefusesAnythingElseAfterAnElement() {
        XCTAssertNil(end("a b", from: 1))
        XCTAssertNil(end("a;b", from: 1))
    }

    private func skip(_ text: String, from start: Int) -> Int? {
        Array(text.utf8).withUnsafeBytes { b in
            var i = start
            return FieldSyntax.skipToListElement(b, &i) ? i : nil
        }
    }

    private func end(_ text: String, from start: Int) -> Int? {
        Array(text.utf8).withUnsafeBytes { b in
            var i = start
            return FieldSyntax.endListElement(b, &i) ? i : nil
        }
    }
}
