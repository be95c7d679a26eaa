// RangeSet: insertion with merging, removal, gaps.

import XCTest
@testable import QUIC

final class RangeSetTests: XCTestCase {
    func testInsertMergesOverlappingAndAdjacent() {
        var s = RangeSet()
        s.insert(10..<20)
        s.insert(30..<40)
        XCTAssertEqual(s.ranges, [10..<20, 30..<40])
        s.insert(20..<25)  // adjacent: merges
        XCTAssertEqual(s.ranges, [10..<25, 30..<40])
        s.insert(5..<35)  // spans both
        XCTAssertEqual(s.ranges, [5..<40])
        s.insert(0..<2)
        s.insert(50)
        XCTAssertEqual(s.ranges, [0..<2, 5..<40, 50..<51])
        s.insert(7..<9)  // inside: no change
        XCTAssertEqual(s.count, 3)
    }

    func testContains() {
        var s = RangeSet()
        s.insert(10..<20)
        XCTAssertTrue(s.contains(10))
        XCTAssertTrue(s.contains(19))
        XCTAssertFalse(s.contains(20))
        XCTAssertFalse(s.contains(9))
        XCTAssertTrue(s.contains(12..<15))
        XCTAssertFalse(s.contains(15..<21))
    }

    func testRemove() {
        var s = RangeSet()
        s.insert(0..<100)
        s.remove(10..<20)
        XCTAssertEqual(s.ranges, [0..<10, 20..<100])
        s.remove(0..<10)
        XCTAssertEqual(s.ranges, [20..<100])
        s.remove(90..<200)
        XCTAssertEqual(s.ranges, [20..<90])
        s.insert(95..<99)
        s.remove(below: 50)
        XCTAssertEqual(s.ranges, [50..<90, 95..<99])
        s.remove(0..<1000)
        XCTAssertTrue(s.isEmpty)
    }

    /// A front moving on takes the ranges it reaches, and only those.
    func testTakeRun() {
        var s = RangeSet()
        s.insert(10..<20)
        s.insert(25..<30)
        s.insert(40..<50)
        XCTAssertEqual(s.takeRun(from: 5), 5)
        XCTAssertEqual(s.count, 3)
        XCTAssertEqual(s.takeRun(from: 27), 30, "overlaps both of the first two")
        XCTAssertEqual(s.first, 40..<50)
        XCTAssertEqual(s.takeRun(from: 40), 50, "touching counts")
        XCTAssertTrue(s.isEmpty)
    }

    func testFirstMissing() {
        var s = RangeSet()
        s.insert(10..<20)
        s.insert(30..<40)
        XCTAssertEqual(s.firstMissing(in: 0..<50), 0..<10)
        XCTAssertEqual(s.firstMissing(in: 10..<50), 20..<30)
        XCTAssertEqual(s.firstMissing(in: 35..<50), 40..<50)
        XCTAssertNil(s.firstMissing(in: 12..<18))
    }
}
