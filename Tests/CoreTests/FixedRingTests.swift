import XCTest
@testable import Core

final class FixedRingTests: XCTestCase {
    func testFirstInFirstOut() {
        var ring = FixedRing(capacity: 3)
        XCTAssertTrue(ring.isEmpty)
        XCTAssertTrue(ring.push(1))
        XCTAssertTrue(ring.push(2))
        XCTAssertEqual(ring.pop(), 1)
        XCTAssertEqual(ring.pop(), 2)
        XCTAssertNil(ring.pop())
    }

    func testAFullRingRefusesAndKeepsItsContents() {
        var ring = FixedRing(capacity: 2)
        XCTAssertTrue(ring.push(7))
        XCTAssertTrue(ring.push(8))
        XCTAssertFalse(ring.push(9))
        XCTAssertEqual(ring.count, 2)
        XCTAssertEqual(ring.pop(), 7)
        XCTAssertEqual(ring.pop(), 8)
    }

    func testWrapsAroundItsStorage() {
        var ring = FixedRing(capacity: 3)
        var expected: [UInt64] = []
        var got: [UInt64] = []
        for i in 0..<10 as Range<UInt64> {
            XCTAssertTrue(ring.push(i))
            expected.append(i)
            if i % 2 == 1 {
                got.append(ring.pop()!)
                got.append(ring.pop()!)
            }
        }
        XCTAssertEqual(got, expected)
        XCTAssertTrue(ring.isEmpty)
    }
}
