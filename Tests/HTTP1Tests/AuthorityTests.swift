import XCTest

@testable import HTTP1

/// uri-host [ ":" port ] as RFC 3986 §3.2.2 / RFC 9110 §7.2 define it.
final class AuthorityTests: XCTestCase {
    private func valid(_ s: String, requireHost: Bool = false, requirePort: Bool = false) -> Bool {
        Array(s).withUnsafeBytes { Authority.isValid(Bytes($0), 0, $0.count, requireHost: requireHost, requirePort: requirePort) }
    }

    func testRegNameAndIPv4AreAccepted() {
        XCTAssertTrue(valid("example.com"))
        XCTAssertTrue(valid("192.0.2.1"))
        XCTAssertTrue(valid("sub-delims!$&'()*+,;=~_."))
        XCTAssertTrue(valid("pct%41%7e"))
    }

    func testIPv6LiteralIsAccepted() {
        XCTAssertTrue(valid("[::1]"))
        XCTAssertTrue(valid("[2001:DB8::a:1]:8443"))
        XCTAssertTrue(valid("[::ffff:192.0.2.1]"))
    }

    func testMalformedIPv6LiteralIsRejected() {
        for s in ["[", "[]", "[:]", "[::1", "::1]", "[::g]", "[::1]]", "[::1]:x", "[v1.x]", "[" + String(repeating: "1:", count: 30) + "]"] {
            XCTAssertFalse(valid(s), s)
        }
    }

    func testPortMustBeDigitsUpTo65535() {
        XCTAssertTrue(valid("h:0"))
        XCTAssertTrue(valid("h:65535"))
        XCTAssertTrue(valid("h:"))
        XCTAssertFalse(valid("h:65536"))
        XCTAssertFalse(valid("h:000001"))
        XCTAssertFalse(valid("h:-1"))
        XCTAssertFalse(valid("h: 1"))
    }

    func testRequireHostRefusesEmptyHost() {
        XCTAssertTrue(valid(""))
        XCTAssertFalse(valid("", requireHost: true))
        XCTAssertFalse(valid(":80", requireHost: true))
    }

    func testRequirePortRefusesMissingOrEmptyPort() {
        XCTAssertTrue(valid("h:443", requirePort: true))
        XCTAssertFalse(valid("h", requirePort: true))
        XCTAssertFalse(valid("h:", requirePort: true))
        XCTAssertTrue(valid("[::1]:443", requirePort: true))
        XCTAssertFalse(valid("[::1]", requirePort: true))
    }

    func testUserinfoAndDelimitersAreRejected() {
        for s in ["u@h", "h/p", "h?q", "h#f", "h h", "h\"", "h<", "h\\", "h%", "h%4", "h%4g", "h:1:2"] {
            XCTAssertFalse(valid(s), s)
        }
    }
}
