// Test helpers: hex vectors, string conversion, error assertions.

import XCTest
import HTTPFields
import Core
@testable import HTTP3

/// Bytes from a hex string; spaces and newlines are ignored (RFC layout).
func hex(_ s: String) -> [UInt8] {
    let digits = Array(s.utf8.filter { $0 != 32 && $0 != 10 })
    precondition(digits.count % 2 == 0)
    func nibble(_ c: UInt8) -> UInt8 { c <= 57 ? c - 48 : (c | 0x20) - 87 }
    return stride(from: 0, to: digits.count, by: 2).map { nibble(digits[$0]) << 4 | nibble(digits[$0 + 1]) }
}

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

private func XCTAssertThrowsFieldCoding(_ expected: FieldCodingError, file: StaticString = #filePath, line: UInt = #line,
                                _ body: () throws -> Void) {
    do {
        try body()
        XCTFail("expected \(expected)", file: file, line: line)
    } catch {
        XCTAssertEqual(error as? FieldCodingError, expected, file: file, line: line)
    }
}

func text(_ b: ArraySlice<UInt8>) -> String { String(decoding: b, as: UTF8.self) }

/// The fields of a list as [name, value] strings.
func pairs(_ list: HeaderList) -> [[String]] {
    (0..<list.count).map { [text(list.name($0)), text(list.value($0))] }
}

func XCTAssertThrowsH3(_ expected: H3Error, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void) {
    do {
        try body()
        XCTFail("expected \(expected)", file: file, line: line)
    } catch {
        XCTAssertEqual(error as? H3Error, expected, file: file, line: line)
    }
}
