import XCTest

@testable import WebSocket

/// Base64 against RFC 4648 §10 "Test Vectors"
/// (https://www.rfc-editor.org/rfc/rfc4648#section-10), and the strict
/// decoding rules of §3.3 and §3.5.
final class Base64Tests: XCTestCase {
    static let vectors: [(String, String)] = [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ]

    func testRFC4648Section10VectorsEncode() {
        for (plain, encoded) in Self.vectors {
            XCTAssertEqual(encode(Array(plain)), encoded)
            XCTAssertEqual(Base64.encodedLength(plain.utf8.count), encoded.utf8.count)
        }
    }

    func testRFC4648Section10VectorsDecode() {
        for (plain, encoded) in Self.vectors {
            XCTAssertEqual(decode(encoded), Array(plain), encoded)
        }
    }

    func testEveryByteValueRoundTrips() {
        let all = (0...255).map { UInt8($0) }
        for n in [1, 2, 3, 254, 255, 256] {
            let input = Array(all.prefix(n))
            XCTAssertEqual(decode(encode(input)), input)
        }
        XCTAssertEqual(encode([0xFB, 0xFF]), "+/8=")
    }

    func testLengthNotAMultipleOfFourIsRefused() {
        for bad in ["Zg", "Zg=", "Zm9vY", "Zm9vYmFy="] { XCTAssertNil(decode(bad), bad) }
    }

    func testCharactersOutsideTheAlphabetAreRefused() {
        // §3.3: "Implementations MUST reject the encoded data if it contains
        // characters outside the base alphabet" (when not told otherwise).
        for bad in ["Zm9v\r\nYmFy", "Zm 9", "Zm-v", "Zm_v", "Z===", "=Zm9", "Zm=v", "Zg==Zg=="] { XCTAssertNil(decode(bad), bad) }
    }

    func testNonCanonicalPadBitsAreRefused() {
        // §3.5: "Zh==" and "Zm9=" decode to "f"/"fo" only if the pad bits are ignored.
        XCTAssertNil(decode("Zh=="))
        XCTAssertNil(decode("Zm9="))
    }

    private func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8](repeating: 0, count: Base64.encodedLength(bytes.count))
        let n = out.withUnsafeMutableBytes { o in bytes.withUnsafeBytes { Base64.encode($0, into: o) } }
        return String(decoding: out[..<n], as: UTF8.self)
    }

    private func decode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        var out = [UInt8](repeating: 0, count: Base64.maxDecodedLength(input.count))
        guard let n = out.withUnsafeMutableBytes({ o in input.withUnsafeBytes { Base64.decode($0, into: o) } }) else { return nil }
        return Array(out[..<n])
    }
}
