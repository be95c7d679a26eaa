import XCTest

@testable import HTTP1

/// #element lists (RFC 9110 §5.6.1): elements split on commas, OWS trimmed.
final class ListElementsTests: XCTestCase {
    private func elements(_ s: String) -> [String] {
        let bytes = Array(s)
        return bytes.withUnsafeBytes { raw in
            var list = ListElements(Bytes(raw), start: 0, end: raw.count)
            var out: [String] = []
            while let e = list.next() { out.append(String(decoding: bytes[e.start..<e.end], as: UTF8.self)) }
            return out
        }
    }

    func testElementsAreTrimmed() {
        XCTAssertEqual(elements("a, b ,\tc\t"), ["a", "b", "c"])
        XCTAssertEqual(elements("one"), ["one"])
        XCTAssertEqual(elements("a b , c"), ["a b", "c"])
    }

    func testEmptyElementsAreReported() {
        XCTAssertEqual(elements(""), [""])
        XCTAssertEqual(elements(","), ["", ""])
        XCTAssertEqual(elements("a,,b"), ["a", "", "b"])
        XCTAssertEqual(elements(" , a ,"), ["", "a", ""])
    }
}
