// Test helpers: hex vectors, string conversion, and HPACK round trips.

import XCTest
@testable import HTTP2

/// Bytes from a hex string; spaces and newlines are ignored (RFC layout).
func hex(_ s: String) -> [UInt8] {
    let digits = s.utf8.filter { $0 != 32 && $0 != 10 }
    precondition(digits.count % 2 == 0)
    var out: [UInt8] = []
    var i = digits.startIndex
    func nibble(_ c: UInt8) -> UInt8 { c <= 57 ? c - 48 : (c | 0x20) - 87 }
    while i != digits.endIndex {
        let hi = nibble(digits[i]); i = digits.index(after: i)
        let lo = nibble(digits[i]); i = digits.index(after: i)
        out.append(hi << 4 | lo)
    }
    return out
}

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

func text(_ b: ArraySlice<UInt8>) -> String { String(decoding: b, as: UTF8.self) }

/// The fields of a list as strings, for comparisons.
func pairs(_ list: HeaderList) -> [[String]] {
    (0..<list.count).map { [text(list.name($0)), text(list.value($0))] }
}

/// The dynamic table as [name, value, size] rows, newest first (the RFC's
/// "Dynamic Table (after decoding)" listing).
func rows(_ table: DynamicTable) -> [[String]] {
    (0..<table.count).map { i in
        [text(table.name(i + 1)), text(table.value(i + 1)), String(table.entrySize(i + 1))]
    }
}

extension HPACKDecoder {
    /// Decodes `block` into a fresh list.
    mutating func decode(_ block: [UInt8]) throws -> HeaderList {
        var list = HeaderList()
        try block.withUnsafeBytes { try decode($0, into: &list) }
        return list
    }
}

extension HPACKEncoder {
    /// Encodes a whole block of (name, value) pairs.
    mutating func encode(_ fields: [(String, String)], indexing: Indexing = .incremental) -> [UInt8] {
        var out: [UInt8] = []
        for (n, v) in fields {
            let nb = bytes(n), vb = bytes(v)
            nb.withUnsafeBytes { nr in vb.withUnsafeBytes { vr in encode(name: nr, value: vr, indexing: indexing, into: &out) } }
        }
        return out
    }
}

func XCTAssertThrowsHPACK(_ expected: HPACKError, file: StaticString = #filePath, line: UInt = #line,
                          _ body: () throws -> Void) {
    do {
        try body()
        XCTFail("expected \(expected)", file: file, line: line)
    } catch {
        XCTAssertEqual(error as? HPACKError, expected, file: file, line: line)
    }
}
