import XCTest

@testable import HTTP1

final class H1FieldLinesTests: XCTestCase {
    /// RFC 9112 §5: each field line is name ":" SP value CRLF, in the given order.
    func testFieldLinesAreWrittenInOrderWithColonSpaceAndCRLF() {
        withFields([StaticField("x-a", "1"), StaticField("set-cookie", "k=v; Path=/"), StaticField("x-empty", "")]) { fields in
            let lines = H1FieldLines(fields)
            XCTAssertEqual(writtenText(length: lines.length) { lines.write(into: $0) },
                           "x-a: 1\r\nset-cookie: k=v; Path=/\r\nx-empty: \r\n")
        }
    }

    func testNoFieldsWriteNothing() {
        withFields([]) { fields in
            let lines = H1FieldLines(fields)
            XCTAssertEqual(lines.length, 0)
            XCTAssertEqual(writtenText(length: 0) { lines.write(into: $0) }, "")
        }
    }
}
