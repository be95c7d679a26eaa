import XCTest

import Proxy

/// `ProxyHeaderDecoder.startsWithSignature`: how a server that expects no
/// PROXY header from a peer recognises one to refuse it.
final class ProxyHeaderSignatureTests: XCTestCase {
    private func starts(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { ProxyHeaderDecoder.startsWithSignature($0) }
    }

    private let v2Signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]

    func testWholeSignaturesAreRecognised() {
        XCTAssertTrue(starts(Array("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n".utf8)))
        XCTAssertTrue(starts(Array("PROXY ".utf8)))
        XCTAssertTrue(starts(v2Signature))
        XCTAssertTrue(starts(v2Signature + [0x21, 0x11, 0x00, 0x00]))
    }

    func testPrefixesAndOtherRequestsAreNot() {
        XCTAssertFalse(starts([]))
        XCTAssertFalse(starts(Array("PROXY".utf8)))  // a method named PROXY needs its space
        XCTAssertFalse(starts(Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)))
        XCTAssertFalse(starts(Array("POST / HTTP/1.1\r\n".utf8)))
        XCTAssertFalse(starts(Array("proxy TCP4".utf8)))
        XCTAssertFalse(starts(Array(v2Signature.dropLast())))
        XCTAssertFalse(starts([0x0D, 0x0A, 0x0D, 0x0A, 0x47, 0x45, 0x54]))  // empty lines, then GET
    }
}
