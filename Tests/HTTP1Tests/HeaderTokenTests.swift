import XCTest

@testable import HTTP1

final class HeaderTokenTests: XCTestCase {
    private func token(_ name: String) -> HeaderToken {
        Array(name).withUnsafeBytes { HeaderToken.recognise(Bytes($0), 0, $0.count) }
    }

    func testEveryKnownNameIsRecognisedInAnyCase() {
        let known: [(String, HeaderToken)] = [
            ("host", .host), ("content-length", .contentLength), ("transfer-encoding", .transferEncoding),
            ("connection", .connection), ("expect", .expect), ("upgrade", .upgrade), ("content-type", .contentType),
            ("cookie", .cookie), ("te", .te), ("trailer", .trailer), ("keep-alive", .keepAlive),
            ("proxy-connection", .proxyConnection),
        ]
        for (name, expected) in known {
            XCTAssertEqual(token(name), expected, name)
            XCTAssertEqual(token(name.uppercased()), expected, name)
        }
        XCTAssertEqual(Set(known.map(\.1.rawValue)).count, known.count, "tokens are distinct")
    }

    func testNearMissesAreOther() {
        for name in ["hos", "hostt", "content-lengt", "content_length", "transfer-encodinh", "x", "", "t", "tf", "cookiee", "proxy"] {
            XCTAssertEqual(token(name), .other, name)
        }
    }

    /// Lowercasing must not fold bytes that merely differ by 0x20 outside A-Z.
    func testNonLettersDoNotFoldIntoLetters() {
        XCTAssertEqual(token("\u{0}e"), .other)
        XCTAssertEqual(token("t\u{5}"), .other)
    }
}
