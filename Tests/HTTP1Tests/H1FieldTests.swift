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

/// The field-value scan reads eight bytes a step (`Bytes.controlOrDEL`) and
/// finishes byte by byte; a byte must get the same verdict wherever it falls
/// relative to those words and to the end of the head.
final class H1FieldValueWordScanTests: XCTestCase {
    private let filler = Array("abcdefghijklmnopqrstuvwxyz0123".utf8)

    /// A head whose last field value holds `byte` at `position` of 30 value
    /// bytes, with `trailing` more field lines after it (0: it is the last
    /// line, so the value's end falls in the byte-by-byte tail).
    private func head(_ byte: UInt8, at position: Int, trailing: Int) -> [UInt8] {
        var value = filler
        value[position] = byte
        var bytes = Array("GET / HTTP/1.1\r\nHost: h\r\nX-Long: ".utf8) + value + Array("\r\n".utf8)
        for i in 0..<trailing { bytes += Array("Y\(i): z\r\n".utf8) }
        return bytes + Array("\r\n".utf8)
    }

    func testEveryCTLAndDELIsRejectedAtEveryPosition() {
        let forbidden: [UInt8] = Array(0x00...0x08) + Array(0x0A...0x1F) + [0x7F]
        for trailing in [0, 2] {
            for position in 0..<filler.count {
                for byte in forbidden {
                    let input = head(byte, at: position, trailing: trailing)
                    // A LF makes the line end early at a bare LF; everything
                    // else is a bad value byte.
                    let expected: H1Error = byte == 0x0A ? .bareLF : .invalidFieldValue
                    input.withUnsafeBytes { raw in
                        var parser = H1HeadParser(limits: H1Limits())
                        let table = H1HeaderTable(capacity: 100)
                        XCTAssertEqual(parser.parse(raw, headers: table), .failed(expected),
                                       "byte \(byte) at \(position), \(trailing) lines after")
                    }
                }
            }
        }
    }

    func testHTABObsTextAndSPAreKeptAtEveryPosition() {
        for trailing in [0, 2] {
            for position in 0..<filler.count {
                for byte: UInt8 in [0x09, 0x20, 0x7E, 0x80, 0xFF] {
                    let input = head(byte, at: position, trailing: trailing)
                    var expected = filler
                    expected[position] = byte
                    // OWS at either end is trimmed off the value.
                    while let f = expected.first, f == 0x09 || f == 0x20 { expected.removeFirst() }
                    while let l = expected.last, l == 0x09 || l == 0x20 { expected.removeLast() }
                    input.withUnsafeBytes { raw in
                        var parser = H1HeadParser(limits: H1Limits())
                        let table = H1HeaderTable(capacity: 100)
                        guard case .complete = parser.parse(raw, headers: table) else {
                            return XCTFail("byte \(byte) at \(position) refused")
                        }
                        let v = table.value(1)
                        XCTAssertEqual(Array(raw[v.start..<v.end]), expected, "byte \(byte) at \(position)")
                        XCTAssertEqual(table.count, 2 + trailing)
                    }
                }
            }
        }
    }

    func testLongValuesWithTabsSplitEveryWay() throws {
        let value = "a\tb c\t\td" + String(repeating: "x\t", count: 12) + "\u{7E}end"
        let r = try XCTUnwrap(assertAccepted("GET / HTTP/1.1\r\nHost: h\r\nX: \t \(value) \t\r\nY: 1\r\n\r\n"))
        XCTAssertEqual(r.fields[1].value, value)
        XCTAssertEqual(r.fields[2].value, "1")
    }

    func testBareCRInALongValueIsRejected() {
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\nX: aaaaaaaaaaaa\rbbbbbbbbbbbb\r\n\r\n", 400, .invalidFieldValue)
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\nX: aaaaaaaaaaaa\r\r\n\r\n", 400, .invalidFieldValue)
    }

    /// The request-target is scanned by words too (`Bytes.notVCHAR`).
    func testEveryNonVCHARInALongTargetIsRefusedAtEveryPosition() {
        let path = Array("/abcdefghijklmnopqrstuvwxyz/0123".utf8)
        for position in 1..<path.count {
            for byte: UInt8 in [0x00, 0x09, 0x0D, 0x20, 0x7F, 0x80, 0xFF] {
                var target = path
                target[position] = byte
                let input = Array("GET ".utf8) + target + Array(" HTTP/1.1\r\nHost: h\r\n\r\n".utf8)
                input.withUnsafeBytes { raw in
                    var parser = H1HeadParser(limits: H1Limits())
                    let result = parser.parse(raw, headers: H1HeaderTable(capacity: 100))
                    // SP ends the target early: what follows is no version.
                    let expected: H1Error = byte == 0x20 ? .malformedVersion : .invalidTargetByte
                    XCTAssertEqual(result, .failed(expected), "byte \(byte) at \(position)")
                }
            }
        }
    }
}
