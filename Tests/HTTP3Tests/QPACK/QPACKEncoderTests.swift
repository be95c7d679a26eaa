// The server encoder (static table and literals only, RFC 9204 §4.5) and the
// static table (Appendix A).

import XCTest
import HTTPFields
@testable import HTTP3

final class QPACKEncoderTests: XCTestCase {
    func testStaticTableSpotChecks() {
        XCTAssertEqual(QPACKStaticTable.count, 99)
        func e(_ i: Int) -> [String] { let x = QPACKStaticTable.entry(i); return ["\(x.name)", "\(x.value)"] }
        XCTAssertEqual(e(0), [":authority", ""])
        XCTAssertEqual(e(1), [":path", "/"])
        XCTAssertEqual(e(17), [":method", "GET"])
        XCTAssertEqual(e(25), [":status", "200"])
        XCTAssertEqual(e(29), ["accept", "*/*"])
        XCTAssertEqual(e(52), ["content-type", "text/html; charset=utf-8"])
        XCTAssertEqual(e(85), ["content-security-policy", "script-src 'none'; object-src 'none'; base-uri 'none'"])
        XCTAssertEqual(e(98), ["x-frame-options", "sameorigin"])
    }

    func testExactStaticMatchIsOneIndexedByte() {
        XCTAssertEqual(QPACKEncoder().section([(":status", "200")]), hex("0000 d9"))
        XCTAssertEqual(QPACKEncoder().section([(":status", "404")]), hex("0000 db"))
    }

    // §4.5.4 with T = 1; the value Huffman-coded when shorter ("/index.html"
    // is 11 bytes raw, 8 Huffman).
    func testStaticNameReferenceWithHuffmanValue() throws {
        let s = QPACKEncoder().section([(":path", "/index.html")])
        XCTAssertEqual(Array(s[..<4]), hex("0000 5188"))
        var d = QPACKDecoder()
        XCTAssertEqual(try d.decode(s, stream: 0), [[":path", "/index.html"]])
    }

    // §4.5.6, raw when Huffman is not shorter.
    func testLiteralNameIsRawWhenHuffmanIsLonger() {
        XCTAssertEqual(QPACKEncoder().section([("\u{7f}", "\u{7f}")]), hex("0000 21 7f 01 7f"))
    }

    func testNeverIndexedSetsTheNBit() throws {
        let s = QPACKEncoder().section([("set-cookie", "a=b"), ("x-secret", "s")], neverIndexed: true)
        XCTAssertEqual(s[2] & 0xf0, 0x70, "01NT with N and T")
        var d = QPACKDecoder()
        var list = HeaderList()
        _ = try s.withUnsafeBytes { try d.decodeFieldSection($0, stream: 0, into: &list) }
        XCTAssertEqual(pairs(list), [["set-cookie", "a=b"], ["x-secret", "s"]])
        XCTAssertTrue(list.fields.allSatisfy(\.isNeverIndexed))
        XCTAssertEqual(d.decoderStream(), [])
    }

    func testEncodeDecodeRoundTrip() throws {
        let fields = [(":status", "200"), ("content-type", "application/json"), ("content-length", "1234"),
                      ("x-custom", "v\u{1}\u{ff}"), ("server", "peregrine"), ("date", "Wed, 02 Dec 2026 06:00:00 GMT")]
        var d = QPACKDecoder()
        XCTAssertEqual(try d.decode(QPACKEncoder().section(fields), stream: 0), fields.map { [$0.0, $0.1] })
    }
}
