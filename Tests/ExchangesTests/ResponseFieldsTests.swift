import XCTest
@testable import Exchanges

/// The rules for the response fields an application gives (RFC 9110 §5.1,
/// §5.5, §5.6.2, §7.6.1, §8.6), shared by both gateways.
final class ResponseFieldsTests: XCTestCase {
    func role(_ name: StaticString, _ value: StaticString) -> Result<ResponseFieldRole, ResponseFieldError> {
        let n = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        let v = UnsafeRawBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount)
        do { return .success(try ResponseFields.role(name: n, value: v)) } catch { return .failure(error) }
    }

    func testOrdinaryFieldsPassIncludingObsTextAndTabs() {
        XCTAssertEqual(role("Content-Type", "text/plain"), .success(.regular))
        XCTAssertEqual(role("x-a", "a\tb"), .success(.regular))
        XCTAssertEqual(role("x-a", ""), .success(.regular))
        XCTAssertEqual(role("x-latin", "caf\u{e9}"), .success(.regular))  // UTF-8 bytes >= 0x80: obs-text
    }

    func testNamesMustBeTokens() {
        for name: StaticString in ["", "X Bad", "X-Bad:", "X-Bad\r\nInjected", "x(y)", "x\u{7f}"] {
            XCTAssertEqual(role(name, "v"), .failure(.invalidName), "\(name)")
        }
        XCTAssertEqual(role("!#$%&'*+-.^_`|~09AZaz", "v"), .success(.regular))
    }

    func testValuesMustHoldNoControlCharacters() {
        // RFC 9110 §5.5: CR, LF and NUL would end the field line (response splitting).
        for value: StaticString in ["a\rb", "a\nb", "a\0b", "a\r\nSet-Cookie: x=1", "\u{7f}", "\u{1}"] {
            XCTAssertEqual(role("X-Bad", value), .failure(.controlCharacter))
        }
    }

    func testContentLengthIsReadOut() {
        XCTAssertEqual(role("Content-Length", "42"), .success(.contentLength(42)))
        XCTAssertEqual(role("content-length", " 7 "), .success(.contentLength(7)))
        for value: StaticString in ["", "x", "-1", "4 2", "1, 1", "1234567890123456789"] {
            XCTAssertEqual(role("CONTENT-LENGTH", value), .failure(.invalidContentLength), "\(value)")
        }
    }

    func testHopByHopAndFramingFieldsAreTheServers() {
        XCTAssertEqual(role("Connection", "close"), .success(.connection(close: true)))
        XCTAssertEqual(role("connection", "Upgrade, CLOSE"), .success(.connection(close: true)))
        XCTAssertEqual(role("Connection", "keep-alive"), .success(.connection(close: false)))
        XCTAssertEqual(role("Connection", "closed"), .success(.connection(close: false)))
        XCTAssertEqual(role("Transfer-Encoding", "chunked"), .success(.framing))
        XCTAssertEqual(role("Keep-Alive", "timeout=5"), .success(.framing))
    }

    func testServerOwnedNamesMatchTheRoles() {
        for name: StaticString in ["Content-Length", "TRANSFER-ENCODING", "connection", "Keep-Alive"] {
            XCTAssertTrue(ResponseFields.isServerOwned(UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)))
        }
        for name: StaticString in ["Content-Type", "x-connection", "keep-alives", "date"] {
            XCTAssertFalse(ResponseFields.isServerOwned(UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)))
        }
    }
}
