import CSys
import XCTest

@testable import Core

/// The byte-buffer writers the access log and the JSON server log use.
final class LogBytesTests: XCTestCase {
    private func text(_ build: (inout [UInt8]) -> Void) -> String {
        var out: [UInt8] = []
        build(&out)
        return String(decoding: out, as: UTF8.self)
    }

    private func raw(_ s: String) -> [UInt8] { Array(s.utf8) }

    func testDecimals() {
        XCTAssertEqual(text { $0.appendDecimal(0) }, "0")
        XCTAssertEqual(text { $0.appendDecimal(-42) }, "-42")
        XCTAssertEqual(text { $0.appendDecimal(Int64.max) }, "9223372036854775807")
        XCTAssertEqual(text { $0.appendDecimal(Int64.min) }, "-9223372036854775808")
        XCTAssertEqual(text { $0.appendDecimal(7, width: 6) }, "000007")
        XCTAssertEqual(text { $0.appendDecimal(0, width: 2) }, "00")
        XCTAssertEqual(text { $0.appendDecimal(123456, width: 6) }, "123456")
        XCTAssertEqual(text { $0.appendDecimal(1234567, width: 6) }, "1234567")
    }

    func testTextEscapingBackslashesQuotesAndHexesControls() {
        let input = raw("a\"b\\c\td\u{7f}é")
        XCTAssertEqual(text { o in input.withUnsafeBytes { o.appendEscapedText($0) } }, "a\\\"b\\\\c\\x09d\\x7fé")
    }

    /// RFC 8259 §7: `"`, `\` and U+0000 to U+001F must be escaped.
    func testJSONStringsEscapeWhatRFC8259Requires() {
        let input = raw("q\"b\\n\n\r\t\u{01}\u{1f} é€")
        let s = text { o in input.withUnsafeBytes { o.appendJSONString($0) } }
        XCTAssertEqual(s, "\"q\\\"b\\\\n\\n\\r\\t\\u0001\\u001f é€\"")
    }

    func testJSONStringsReplaceBytesThatAreNotUTF8() {
        let input: [UInt8] = [0x61, 0xE9, 0x62, 0xFF]  // Latin-1 é, then a byte UTF-8 never uses
        let s = text { o in input.withUnsafeBytes { o.appendJSONString($0) } }
        XCTAssertEqual(s, "\"a\u{FFFD}b\u{FFFD}\"")
    }

    func testJSONServerLogLine() {
        let line = Log.jsonLine(level: .warning, message: "say \"hi\"\n")
        XCTAssertTrue(line.hasPrefix("{\"time\": \""))
        XCTAssertTrue(line.hasSuffix("\", \"level\": \"WARNING\", \"pid\": \(csys_getpid()), \"message\": \"say \\\"hi\\\"\"}\n"), line)
        XCTAssertEqual(line.filter { $0 == "\n" }.count, 1)
        // "2026-11-30 14:00:00 +0000"
        let time = line.dropFirst(10).prefix(25)
        XCTAssertTrue(time.hasSuffix(" +0000"), String(time))
    }
}
