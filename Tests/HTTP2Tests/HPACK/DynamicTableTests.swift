import XCTest
@testable import HTTP2

final class DynamicTableTests: XCTestCase {
    private func add(_ t: inout DynamicTable, _ n: String, _ v: String) {
        let nb = bytes(n), vb = bytes(v)
        nb.withUnsafeBytes { nr in vb.withUnsafeBytes { vr in t.add(name: nr, value: vr) } }
    }

    func testEntrySizeIsNamePlusValuePlus32() {
        var t = DynamicTable(maxSize: 4096)
        add(&t, "custom-key", "custom-header")
        XCTAssertEqual(t.size, 10 + 13 + 32)
        XCTAssertEqual(rows(t), [["custom-key", "custom-header", "55"]])
    }

    func testNewestEntryIsIndexOneAndOldestIsEvictedFirst() {
        var t = DynamicTable(maxSize: 100)
        add(&t, "a", "1")  // 34
        add(&t, "b", "2")  // 34
        add(&t, "c", "3")  // 34 → evicts a
        XCTAssertEqual(rows(t), [["c", "3", "34"], ["b", "2", "34"]])
        XCTAssertEqual(t.size, 68)
    }

    func testEntryLargerThanTableEmptiesIt() {
        var t = DynamicTable(maxSize: 64)
        add(&t, "a", "1")
        add(&t, "name", String(repeating: "x", count: 40))  // 76 > 64
        XCTAssertEqual(t.count, 0)
        XCTAssertEqual(t.size, 0)
    }

    func testEntryExactlyTheTableSizeFits() {
        var t = DynamicTable(maxSize: 64)
        add(&t, "a", "1")
        add(&t, "ab", String(repeating: "x", count: 30))  // 64
        XCTAssertEqual(t.count, 1)
        XCTAssertEqual(t.size, 64)
    }

    func testLoweringMaxSizeEvicts() {
        var t = DynamicTable(maxSize: 4096)
        add(&t, "a", "1")
        add(&t, "b", "2")
        t.setMaxSize(40)
        XCTAssertEqual(rows(t), [["b", "2", "34"]])
        t.setMaxSize(0)
        XCTAssertEqual(t.count, 0)
    }

    func testFindPrefersExactMatchThenNewestName() {
        var t = DynamicTable(maxSize: 4096)
        add(&t, "k", "1")
        add(&t, "k", "2")
        add(&t, "j", "3")
        let one = bytes("1"), two = bytes("9"), k = bytes("k"), z = bytes("z")
        k.withUnsafeBytes { kr in
            one.withUnsafeBytes { XCTAssertEqual(t.find(name: kr, value: $0)?.index, 3); XCTAssertEqual(t.find(name: kr, value: $0)?.valueMatches, true) }
            two.withUnsafeBytes { XCTAssertEqual(t.find(name: kr, value: $0)?.index, 2); XCTAssertEqual(t.find(name: kr, value: $0)?.valueMatches, false) }
        }
        z.withUnsafeBytes { zr in XCTAssertNil(t.find(name: zr, value: zr)) }
    }

    func testLongChurnKeepsContentsCorrectAcrossCompactions() {
        var t = DynamicTable(maxSize: 200)
        for i in 0..<1000 {
            add(&t, "n\(i)", "v\(i)")
            XCTAssertEqual(text(t.name(1)), "n\(i)")
            XCTAssertEqual(text(t.value(1)), "v\(i)")
            XCTAssertLessThanOrEqual(t.size, 200)
        }
        XCTAssertEqual(text(t.value(t.count)), "v\(1000 - t.count)")
    }
}
