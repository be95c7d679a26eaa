import XCTest

@testable import HTTP1

final class HeadBytesTests: XCTestCase {
    func testDecimalHasNoLeadingZerosAndItsLengthIsExact() {
        let cases: [(UInt64, String)] = [
            (0, "0"), (7, "7"), (9, "9"), (10, "10"), (99, "99"), (100, "100"), (200, "200"), (65536, "65536"),
            (UInt64(Int64.max), "9223372036854775807"), (UInt64.max, "18446744073709551615"),
        ]
        for (value, expected) in cases {
            XCTAssertEqual(HeadBytes.decimalLength(value), expected.utf8.count, "\(value)")
            XCTAssertEqual(writtenText(length: expected.utf8.count) { p in
                var out = HeadBytes(p)
                out.put(decimal: value)
                return out.count
            }, expected)
        }
    }

    /// RFC 9112 §4: status-line = HTTP-version SP status-code SP [ reason-phrase ];
    /// the SP stays when the reason is empty.
    func testStatusLineKeepsTheSpaceBeforeAnEmptyReason() {
        XCTAssertEqual(writtenText(length: HeadBytes.statusLineLength(599, reasonCount: 0)) { p in
            var out = HeadBytes(p)
            out.putStatusLine(599, UnsafeRawBufferPointer(start: nil, count: 0))
            return out.count
        }, "HTTP/1.1 599 \r\n")
    }
}
