import Core
import XCTest

@testable import WebSocket

/// Sec-WebSocket-Protocol = 1#token (RFC 6455 §4.1 item 10, §11.3.4).
final class ProtocolListReaderTests: XCTestCase {
    func testTokensAreReadInOrder() {
        XCTAssertEqual(read("chat, superchat"), ["chat", "superchat"])
        XCTAssertEqual(read("v2.bookings.example.net"), ["v2.bookings.example.net"])
    }

    func testEmptyElementsAndWhitespaceAreSkipped() {
        // RFC 9110 §5.6.1: recipients MUST accept empty list elements.
        XCTAssertEqual(read(" , a ,, \tb ,"), ["a", "b"])
        XCTAssertEqual(read(""), [])
    }

    func testNonTokensAre400() {
        for bad in ["a b", "chat;v=1", "\"quoted\"", "a,b c", "caf\u{E9}", "a/b"] {
            XCTAssertEqual(read(bad), nil, bad)
        }
        XCTAssertEqual(HandshakeRejection.malformedProtocolList.status, 400)
    }

    private func read(_ text: String) -> [String]? {
        let value = Array(text.utf8)
        return value.withUnsafeBytes { raw -> [String]? in
            var reader = ProtocolListReader(raw)
            var out: [String] = []
            do throws(HandshakeRejection) {
                while let span = try reader.next() { out.append(String(decoding: value[span.start..<span.end], as: UTF8.self)) }
            } catch {
                XCTAssertEqual(error, .malformedProtocolList)
                return nil
            }
            return out
        }
    }
}
