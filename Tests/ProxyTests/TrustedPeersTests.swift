import XCTest

@testable import Proxy

/// `--forwarded-allow-ips` / `--proxy-allow-ips` lists: syntax, errors
/// naming the item, and CIDR matching at the edges.
final class TrustedPeersTests: XCTestCase {
    private func list(_ s: String) -> TrustedPeers { try! TrustedPeers(parsing: s) }

    func testEmptyListTrustsNobody() {
        let none = list("")
        XCTAssertTrue(none.isEmpty)
        XCTAssertFalse(none.contains(.unix))
        XCTAssertFalse(none.contains(ip("127.0.0.1")))
        XCTAssertEqual(list(" , ,"), TrustedPeers())
    }

    func testItemsToleranceWhitespaceAndCase() {
        let peers = list(" 127.0.0.1 ,\t::1,UNIX , 10.0.0.0/8")
        XCTAssertTrue(peers.contains(.unix))
        XCTAssertTrue(peers.contains(ip("127.0.0.1")))
        XCTAssertTrue(peers.contains(ip("::1")))
        XCTAssertTrue(peers.contains(ip("10.200.3.4")))
        XCTAssertFalse(peers.contains(ip("127.0.0.2")))
        XCTAssertFalse(peers.contains(ip("11.0.0.0")))
    }

    func testStarTrustsEveryPeer() {
        let any = list("*")
        XCTAssertTrue(any.trustsEveryone)
        XCTAssertTrue(any.contains(.unix))
        XCTAssertTrue(any.contains(ip("203.0.113.9")))
        XCTAssertTrue(any.contains(ip("2001:db8::1")))
        XCTAssertTrue(withBytes("garbage") { any.contains(addressText: $0) })
    }

    func testUnixIsOnlyTrustedWhenListed() {
        XCTAssertFalse(list("127.0.0.1,::1").contains(.unix))
        XCTAssertTrue(list("unix").contains(.unix))
        XCTAssertFalse(list("unix").contains(ip("127.0.0.1")))
    }

    func testPrefixZeroMatchesItsWholeFamilySpace() {
        let v4 = list("0.0.0.0/0")
        XCTAssertTrue(v4.contains(ip("1.2.3.4")))
        XCTAssertTrue(v4.contains(ip("255.255.255.255")))
        XCTAssertTrue(v4.contains(ip("::ffff:8.8.8.8")), "a mapped peer is an IPv4 host")
        XCTAssertFalse(v4.contains(ip("2001:db8::1")))
        // ::/0 is every 128-bit address, the IPv4-mapped block included.
        let v6 = list("::/0")
        XCTAssertTrue(v6.contains(ip("2001:db8::1")))
        XCTAssertTrue(v6.contains(ip("1.2.3.4")))
    }

    func testFullLengthPrefixesMatchOneAddress() {
        let one = list("192.0.2.7/32, 2001:db8::7/128")
        XCTAssertTrue(one.contains(ip("192.0.2.7")))
        XCTAssertFalse(one.contains(ip("192.0.2.6")))
        XCTAssertFalse(one.contains(ip("192.0.2.8")))
        XCTAssertTrue(one.contains(ip("2001:db8::7")))
        XCTAssertFalse(one.contains(ip("2001:db8::6")))
        XCTAssertFalse(one.contains(ip("2001:db8::7:0")))
    }

    func testPrefixBoundariesAcrossTheSixtyFourBitWord() {
        let p = list("2001:db8:1:2::/63, 2001:db8:aaaa:bbbb:8000::/65")
        XCTAssertTrue(p.contains(ip("2001:db8:1:3:ffff::1")))
        XCTAssertFalse(p.contains(ip("2001:db8:1:4::")))
        XCTAssertTrue(p.contains(ip("2001:db8:aaaa:bbbb:ffff::")))
        XCTAssertFalse(p.contains(ip("2001:db8:aaaa:bbbb:7fff::")))
        let odd = list("172.16.0.0/12")
        XCTAssertTrue(odd.contains(ip("172.31.255.255")))
        XCTAssertFalse(odd.contains(ip("172.32.0.0")))
        XCTAssertFalse(odd.contains(ip("172.15.255.255")))
    }

    /// RFC 4291 §2.5.5.2: an IPv4 rule matches the mapped address a
    /// dual-stack socket reports, and a rule written in mapped form matches
    /// the IPv4 peer.
    func testMappedIPv4MatchesBothWays() {
        XCTAssertTrue(list("10.0.0.0/8").contains(ip("::ffff:10.9.8.7")))
        XCTAssertTrue(list("::ffff:10.0.0.0/104").contains(ip("10.9.8.7")))
        XCTAssertFalse(list("::ffff:10.0.0.0/104").contains(ip("11.9.8.7")))
        XCTAssertTrue(list("::ffff:0:0/96").contains(ip("203.0.113.1")))
    }

    func testHostBitsPastThePrefixAreIgnored() {
        XCTAssertEqual(list("10.1.2.3/8"), list("10.0.0.0/8"))
        XCTAssertTrue(list("10.1.2.3/8").contains(ip("10.200.0.1")))
    }

    func testTextualAddressesFromHeaders() {
        let peers = list("10.0.0.0/8, 2001:db8::/32")
        XCTAssertTrue(withBytes("10.1.1.1") { peers.contains(addressText: $0) })
        XCTAssertTrue(withBytes("[2001:db8::5]") { peers.contains(addressText: $0) })
        XCTAssertTrue(withBytes("2001:db8::5") { peers.contains(addressText: $0) })
        XCTAssertFalse(withBytes("unknown") { peers.contains(addressText: $0) })
        XCTAssertFalse(withBytes("_hidden") { peers.contains(addressText: $0) })
        XCTAssertFalse(withBytes("[10.1.1.1]") { peers.contains(addressText: $0) })
        XCTAssertFalse(withBytes("") { peers.contains(addressText: $0) })
    }

    /// A malformed item is a start-up error that names it.
    func testMalformedItemsAreErrorsNamingTheItem() {
        let cases: [(String, String, TrustedPeersError.Problem)] = [
            ("127.0.0.1, localhost", "localhost", .notAnAddress),
            ("10.0.0.0/33", "10.0.0.0/33", .badPrefixLength),
            ("::/129", "::/129", .badPrefixLength),
            ("10.0.0.0/", "10.0.0.0/", .badPrefixLength),
            ("10.0.0.0/08", "10.0.0.0/08", .badPrefixLength),
            ("10.0.0.0/-1", "10.0.0.0/-1", .badPrefixLength),
            ("10.0.0.0/8/8", "10.0.0.0/8/8", .badPrefixLength),
            ("1.2.3.256", "1.2.3.256", .notAnAddress),
            ("[::1]", "[::1]", .notAnAddress),
            ("fe80::1%eth0", "fe80::1%eth0", .notAnAddress),
            ("* *", "* *", .notAnAddress),
            ("unix:/tmp/s", "unix:/tmp/s", .notAnAddress),
            ("/8", "/8", .notAnAddress),
            ("10.0.0.1 10.0.0.2", "10.0.0.1 10.0.0.2", .notAnAddress),
        ]
        for (input, item, problem) in cases {
            XCTAssertThrowsError(try TrustedPeers(parsing: input), input) { error in
                guard let e = error as? TrustedPeersError else { return XCTFail("\(error)") }
                XCTAssertEqual(e.item, item, input)
                XCTAssertEqual(e.problem, problem, input)
                XCTAssertTrue(e.description.contains("'\(item)'"), e.description)
            }
        }
    }

    func testTheProxyProtocolDefaultParses() {
        let local = list("127.0.0.1,::1,unix")
        XCTAssertTrue(local.contains(.unix))
        XCTAssertTrue(local.contains(ip("127.0.0.1")))
        XCTAssertTrue(local.contains(ip("::ffff:127.0.0.1")))
        XCTAssertTrue(local.contains(ip("::1")))
        XCTAssertFalse(local.contains(ip("127.0.0.2")))
    }
}
