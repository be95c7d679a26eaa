// Which OpenSSL the tests run on. The TLS layer is meant for OpenSSL 3.0
// through 3.5 (TRANSPORT.md, "TLS for QUIC"); scripts/check-openssl35.sh
// runs these targets against a private 3.5 build and reads the version
// this test prints to know the run really loaded it.

import XCTest
import CTLS

final class OpenSSLVersionTests: XCTestCase {
    /// OpenSSL 3 keeps its ABI within the major version: a library newer than
    /// the headers is fine, an older one (headers of one build, library of
    /// another found first at run time) may lack what the code calls.
    func testRuntimeLibraryIsOpenSSL3NotOlderThanTheHeaders() {
        let runtime = ctls_openssl_version_num()
        let headers = ctls_openssl_header_version_num()
        let text = String(cString: ctls_openssl_version_text())
        print("OpenSSL at run time: \(text) (headers 0x\(String(headers, radix: 16)))")
        XCTAssertEqual(runtime >> 28, 3, text)
        XCTAssertEqual(headers >> 28, 3)
        XCTAssertGreaterThanOrEqual(runtime, headers, text)
        XCTAssertTrue(text.hasPrefix("OpenSSL 3."), text)
    }
}
