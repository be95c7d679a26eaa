import XCTest

@testable import WebSocket

/// RFC 6455 §7.4.1, §7.4.2 and the IANA registry (§11.7): which close codes
/// may appear on the wire.
final class CloseCodeTests: XCTestCase {
    func testDefinedAndRegisteredCodesAreValidOnTheWire() {
        for code: UInt16 in [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999] {
            XCTAssertTrue(CloseCode(rawValue: code).isValidOnWire, "\(code)")
        }
    }

    func testReservedNeverSentAndOutOfRangeCodesAreInvalidOnTheWire() {
        // 0–999 unused; 1004 reserved; 1005/1006/1015 "MUST NOT be set";
        // 1016–2999 unassigned; 5000+ outside every range.
        for code: UInt16 in [0, 1, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535] {
            XCTAssertFalse(CloseCode(rawValue: code).isValidOnWire, "\(code)")
        }
    }

    func testErrorReasonsFitInACloseFrame() {
        XCTAssertLessThanOrEqual(WebSocketError.protocolErrorExample.reason.utf8CodeUnitCount, 123)
    }
}

extension WebSocketError {
    static let protocolErrorExample = WebSocketError(closeCode: .protocolError, reason: "example")
}
