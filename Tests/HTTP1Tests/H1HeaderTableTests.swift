import Core
import XCTest

@testable import HTTP1

final class H1HeaderTableTests: XCTestCase {
    func testAppendUpToCapacityThenRefuse() {
        let table = H1HeaderTable(capacity: 2)
        XCTAssertEqual(table.capacity, 2)
        XCTAssertTrue(table.append(name: ByteSpan(offset: 0, length: 4), value: ByteSpan(offset: 6, length: 1), token: .host))
        XCTAssertTrue(table.append(name: ByteSpan(offset: 9, length: 1), value: ByteSpan(offset: 12, length: 0), token: .other))
        XCTAssertFalse(table.append(name: .empty, value: .empty, token: .other))
        XCTAssertEqual(table.count, 2)
        XCTAssertEqual(table.name(0), ByteSpan(offset: 0, length: 4))
        XCTAssertEqual(table.value(1), ByteSpan(offset: 12, length: 0))
        XCTAssertEqual(table.token(0), .host)
        XCTAssertEqual(table.firstIndex(of: .host), 0)
        XCTAssertEqual(table.firstIndex(of: .other), 1)
        XCTAssertNil(table.firstIndex(of: .cookie))
        table.removeAll()
        XCTAssertEqual(table.count, 0)
        XCTAssertNil(table.firstIndex(of: .host))
    }

    func testZeroCapacityTableRefusesEveryField() {
        let table = H1HeaderTable(capacity: 0)
        XCTAssertFalse(table.append(name: .empty, value: .empty, token: .other))
    }

    func testTableIsReusedAcrossRequests() {
        let table = H1HeaderTable(capacity: 8)
        var parser = H1HeadParser(limits: H1Limits())
        let first = Array("GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\nY: 2\r\n\r\n")
        XCTAssertEqual(parseHead(&parser, first, table).fields.count, 3)
        parser.reset()
        let second = Array("GET / HTTP/1.1\r\nHost: b\r\n\r\n")
        XCTAssertEqual(parseHead(&parser, second, table).fields, [.init(name: "Host", value: "b", token: .host)])
    }
}
