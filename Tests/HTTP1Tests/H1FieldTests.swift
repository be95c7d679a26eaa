import Core
import XCTest

@testable import HTTP1

/// RFC 9112 §5 field-line syntax in request heads, the dropped names, and
/// the public validators.
final class H1FieldTests: XCTestCase {
    private func request(_ fields: String) -> String {
        "GET / HTTP/1.1\r\nHost: h\r\n\(fields)\r\n"
    }

    // MARK: Field lines in a head

    func testObsFoldIsRejected() {
        assertRejected(request("X: a\r\n  b\r\n"), 400, .obsFold)
        assertRejected(request("X: a\r\n\tb\r\n"), 400, .obsFold)
    }

    func testObsFoldOnFirstFieldLineIsRejected() {
        assertRejected("GET / HTTP/1.1\r\n Host: h\r\n\r\n", 400, .obsFold)
    }

    func testWhitespaceBetweenNameAndColonIsRejected() {
        assertRejected(request("X : a\r\n"), 400, .whitespaceBeforeColon)
        assertRejected(request("Content-Length\t: 1\r\n"), 400, .whitespaceBeforeColon)
    }

    func testEmptyFieldNameIsRejected() {
        assertRejected(request(": a\r\n"), 400, .invalidFieldName)
    }

    func testNonTokenFieldNameIsRejected() {
        assertRejected(request("X(y): a\r\n"), 400, .invalidFieldName)
        assertRejected(request("X\u{7F}: a\r\n"), 400, .invalidFieldName)
        assertRejected(Array("GET / HTTP/1.1\r\nHost: h\r\nX") + [0xC3, 0xA9] + Array(": a\r\n\r\n"), 400, .invalidFieldName)
    }

    func testFieldLineWithoutColonIsRejected() {
        assertRejected(request("NoColonHere\r\n"), 400, .missingColon)
    }

    func testNULInFieldValueIsRejected() {
        assertRejected(request("X: a\u{0}b\r\n"), 400, .invalidFieldValue)
    }

    func testControlCharacterInFieldValueIsRejected() {
        assertRejected(request("X: a\u{1}b\r\n"), 400, .invalidFieldValue)
        assertRejected(request("X: a\u{1B}b\r\n"), 400, .invalidFieldValue)
        assertRejected(request("X: a\u{7F}b\r\n"), 400, .invalidFieldValue)
    }

    func testHTABInFieldValueIsAccepted() throws {
        let r = try XCTUnwrap(assertAccepted(request("X: a\tb\r\n")))
        XCTAssertEqual(r.fields.last?.value, "a\tb")
    }

    func testColonInFieldValueIsAccepted() throws {
        let r = try XCTUnwrap(assertAccepted(request("X-Time: 12:30:00\r\n")))
        XCTAssertEqual(r.fields.last?.value, "12:30:00")
    }

    func testFieldNameWithUnderscoreIsDropped() throws {
        let r = try XCTUnwrap(assertAccepted(request("X_Forwarded_For: evil\r\nX-Forwarded-For: good\r\n")))
        XCTAssertEqual(r.fields.map(\.name), ["Host", "X-Forwarded-For"])
    }

    func testUnderscoreContentLengthIsDroppedAndNotFraming() throws {
        let r = try XCTUnwrap(assertAccepted(request("Content_Length: 5\r\n")))
        XCTAssertEqual(r.head.framing, H1BodyFraming.none)
    }

    func testProxyFieldIsDropped() throws {
        let r = try XCTUnwrap(assertAccepted(request("Proxy: http://evil\r\nPROXY: x\r\nProxy-Authorization: y\r\n")))
        XCTAssertEqual(r.fields.map(\.name), ["Host", "Proxy-Authorization"])
    }

    func testKnownFieldNamesGetTokensCaseInsensitively() throws {
        let r = try XCTUnwrap(assertAccepted(request(
            "cOnTeNt-TyPe: t\r\nCOOKIE: c\r\nTE: trailers\r\nTrailer: x\r\nKeep-Alive: 5\r\nProxy-Connection: k\r\nupgrade: u\r\n")))
        XCTAssertEqual(r.fields.map(\.token), [.host, .contentType, .cookie, .te, .trailer, .keepAlive, .proxyConnection, .upgrade])
    }

    // MARK: Public validators

    private func isToken(_ s: String) -> Bool { Array(s).withUnsafeBytes { H1Field.isToken($0) } }
    private func isValidValue(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { H1Field.isValidValue($0) } }

    func testIsTokenAcceptsEveryTchar() {
        XCTAssertTrue(isToken("!#$%&'*+-.^_`|~09azAZ"))
        XCTAssertTrue(isToken("Content-Type"))
    }

    func testIsTokenRejectsEmptyAndSeparators() {
        XCTAssertFalse(isToken(""))
        for c in ["(", ")", "<", ">", "@", ",", ";", ":", "\\", "\"", "/", "[", "]", "?", "=", "{", "}", " ", "\t"] {
            XCTAssertFalse(isToken("a\(c)b"), c)
        }
        XCTAssertFalse([UInt8]([0x61, 0x80]).withUnsafeBytes { H1Field.isToken($0) })
        XCTAssertFalse([UInt8]([0x61, 0x7F]).withUnsafeBytes { H1Field.isToken($0) })
    }

    func testIsValidValueAllowsVisibleSpaceTabAndObsText() {
        XCTAssertTrue(isValidValue([]))
        XCTAssertTrue(isValidValue(Array("text/html; charset=\"utf-8\"\t ")))
        XCTAssertTrue(isValidValue([0x80, 0xC3, 0xA9, 0xFF]))
    }

    func testIsValidValueRejectsEveryControlButHTAB() {
        for b in UInt8(0)...0x1F where b != 0x09 {
            XCTAssertFalse(isValidValue([0x61, b, 0x62]), "byte \(b)")
        }
        XCTAssertFalse(isValidValue([0x7F]))
        XCTAssertFalse(isValidValue(Array("a\r\nSet-Cookie: x")))
    }
}
