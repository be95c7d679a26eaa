import XCTest
#if canImport(Glibc)
import Glibc
#endif

@testable import Proxy

/// Text forms of IP addresses: RFC 3986 §3.2.2 (IPv4), RFC 4291 §2.2
/// (IPv6 input), RFC 5952 §4–5 (canonical output). glibc's inet_pton and
/// inet_ntop are the independent oracle.
final class IPAddressTextTests: XCTestCase {
    private func text(_ s: String) -> String? { IPAddress(s)?.description }

    /// RFC 4291 §2.2 forms 1–3, RFC 5952 §4 output.
    func testRFC4291FormsParseAndPrintCanonically() {
        XCTAssertEqual(text("ABCD:EF01:2345:6789:ABCD:EF01:2345:6789"), "abcd:ef01:2345:6789:abcd:ef01:2345:6789")
        XCTAssertEqual(text("2001:DB8:0:0:8:800:200C:417A"), "2001:db8::8:800:200c:417a")
        XCTAssertEqual(text("FF01:0:0:0:0:0:0:101"), "ff01::101")
        XCTAssertEqual(text("0:0:0:0:0:0:0:1"), "::1")
        XCTAssertEqual(text("0:0:0:0:0:0:0:0"), "::")
        XCTAssertEqual(text("::"), "::")
        XCTAssertEqual(text("2001:db8::"), "2001:db8::")
        XCTAssertEqual(text("0:0:0:0:0:0:13.1.68.3"), "::d01:4403")
        XCTAssertEqual(text("0:0:0:0:0:FFFF:129.144.52.38"), "::ffff:129.144.52.38")
        XCTAssertEqual(text("::FFFF:129.144.52.38"), "::ffff:129.144.52.38")
        XCTAssertEqual(text("2001:0db8:0000:0000:0000:0000:0000:0001"), "2001:db8::1")
    }

    /// RFC 5952 §4.2.2: a single zero group is not shortened; §4.2.3: the
    /// longest run, the first of equal runs.
    func testRFC5952ZeroCompressionRules() {
        XCTAssertEqual(text("2001:db8:0:1:1:1:1:1"), "2001:db8:0:1:1:1:1:1")
        XCTAssertEqual(text("2001:0:0:1:0:0:0:1"), "2001:0:0:1::1")
        XCTAssertEqual(text("2001:db8:0:0:1:0:0:1"), "2001:db8::1:0:0:1")
        XCTAssertEqual(text("1:0:0:0:0:0:0:0"), "1::")
        XCTAssertEqual(text("0:0:0:0:0:0:0:1"), "::1")
        XCTAssertEqual(text("1:2:3:4:5:6:7::"), "1:2:3:4:5:6:7:0")
        XCTAssertEqual(text("::2:3:4:5:6:7:8"), "0:2:3:4:5:6:7:8")
    }

    func testIPv4IsDottedDecimalWithoutLeadingZeros() {
        XCTAssertEqual(text("192.0.2.1"), "192.0.2.1")
        XCTAssertEqual(text("0.0.0.0"), "0.0.0.0")
        XCTAssertEqual(text("255.255.255.255"), "255.255.255.255")
        XCTAssertTrue(ip("10.1.2.3").isIPv4)
        XCTAssertEqual(ip("10.1.2.3").ipv4Value, 0x0A01_0203)
        // The mapped form is the same host, written as IPv6.
        XCTAssertTrue(ip("::ffff:10.1.2.3").isSameHost(as: ip("10.1.2.3")))
        XCTAssertFalse(ip("::ffff:10.1.2.3").isIPv4)
    }

    func testHostileAddressTextIsRefused() {
        let bad = [
            "", " ", "1", "1.2.3", "1.2.3.4.5", "1.2.3.256", "1.2.3.04", "01.2.3.4", "1..2.3", "1.2.3.", ".1.2.3",
            "1.2.3.4 ", " 1.2.3.4", "+1.2.3.4", "1.2.3.-4", "1.2.3.4/8", "0x7f.0.0.1", "1.2.3.1000",
            ":", ":::", "1:::2", "::1::", "1::2::3", ":1:2:3:4:5:6:7", "1:2:3:4:5:6:7:", "1:2:3:4:5:6:7:8:9",
            "1:2:3:4:5:6:7", "12345::", "g::", "::ffff:1.2.3", "::ffff:1.2.3.4.5", "::1.2.3.4:1",
            "1:2:3:4:5:6:7:1.2.3.4", "1:2:3:4:5:6:7:8::", "fe80::1%eth0", "[::1]", "::ffff:01.2.3.4",
            "1:2:3:4:5:6:1.2.3.4:8", "::1 ", "\u{0}", "1.2.3.4\u{0}", "１.2.3.4",
            "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.2555",
        ]
        for s in bad {
            XCTAssertNil(IPAddress(s), "accepted \(s.debugDescription)")
        }
    }

    /// glibc's inet_pton agrees on what is an address, and on its bits.
    func testParserAgreesWithInetPton() {
        var inputs = [
            "::", "::1", "1::", "1:2:3:4:5:6:7:8", "1::8", "::ffff:1.2.3.4", "::1.2.3.4", "1:2:3:4:5:6:1.2.3.4",
            "1:2:3:4:5::1.2.3.4", "1:2:3:4:5:6::1.2.3.4", "0000:0000::0000", "00000::", "::00001",
            "1.2.3.4", "01.2.3.4", "255.255.255.255", "256.1.1.1", "1.2.3", "1:2", ":1::", "::1:", "1:::",
            "abcd::ef", "ABCD::EF", "::ffff:1.2.3.04", "1::2:3:4:5:6:7", "1::2:3:4:5:6:7:8",
        ]
        // A deterministic sweep of short strings over the address alphabet.
        let alphabet = Array("0:1.f:".utf8)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<20000 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let length = Int(state >> 60) + 1
            var s: [UInt8] = []
            var r = state
            for _ in 0..<length {
                s.append(alphabet[Int(r % UInt64(alphabet.count))])
                r /= UInt64(alphabet.count)
                if r == 0 { r = state >> 7 }
            }
            inputs.append(String(decoding: s, as: UTF8.self))
        }
        for s in inputs {
            let ours = IPAddress(s)
            var v6 = in6_addr()
            var v4 = in_addr()
            let is6 = s.contains(":")
            let oracle = is6 ? inet_pton(AF_INET6, s, &v6) : inet_pton(AF_INET, s, &v4)
            XCTAssertEqual(ours != nil, oracle == 1, "disagree on \(s.debugDescription)")
            guard let ours, oracle == 1 else { continue }
            if is6 {
                let bytes = withUnsafeBytes(of: &v6) { Array($0) }
                XCTAssertEqual(bytes.withUnsafeBytes { IPAddress(ipv6Bytes: $0) }, ours, s)
            } else {
                let bytes = withUnsafeBytes(of: &v4) { Array($0) }
                XCTAssertEqual(bytes.withUnsafeBytes { IPAddress(ipv4Bytes: $0) }, ours, s)
            }
        }
    }

    /// inet_ntop agrees on output, except where RFC 5952 and glibc differ:
    /// glibc writes addresses in ::/96 (the IPv4-compatible form deprecated
    /// by RFC 4291 §2.5.5.1) as `::a.b.c.d`; those are checked by hand in
    /// `testRFC4291FormsParseAndPrintCanonically`.
    func testFormatterAgreesWithInetNtop() {
        var state: UInt64 = 12345
        for i in 0..<20000 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            var groups = [UInt16](repeating: 0, count: 8)
            var r = state
            for g in 0..<8 {
                // Mostly zeros, so zero runs of every length and place occur.
                groups[g] = r & 3 == 0 ? UInt16(truncatingIfNeeded: r >> 2) : 0
                r = r >> 8 | r << 56
            }
            if i % 7 == 0 { groups[0...5] = [0, 0, 0, 0, 0, 0xFFFF] }
            var bytes: [UInt8] = []
            for g in groups { bytes += [UInt8(g >> 8), UInt8(g & 0xFF)] }
            let address = bytes.withUnsafeBytes { IPAddress(ipv6Bytes: $0) }
            var v6 = in6_addr()
            withUnsafeMutableBytes(of: &v6) { $0.copyBytes(from: bytes) }
            var buffer = [CChar](repeating: 0, count: 64)
            XCTAssertNotNil(inet_ntop(AF_INET6, &v6, &buffer, 64))
            let oracle = String(cString: buffer)
            let compatible = groups[0...5].allSatisfy { $0 == 0 }
            if compatible { continue }
            XCTAssertEqual(address.description, oracle, "groups \(groups)")
            // And it parses back to the same address.
            XCTAssertEqual(IPAddress(address.description), address)
        }
    }

    func testWriteTextFitsTheLongestForm() {
        let longest = IPAddress(ipv6High: 0x0001_0001_0001_0001, low: 0x0001_0001_0001_0001)
        XCTAssertEqual(longest.description, "1:1:1:1:1:1:1:1")
        let mapped = IPAddress("::ffff:255.255.255.255")!
        XCTAssertEqual(mapped.description, "::ffff:255.255.255.255")
        let full = IPAddress("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")!
        XCTAssertEqual(full.description.utf8.count, 39)
    }

    func testSizeStaysSmall() {
        XCTAssertLessThanOrEqual(MemoryLayout<IPAddress>.size, 17)
    }
}
