import XCTest
@testable import HTTP2

final class ConnectionPrefaceTests: XCTestCase {
    // RFC 9113 §3.4: 0x505249202a20485454502f322e300d0a0d0a534d0d0a0d0a
    func testPrefaceIsTheRFCOctets() {
        XCTAssertEqual(ConnectionPreface.bytes, hex("505249202a20485454502f322e300d0a0d0a534d0d0a0d0a"))
        XCTAssertEqual(ConnectionPreface.bytes, bytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
    }

    func testPrefixOfThePrefaceNeedsMoreData() {
        for n in 0 ..< 24 {
            XCTAssertEqual(Array(ConnectionPreface.bytes[..<n]).withUnsafeBytes { ConnectionPreface.match($0) }, .needMoreData)
        }
        XCTAssertEqual((ConnectionPreface.bytes + [0]).withUnsafeBytes { ConnectionPreface.match($0) }, .complete)
    }

    func testHTTP1RequestIsAMismatchAtTheFirstDifferentByte() {
        XCTAssertEqual(bytes("GET / HTTP/1.1\r\n").withUnsafeBytes { ConnectionPreface.match($0) }, .mismatch)
        XCTAssertEqual(bytes("PRI * HTTP/1.1").withUnsafeBytes { ConnectionPreface.match($0) }, .mismatch)
    }
}
