import Core
import XCTest

@testable import HTTP1

/// Head delimiting: line endings, leading empty lines, size and count limits.
final class HeadScannerTests: XCTestCase {
    // MARK: Leading empty lines (RFC 9112 §2.2)

    func testLeadingEmptyLinesAreIgnoredAndCounted() throws {
        let r = try XCTUnwrap(assertAccepted("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"))
        XCTAssertEqual(r.head.methodSpan.start, 4)
        XCTAssertEqual(text(r.bytes, r.head.path), "/")
    }

    func testEightLeadingEmptyLinesAreAccepted() {
        assertAccepted(String(repeating: "\r\n", count: 8) + "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    }

    func testMoreThanEightLeadingEmptyLinesAreRejected() {
        assertRejected(String(repeating: "\r\n", count: 9) + "GET / HTTP/1.1\r\nHost: h\r\n\r\n", 400, .tooManyEmptyLines)
    }

    func testLeadingBareLFIsRejected() {
        assertRejected("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400, .bareLF)
    }

    func testLeadingBareCRIsRejected() {
        assertRejected("\rGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400, .bareCR)
    }

    func testLeadingWhitespaceIsRejected() {
        assertRejected(" GET / HTTP/1.1\r\nHost: h\r\n\r\n", 400, .invalidMethod)
    }

    // MARK: Line endings (RFC 9112 §2.2)

    func testBareLFAfterRequestLineIsRejected() {
        assertRejected("GET / HTTP/1.1\nHost: h\r\n\r\n", 400, .bareLF)
    }

    func testBareLFAfterFieldLineIsRejected() {
        assertRejected("GET / HTTP/1.1\r\nHost: h\nX: y\r\n\r\n", 400, .bareLF)
    }

    func testBareLFAsEmptyLineIsRejected() {
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\n\n", 400, .bareLF)
    }

    func testBareCRAfterRequestLineIsRejected() {
        assertRejected("GET / HTTP/1.1\rHost: h\r\n\r\n", 400, .bareCR)
    }

    func testBareCRInFieldValueIsRejected() {
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", 400, .invalidFieldValue)
    }

    func testBareCRBeforeLineEndIsRejected() {
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\r\n\r\n", 400, .invalidFieldValue)
    }

    func testBareCRAsEmptyLineIsRejected() {
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\n\r\r\n\r\n", 400, .invalidFieldName)
    }

    func testBareCRInTargetIsRejected() {
        assertRejected("GET /a\rb HTTP/1.1\r\nHost: h\r\n\r\n", 400, .invalidTargetByte)
    }

    // MARK: Size limits

    func testHeadAtExactlyMaxHeadBytesIsAccepted() {
        var limits = H1Limits()
        limits.maxHeadBytes = 64
        let base = "GET / HTTP/1.1\r\nHost: h\r\nX: \r\n\r\n"
        let request = base.replacingX(count: 64 - base.utf8.count)
        XCTAssertEqual(request.utf8.count, 64)
        assertAccepted(request, limits: limits)
    }

    func testHeadOneByteOverMaxHeadBytesIsRejected() {
        var limits = H1Limits()
        limits.maxHeadBytes = 64
        let base = "GET / HTTP/1.1\r\nHost: h\r\nX: \r\n\r\n"
        assertRejected(base.replacingX(count: 65 - base.utf8.count), 431, .headTooLarge, limits: limits)
    }

    func testHeadOverMaxHeadBytesIsRejectedBeforeItEnds() {
        var limits = H1Limits()
        limits.maxHeadBytes = 64
        let partial = "GET / HTTP/1.1\r\nHost: h\r\nX: " + String(repeating: "a", count: 100)
        assertRejected(partial, 431, .headTooLarge, limits: limits)
    }

    func testEndlessRequestLineIsRejectedAtHeadLimit() {
        var limits = H1Limits()
        limits.maxHeadBytes = 64
        limits.maxTargetBytes = 1000
        assertRejected("GET /" + String(repeating: "a", count: 100), 431, .headTooLarge, limits: limits)
    }

    func testDefaultLimitAccepts32KiBHead() {
        let filler = String(repeating: "v", count: 1000)
        var request = "GET / HTTP/1.1\r\nHost: h\r\n"
        for i in 0..<30 { request += "X-\(i): \(filler)\r\n" }
        request += "\r\n"
        XCTAssertLessThan(request.utf8.count, 32 * 1024)
        assertAccepted(request)
    }

    func testHundredFieldsAreAccepted() {
        var request = "GET / HTTP/1.1\r\nHost: h\r\n"
        for i in 1..<100 { request += "X-\(i): v\r\n" }
        let r = assertAccepted(request + "\r\n")
        XCTAssertEqual(r?.fields.count, 100)
    }

    func testMoreThanMaxHeaderCountFieldsAreRejected() {
        var request = "GET / HTTP/1.1\r\nHost: h\r\n"
        for i in 0..<100 { request += "X-\(i): v\r\n" }
        assertRejected(request + "\r\n", 431, .tooManyFields)
    }

    func testTooManyFieldsAreRejectedBeforeTheHeadEnds() {
        var limits = H1Limits()
        limits.maxHeaderCount = 3
        assertRejected("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n", 431, .tooManyFields, limits: limits)
    }

    func testDroppedFieldsCountTowardLimits() {
        var limits = H1Limits()
        limits.maxHeaderCount = 2
        assertRejected("GET / HTTP/1.1\r\nHost: h\r\nX_A: 1\r\nProxy: p\r\n\r\n", 431, .tooManyFields, limits: limits)
    }
}

extension String {
    /// Replaces "X: " with "X: " followed by `count` letters.
    func replacingX(count: Int) -> String {
        var out = ""
        var done = false
        var rest = Substring(self)
        while let i = rest.firstIndex(of: "X"), !done {
            out += rest[..<i]
            out += "X: " + String(repeating: "a", count: count)
            rest = rest[rest.index(i, offsetBy: 3)...]
            done = true
        }
        return out + rest
    }
}

extension HeadScannerTests {
    func testHTTP11WordIsTheVersionText() {
        Array("HTTP/1.1".utf8).withUnsafeBytes { XCTAssertEqual(Bytes($0).load64(0), HeadScanner.http11) }
    }

    /// The "HTTP/1.1" word shortcut and the byte loop agree at every split
    /// and on near misses.
    func testVersionShortcutAndByteLoopAgree() {
        feedThreeWays(Array("GET / HTTP/1.1\r\nHost: h\r\n\r\n"))
        for version in ["HTTP/1.1x", "HTTP/1.1 ", "HTTP/1.1\n", "HTTP/1.0", "http/1.1", "HTTP/2.0", "HTTP/1.12"] {
            feedThreeWays(Array("GET / \(version)\r\nHost: h\r\n\r\n"))
        }
        assertRejected("GET / HTTP/1.1x\r\nHost: h\r\n\r\n", 400, .malformedVersion)
        assertRejected("GET / HTTP/1.1\nHost: h\r\n\r\n", 400, .bareLF)
        assertRejected("GET / HTTP/1.1\rHost: h\r\n\r\n", 400, .bareCR)
    }
}
