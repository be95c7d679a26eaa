import XCTest

@testable import HTTP1

/// The bit masks against the ABNF they encode.
final class ByteClassTests: XCTestCase {
    private func isAlpha(_ b: UInt8) -> Bool { (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) }
    private func isDigit(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) }

    func testTcharMatchesRFC9110() {
        let specials = Set("!#$%&'*+-.^_`|~".utf8)
        for b in UInt8.min...UInt8.max {
            XCTAssertEqual(ByteClass.isTchar(b), isAlpha(b) || isDigit(b) || specials.contains(b), "byte \(b)")
        }
    }

    func testRegNameCharMatchesRFC3986() {
        let unreservedAndSubDelims = Set("-._~!$&'()*+,;=".utf8)
        for b in UInt8.min...UInt8.max {
            XCTAssertEqual(ByteClass.isRegNameChar(b), isAlpha(b) || isDigit(b) || unreservedAndSubDelims.contains(b), "byte \(b)")
        }
    }

    func testFieldValueByteAndTargetByte() {
        for b in UInt8.min...UInt8.max {
            XCTAssertEqual(ByteClass.isFieldValueByte(b), b == 9 || (b >= 0x20 && b != 0x7F), "byte \(b)")
            XCTAssertEqual(ByteClass.isTargetByte(b), b >= 0x21 && b <= 0x7E, "byte \(b)")
        }
    }

    func testHexValueAndLowercase() {
        for b in UInt8.min...UInt8.max {
            let expected = UInt8(String(UnicodeScalar(b)), radix: 16)
            XCTAssertEqual(ByteClass.hexValue(b), expected, "byte \(b)")
            let lower = (0x41...0x5A).contains(b) ? b + 0x20 : b
            XCTAssertEqual(ByteClass.lowercased(b), lower, "byte \(b)")
        }
    }
}

/// The class table the hot loops use, against the masks above, and the
/// word-at-a-time tests against their byte-at-a-time definitions.
final class ByteClassTableTests: XCTestCase {
    func testTableMatchesTheMasks() {
        XCTAssertEqual(ByteClassTable.table.count, 256)
        for b in UInt8.min...UInt8.max {
            XCTAssertEqual(ByteClassTable.has(b, ByteClassTable.tchar), ByteClass.isTchar(b), "byte \(b)")
            XCTAssertEqual(ByteClassTable.has(b, ByteClassTable.nameByte), ByteClass.isTchar(b) && b != 0x5F, "byte \(b)")
            XCTAssertEqual(ByteClassTable.has(b, ByteClassTable.regName), ByteClass.isRegNameChar(b), "byte \(b)")
        }
    }

    /// Index of the lowest flagged byte, or 8.
    private func firstFlagged(_ flags: UInt64) -> Int { flags == 0 ? 8 : flags.trailingZeroBitCount / 8 }

    private func word(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { Bytes($0).load64(0) }
    }

    /// Every byte value at every position of the word, after a prefix of
    /// ordinary bytes and before bytes of every kind (which must not
    /// disturb the lowest flag: a borrow only carries upward).
    func testWordTestsFindTheFirstByteExactly() {
        let followers: [UInt8] = [0x00, 0x09, 0x0D, 0x20, 0x41, 0x7F, 0x80, 0xFF]
        for position in 0..<8 {
            for b in UInt8.min...UInt8.max {
                for follower in followers {
                    var bytes = [UInt8](repeating: 0x61, count: 8)
                    bytes[position] = b
                    for i in (position + 1)..<8 { bytes[i] = follower }
                    let w = word(bytes)
                    // Every CTL (HTAB too: the caller steps over it) and DEL.
                    let expectedValue = bytes.firstIndex { $0 < 0x20 || $0 == 0x7F } ?? 8
                    XCTAssertEqual(firstFlagged(Bytes.controlOrDEL(w)), expectedValue, "\(bytes)")
                    let expectedTarget = bytes.firstIndex { !ByteClass.isTargetByte($0) } ?? 8
                    XCTAssertEqual(firstFlagged(Bytes.notVCHAR(w)), expectedTarget, "\(bytes)")
                }
            }
        }
    }

    func testWordLowercasingFoldsOnlyAToZ() {
        for b in UInt8.min...UInt8.max {
            for position in 0..<8 {
                var bytes = [UInt8](repeating: 0x5A, count: 8)
                bytes[position] = b
                let lowered = Bytes.lowercased(word(bytes))
                XCTAssertEqual(lowered, word(bytes.map(ByteClass.lowercased)), "byte \(b) at \(position)")
            }
        }
    }

    func testWordCompareCoversEveryLength() {
        // Each single differing byte is noticed, at every length and place.
        let names: [StaticString] = ["t", "te", "tes", "host", "proxy", "cookie", "upgrade", "https://", "abcdefghi",
                                     "keep-alive", "abcdefghijk", "100-continue", "abcdefghijklm", "content-length",
                                     "proxy-connection", "transfer-encoding"]
        for name in names {
            let bytes = Array(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            let upper = bytes.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }
            for i in bytes.indices {
                for delta: UInt8 in [0x01, 0x20, 0x80] {
                    var changed = upper
                    changed[i] ^= delta
                    let equal = changed.withUnsafeBytes { Bytes($0).wordsEqual(0, changed.count, name, foldCase: true) }
                    let expected = changed.map(ByteClass.lowercased) == bytes
                    XCTAssertEqual(equal, expected, "\(name) byte \(i) ^ \(delta)")
                }
            }
            XCTAssertTrue(upper.withUnsafeBytes { Bytes($0).wordsEqual(0, upper.count, name, foldCase: true) }, "\(name)")
            XCTAssertEqual(upper.withUnsafeBytes { Bytes($0).wordsEqual(0, upper.count, name, foldCase: false) },
                           upper == bytes, "\(name) exact")
        }
    }
}
