import CSys
import XCTest

import Core

final class SocketAddressEndpointTests: XCTestCase {
    private func endpoint(family: UInt8, port: UInt16, bytes: [UInt8], scope: UInt32 = 0) -> csys_ip_endpoint {
        var e = csys_ip_endpoint()
        e.family = family
        e.port = port
        e.scope_id = scope
        withUnsafeMutableBytes(of: &e.addr) { raw in for (i, b) in bytes.enumerated() { raw[i] = b } }
        return e
    }

    private func bytes(_ e: csys_ip_endpoint) -> [UInt8] { withUnsafeBytes(of: e.addr) { Array($0) } }

    func testIPv4IsHeldAsIPv4InItsHighBits() {
        let a = SocketAddress(endpoint: endpoint(family: 4, port: 443, bytes: [192, 0, 2, 7], scope: 3))!
        XCTAssertEqual(a, SocketAddress(family: .ipv4, port: 443, high: 0xC000_0207_0000_0000, low: 0, scopeID: 3))
        XCTAssertEqual(a.ipv4Value, 0xC000_0207)
        XCTAssertEqual(a, { var x = SocketAddress.ipv4(0xC000_0207, port: 443); x.scopeID = 3; return x }())
        XCTAssertEqual(a.addressBytes, [192, 0, 2, 7])
    }

    func testIPv6KeepsAllSixteenBytesAndTheScope() {
        let raw: [UInt8] = [0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xFF, 0xFE, 0x33, 0x44, 0x55]
        let a = SocketAddress(endpoint: endpoint(family: 6, port: 8443, bytes: raw, scope: 2))!
        XCTAssertEqual(a.family, .ipv6)
        XCTAssertEqual(a.high, 0xFE80_0000_0000_0000)
        XCTAssertEqual(a.low, 0x0211_22FF_FE33_4455)
        XCTAssertEqual(a.scopeID, 2)
        XCTAssertEqual(a.addressBytes, raw)
    }

    func testAnEndpointWithoutAFamilyIsNoAddress() {
        XCTAssertNil(SocketAddress(endpoint: csys_ip_endpoint()))
        XCTAssertNil(SocketAddress(endpoint: endpoint(family: 5, port: 1, bytes: [1, 2, 3, 4])))
    }

    func testBackToTheEndpointRoundTrips() {
        let v4 = endpoint(family: 4, port: 1, bytes: [127, 0, 0, 1])
        let v6 = endpoint(family: 6, port: 65535, bytes: Array(1...16), scope: 9)
        for e in [v4, v6] {
            let back = SocketAddress(endpoint: e)!.endpoint
            XCTAssertEqual(back.family, e.family)
            XCTAssertEqual(back.port, e.port)
            XCTAssertEqual(back.scope_id, e.scope_id)
            XCTAssertEqual(bytes(back), bytes(e))
        }
    }

    func testIPv4EndpointBytesBeyondTheFourAreZero() {
        let a = SocketAddress(family: .ipv4, port: 80, high: 0x0A00_0001_FFFF_FFFF, low: 7)
        XCTAssertEqual(bytes(a.endpoint), [10, 0, 0, 1] + [UInt8](repeating: 0, count: 12))
    }
}
