import XCTest
@testable import HTTP2

final class HTTP2ErrorCodeTests: XCTestCase {
    func testNamedCodesHaveRFC9113Values() {
        XCTAssertEqual(HTTP2ErrorCode.noError.rawValue, 0)
        XCTAssertEqual(HTTP2ErrorCode.compressionError.rawValue, 9)
        XCTAssertEqual(HTTP2ErrorCode.http11Required.rawValue, 0xd)
    }

    func testUnknownCodeIsRepresentable() {
        let code = HTTP2ErrorCode(rawValue: 0xdead_beef)
        XCTAssertEqual(code.rawValue, 0xdead_beef)
        XCTAssertNotEqual(code, .protocolError)
    }
}
