import XCTest

@testable import HTTP1

/// chunk-size [ chunk-ext ] CRLF (RFC 9112 §7.1, §7.1.1), parsed directly.
final class ChunkSizeLineTests: XCTestCase {
    private func parse(_ s: String, maxExtension: Int = 1024) -> Result<String, H1Error> {
        Array(s).withUnsafeBytes { raw -> Result<String, H1Error> in
            do throws(H1Error) {
                switch try ChunkSizeLine.parse(Bytes(raw), from: 0, maxExtensionBytes: maxExtension) {
                case .needMore: return .success("more")
                case .complete(let size, let end): return .success("\(size)@\(end)")
                }
            } catch {
                return .failure(error)
            }
        }
    }

    func testSizeAndLineLength() {
        XCTAssertEqual(parse("1a\r\n"), .success("26@4"))
        XCTAssertEqual(parse("0\r\n\r\n"), .success("0@3"))
        XCTAssertEqual(parse("F;x=1\r\nabc"), .success("15@7"))
        XCTAssertEqual(parse("7fffffffffffffff\r\n"), .success("\(Int64.max)@18"))
    }

    func testIncompleteLineAsksForMore() {
        for prefix in ["", "1", "1a", "1a\r", "1;", "1;x=\"a", "0000000000000000"] {
            XCTAssertEqual(parse(prefix), .success("more"), prefix)
        }
    }

    func testBadPrefixFailsBeforeTheLineEnds() {
        XCTAssertEqual(parse("x"), .failure(.invalidChunkSize))
        XCTAssertEqual(parse("00000000000000000"), .failure(.chunkSizeOverflow))
        XCTAssertEqual(parse("8000000000000000"), .failure(.chunkSizeOverflow))
        XCTAssertEqual(parse("1;" + String(repeating: "e", count: 10), maxExtension: 8), .failure(.chunkExtensionTooLong))
    }

    func testExtensionGrammar() {
        let good = [";a", ";a=b", ";a=\"\"", ";a=\"b c\"", ";a=\"\\\"\"", " ;a", "\t; a", ";a ;b", ";a = b", ";a=b;c=d;e", ";a=\"\u{80}\""]
        for ext in good { XCTAssertEqual(parse("1\(ext)\r\n"), .success("1@\(ext.utf8.count + 3)"), ext.debugDescription) }
        let bad = [";", "x", ";a=", ";=b", ";a=b c", ";a=\"b", ";a=\"\\\"", ";a=@", ";a;", "; ", " ", ";a=\"\u{7F}\"", ";a=\"\t\"x"]
        for ext in bad { XCTAssertEqual(parse("1\(ext)\r\n"), .failure(.invalidChunkExtension), ext.debugDescription) }
    }
}
