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

    /// RFC 9113 §3.4: "Clients and servers MUST treat an invalid connection
    /// preface as a connection error ... of type PROTOCOL_ERROR." Once the
    /// request line `PRI * HTTP/2.0` is complete, a wrong byte is an HTTP/2
    /// client's invalid preface, not an HTTP/1.1 request.
    func testWrongBytesAfterThePRIRequestLineAreAnInvalidPreface() {
        XCTAssertEqual(ConnectionPreface.requestLineCount, bytes("PRI * HTTP/2.0\r\n").count)
        for i in ConnectionPreface.requestLineCount ..< ConnectionPreface.count {
            var b = ConnectionPreface.bytes
            b[i] ^= 0x20
            XCTAssertEqual(b.withUnsafeBytes { ConnectionPreface.match($0) }, .invalidPreface, "octet \(i)")
            // Decided at the first wrong octet, whatever follows or is missing.
            XCTAssertEqual(Array(b[...i]).withUnsafeBytes { ConnectionPreface.match($0) }, .invalidPreface)
            XCTAssertEqual((b + bytes("GET / HTTP/1.1\r\n")).withUnsafeBytes { ConnectionPreface.match($0) }, .invalidPreface)
        }
        XCTAssertEqual(bytes("PRI * HTTP/2.0\r\nHost: x\r\n\r\n").withUnsafeBytes { ConnectionPreface.match($0) },
                       .invalidPreface)
    }

    func testAWrongByteInsideTheRequestLineIsAMismatch() {
        for i in 0 ..< ConnectionPreface.requestLineCount {
            var b = ConnectionPreface.bytes
            b[i] ^= 0x20
            XCTAssertEqual(b.withUnsafeBytes { ConnectionPreface.match($0) }, .mismatch, "octet \(i)")
        }
    }
}
