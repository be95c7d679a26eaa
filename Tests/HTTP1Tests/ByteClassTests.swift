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
