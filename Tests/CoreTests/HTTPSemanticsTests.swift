import XCTest
@testable import Core

/// The RFC 9110 rules every HTTP version's framing shares.
final class HTTPSemanticsTests: XCTestCase {
    func testInformationalNoContentAndNotModifiedHaveNoContent() {
        // RFC 9110 §6.4.1.
        for status in [100, 101, 103, 199, 204, 304] { XCTAssertTrue(HTTPSemantics.statusHasNoContent(status), "\(status)") }
        for status in [200, 201, 205, 206, 301, 404, 500, 999] { XCTAssertFalse(HTTPSemantics.statusHasNoContent(status), "\(status)") }
    }

    func testHeadResponsesAreBodylessWhateverTheStatus() {
        // RFC 9110 §9.3.2.
        XCTAssertTrue(HTTPSemantics.isBodyless(status: 200, isHead: true))
        XCTAssertTrue(HTTPSemantics.isBodyless(status: 404, isHead: true))
        XCTAssertFalse(HTTPSemantics.isBodyless(status: 200, isHead: false))
        XCTAssertTrue(HTTPSemantics.isBodyless(status: 304, isHead: false))
    }

    func testFinalStatusesAreTwoHundredToNineNineNine() {
        // RFC 9110 §15, §15.2.
        for status in [200, 299, 599, 999] { XCTAssertTrue(HTTPSemantics.isFinalStatus(status)) }
        for status in [-1, 0, 99, 100, 101, 199, 1000] { XCTAssertFalse(HTTPSemantics.isFinalStatus(status)) }
    }

    func testDateFieldNameInAnyCase() {
        // RFC 9110 §5.1: field names are case-insensitive.
        func isDate(_ s: StaticString) -> Bool {
            HTTPSemantics.isDateField(UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
        }
        XCTAssertTrue(isDate("date"))
        XCTAssertTrue(isDate("Date"))
        XCTAssertTrue(isDate("DATE"))
        XCTAssertFalse(isDate("dat"))
        XCTAssertFalse(isDate("dates"))
        XCTAssertFalse(isDate("data"))
        XCTAssertFalse(isDate(""))
    }
}
