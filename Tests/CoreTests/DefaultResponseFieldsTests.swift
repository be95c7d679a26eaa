import XCTest

@testable import Core

/// The operator's default response fields (`--header`, `--server-header`):
/// laid out once, written whole or without the ones an application
/// overrode.
final class DefaultResponseFieldsTests: XCTestCase {
    private func fields(_ pairs: [(String, String)]) -> DefaultResponseFields {
        DefaultResponseFields(pairs.map { (Array($0.0.utf8), Array($0.1.utf8)) })
    }

    private func text(_ b: UnsafeRawBufferPointer) -> String { String(decoding: b, as: UTF8.self) }

    private func written(_ lines: DefaultFieldLines) -> String {
        var buffer = [UInt8](repeating: 0xEE, count: lines.length + 8)
        let n = buffer.withUnsafeMutableBytes { lines.write(into: $0.baseAddress!) }
        XCTAssertEqual(n, lines.length, "wrote other than its declared length")
        XCTAssertTrue(buffer[n...].allSatisfy { $0 == 0xEE }, "wrote past its length")
        return String(decoding: buffer[..<n], as: UTF8.self)
    }

    private static let sample = [("x-frame-options", "DENY"), ("x-a", "1"), ("x-a", ""), ("server", "p")]

    func testLinesAreLaidOutInTheOrderGiven() {
        let f = fields(Self.sample)
        XCTAssertEqual(f.count, 4)
        XCTAssertEqual(text(f.name(0)), "x-frame-options")
        XCTAssertEqual(text(f.value(0)), "DENY")
        XCTAssertEqual(text(f.value(2)), "")
        XCTAssertEqual(text(f.line(1)), "x-a: 1\r\n")
        XCTAssertEqual(f.totalLength, 23 + 8 + 7 + 11)
        XCTAssertEqual(written(f.lines(except: 0)), "x-frame-options: DENY\r\nx-a: 1\r\nx-a: \r\nserver: p\r\n")
    }

    /// RFC 9110 §5.1: names are case-insensitive, so `X-A` overrides both
    /// `x-a` defaults and nothing else.
    func testMatchingIsCaseInsensitiveAndCoversEveryFieldOfTheName() {
        let f = fields(Self.sample)
        let name: StaticString = "X-A"
        XCTAssertEqual(f.matching(UnsafeRawBufferPointer(start: name.utf8Start, count: 3)), 0b0110)
        let other: StaticString = "x-b"
        XCTAssertEqual(f.matching(UnsafeRawBufferPointer(start: other.utf8Start, count: 3)), 0)
        let longer: StaticString = "x-ab"
        XCTAssertEqual(f.matching(UnsafeRawBufferPointer(start: longer.utf8Start, count: 4)), 0)
        let server: StaticString = "SERVER"
        XCTAssertEqual(f.matching(UnsafeRawBufferPointer(start: server.utf8Start, count: 6)), 0b1000)
    }

    func testSuppressedLinesAreLeftOutOfWritingAndIteration() {
        let f = fields(Self.sample)
        let lines = f.lines(except: 0b0110)
        XCTAssertEqual(written(lines), "x-frame-options: DENY\r\nserver: p\r\n")
        var seen: [String] = []
        lines.forEach { seen.append(text($0) + "=" + text($1)) }
        XCTAssertEqual(seen, ["x-frame-options=DENY", "server=p"])
        XCTAssertEqual(written(f.lines(except: 0b1111)), "")
    }

    func testNoFieldsWriteNothing() {
        let f = fields([])
        XCTAssertTrue(f.isEmpty)
        XCTAssertEqual(written(f.lines(except: 0)), "")
        XCTAssertFalse(f.contains(name: "alt-svc"))
    }

    func testContainsFindsANameGiven() {
        XCTAssertTrue(fields([("alt-svc", "clear")]).contains(name: "alt-svc"))
        XCTAssertFalse(fields(Self.sample).contains(name: "alt-svc"))
    }

    /// A mask is one word: field 63 is the last one it can leave out.
    func testTheLastOfSixtyFourFieldsCanBeSuppressed() {
        let f = fields((0..<64).map { ("x-\($0)", "v") })
        let name: StaticString = "x-63"
        let mask = f.matching(UnsafeRawBufferPointer(start: name.utf8Start, count: 4))
        XCTAssertEqual(mask, 1 << 63)
        XCTAssertEqual(f.lines(except: mask).length, f.totalLength - 9)
    }
}
