// Connection IDs (RFC 9000 §5.1, §17.2): inline, 0-20 bytes, compared and
// hashed by their bytes only.

import XCTest
@testable import QUIC

final class ConnectionIDTests: XCTestCase {
    func testLengthsZeroToTwentyAndNotTwentyOne() {
        for n in 0...20 {
            let bytes = (0..<n).map { UInt8($0 + 1) }
            let id = ConnectionID(bytes)
            XCTAssertEqual(id?.count, n)
            XCTAssertEqual(id?.bytes, bytes)
        }
        XCTAssertNil(ConnectionID([UInt8](repeating: 1, count: 21)))
    }

    /// Bytes past the length never take part: a prefix is a different ID,
    /// equal IDs hash alike.
    func testEqualityAndHashingUseTheBytesOnly() {
        let a = cid("0102"), b = cid("0102"), c = cid("010200"), d = cid("0103")
        XCTAssertEqual(a, b)
        XCTAssertNotEqual(a, c)
        XCTAssertNotEqual(a, d)
        XCTAssertEqual(Set([a, b, c, d]).count, 3)
        XCTAssertEqual(ConnectionID.empty, ConnectionID([]))
        XCTAssertEqual(a.description, "0102")
    }

    /// Inline storage (STYLE §6: sizes pinned): 20 bytes, a length, no
    /// reference, so headers and frames carrying IDs stay plain values.
    func testLayoutIsInline() {
        XCTAssertEqual(MemoryLayout<ConnectionID>.size, 21)
        XCTAssertLessThanOrEqual(MemoryLayout<ConnectionID>.stride, 24)
        XCTAssertTrue(_isPOD(ConnectionID.self))
        XCTAssertTrue(_isPOD(Frame.self))
        XCTAssertTrue(_isPOD(PacketHeader.self))
    }
}
