import XCTest

@testable import Core

final class ReasonPhraseTests: XCTestCase {
    /// RFC 9110 §15 registry phrases; an unregistered code has none.
    func testRegisteredCodesHaveTheRegistryPhraseOthersNone() {
        let cases: [(Int, String)] = [
            (100, "Continue"), (101, "Switching Protocols"), (103, "Early Hints"), (200, "OK"),
            (204, "No Content"), (304, "Not Modified"), (404, "Not Found"), (413, "Content Too Large"),
            (431, "Request Header Fields Too Large"), (500, "Internal Server Error"),
            (505, "HTTP Version Not Supported"), (299, ""), (599, ""), (999, ""),
        ]
        for (status, phrase) in cases {
            XCTAssertEqual(ReasonPhrase.reason(status).description, phrase, "\(status)")
        }
    }
}
