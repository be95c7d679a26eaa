import XCTest

@testable import HTTP1

final class H1LimitsTests: XCTestCase {
    func testDefaults() {
        let limits = H1Limits()
        XCTAssertEqual(limits.maxHeadBytes, 32 * 1024)
        XCTAssertEqual(limits.maxHeaderCount, 100)
        XCTAssertEqual(limits.maxTargetBytes, 16 * 1024)
        XCTAssertEqual(limits.maxTrailerBytes, 8 * 1024)
        XCTAssertEqual(limits.maxChunkExtensionBytes, 1024)
        XCTAssertEqual(H1Limits.maxLeadingEmptyLines, 8)
        XCTAssertEqual(H1Limits.maxMethodBytes, 64)
    }

    /// RFC 9112 §3: "It is RECOMMENDED that all HTTP senders and recipients
    /// support, at a minimum, request-line lengths of 8000 octets."
    func testDefaultTargetLimitAllowsRFCMinimum() {
        XCTAssertGreaterThanOrEqual(H1Limits().maxTargetBytes, 8000)
        XCTAssertLessThan(H1Limits().maxTargetBytes, H1Limits().maxHeadBytes)
    }
}
