// Test helpers: hex vectors and buffer plumbing.

import XCTest
import Core
@testable import QUIC

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

func cid(_ s: String) -> ConnectionID { ConnectionID(hex(s))! }

/// Runs an encoder over a buffer of `size` bytes pre-filled with a marker
/// and checks it wrote exactly `size` bytes.
func encoded(size: Int, file: StaticString = #filePath, line: UInt = #line,
             _ body: (UnsafeMutableRawBufferPointer) -> Int) -> [UInt8] {
    var out = [UInt8](repeating: 0xee, count: size + 8)
    let n = out.withUnsafeMutableBytes { body(UnsafeMutableRawBufferPointer(rebasing: $0[0..<size])) }
    XCTAssertEqual(n, size, "encoder wrote other than its size", file: file, line: line)
    XCTAssertEqual(Array(out[size...]), [UInt8](repeating: 0xee, count: 8), "encoder wrote past its size", file: file, line: line)
    return Array(out[..<size])
}

func slice(_ b: [UInt8], _ s: ByteSpan) -> [UInt8] { Array(b[s.start..<s.end]) }

func XCTAssertThrowsQUIC(_ expected: QUICError, file: StaticString = #filePath, line: UInt = #line,
                         _ body: () throws -> Void) {
    do {
        try body()
        XCTFail("expected \(expected)", file: file, line: line)
    } catch {
        XCTAssertEqual(error as? QUICError, expected, file: file, line: line)
    }
}
