import XCTest

@testable import Proxy

/// Who the client is behind trusted proxies: the chain walk, the trust
/// boundary, Forwarded against X-Forwarded-*, caps and malformed values.
/// The trusted list is "10.0.0.0/8, 2001:db8:ffff::/48" and the peer
/// 10.0.0.1 unless a test says otherwise.
final class ForwardedResolverTests: XCTestCase {
    func testUntrustedPeerChangesNothing() {
        let fields = [("X-Forwarded-For", "203.0.113.9"), ("X-Forwarded-Proto", "https"), ("Forwarded", "for=192.0.2.1")]
        XCTAssertEqual(outcome(fields, peer: .ip(ip("192.0.2.200"))), unchanged)
        XCTAssertEqual(outcome(fields, peer: .unix), unchanged)
        XCTAssertEqual(outcome(fields, trusted: ""), unchanged)
    }

    func testTrustedPeerWithoutFieldsChangesNothing() {
        XCTAssertEqual(outcome([]), unchanged)
    }

    func testUnixPeerIsTrustedThroughUnix() {
        XCTAssertEqual(outcome([("X-Forwarded-For", "203.0.113.9")], trusted: "unix", peer: .unix),
                       Outcome(client: "203.0.113.9", source: .xForwarded))
    }

    func testRightmostUntrustedAddressIsTheClient() {
        // A client forged 1.1.1.1; 203.0.113.9 is what our trusted proxies saw.
        XCTAssertEqual(outcome([("X-Forwarded-For", "1.1.1.1, 203.0.113.9, 10.0.0.7")]),
                       Outcome(client: "203.0.113.9", source: .xForwarded))
        XCTAssertEqual(outcome([("Forwarded", "for=1.1.1.1, for=203.0.113.9, for=10.0.0.7")]),
                       Outcome(client: "203.0.113.9", source: .forwarded))
    }

    func testAllTrustedChainYieldsTheLeftmost() {
        XCTAssertEqual(outcome([("X-Forwarded-For", "10.1.1.1, 10.2.2.2, 10.3.3.3")]),
                       Outcome(client: "10.1.1.1", source: .xForwarded))
        XCTAssertEqual(outcome([("X-Forwarded-For", "1.1.1.1, 2.2.2.2")], trusted: "*"),
                       Outcome(client: "1.1.1.1", source: .xForwarded))
    }

    func testEmptyChainChangesNothing() {
        XCTAssertEqual(outcome([("X-Forwarded-For", "")]), unchanged)
        XCTAssertEqual(outcome([("X-Forwarded-For", " , ,")]), unchanged)
        XCTAssertEqual(outcome([("Forwarded", "")]), unchanged)
    }

    func testUnknownAndObfuscatedNodesAreClientsUnlessStarTrustsThem() {
        XCTAssertEqual(outcome([("Forwarded", "for=unknown, for=10.0.0.9")]),
                       Outcome(client: "unknown", source: .forwarded))
        XCTAssertEqual(outcome([("Forwarded", "for=192.0.2.1, for=_proxy7, for=10.0.0.9")]),
                       Outcome(client: "_proxy7", source: .forwarded))
        XCTAssertEqual(outcome([("Forwarded", "for=192.0.2.1, for=_proxy7")], trusted: "*"),
                       Outcome(client: "192.0.2.1", source: .forwarded))
        XCTAssertEqual(outcome([("X-Forwarded-For", "unknown, 10.0.0.9")]),
                       Outcome(client: "unknown", source: .xForwarded))
    }

    func testMixedIPv4AndIPv6Chains() {
        XCTAssertEqual(outcome([("Forwarded", #"for="[2001:db8:cafe::17]:4711", for="[2001:db8:ffff::1]", for=10.0.0.3"#)]),
                       Outcome(client: "[2001:db8:cafe::17]:4711", source: .forwarded))
        XCTAssertEqual(outcome([("X-Forwarded-For", "192.0.2.43, 2001:db8:ffff::2, ::ffff:10.0.0.5")]),
                       Outcome(client: "192.0.2.43", source: .xForwarded))
        XCTAssertEqual(outcome([("X-Forwarded-For", "2001:db8::99, [2001:db8:ffff::2]:443")]),
                       Outcome(client: "2001:db8::99", source: .xForwarded))
        XCTAssertEqual(outcome([("X-Forwarded-For", "[2001:db8::99]:5555, 10.0.0.2")]),
                       Outcome(client: "[2001:db8::99]:5555", source: .xForwarded))
        XCTAssertEqual(outcome([("X-Forwarded-For", "192.0.2.1:1234")]),
                       Outcome(client: "192.0.2.1:1234", source: .xForwarded))
        XCTAssertEqual(outcome([("X-Forwarded-For", "203.0.113.1")], peer: .ip(ip("2001:db8:ffff::1"))),
                       Outcome(client: "203.0.113.1", source: .xForwarded))
    }

    /// RFC 9110 §5.3: lines of one field are one list, in order.
    func testSeveralXForwardedForLinesJoinInOrder() {
        XCTAssertEqual(outcome([("X-Forwarded-For", "1.1.1.1"), ("X-Forwarded-For", "203.0.113.9, 10.0.0.7")]),
                       Outcome(client: "203.0.113.9", source: .xForwarded))
        XCTAssertEqual(outcome([("X-Forwarded-For", "10.1.1.1"), ("x-forwarded-for", "10.2.2.2")]),
                       Outcome(client: "10.1.1.1", source: .xForwarded))
        XCTAssertEqual(outcome([("Forwarded", "for=192.0.2.1"), ("Forwarded", "for=10.0.0.3")]),
                       Outcome(client: "192.0.2.1", source: .forwarded))
    }

    func testChainOverTheCapIsIgnored() {
        let thirtyTwo = (1...32).map { "10.0.0.\($0)" }.joined(separator: ", ")
        XCTAssertEqual(outcome([("X-Forwarded-For", thirtyTwo)]), Outcome(client: "10.0.0.1", source: .xForwarded))
        let thirtyThree = "203.0.113.1, " + thirtyTwo
        XCTAssertEqual(outcome([("X-Forwarded-For", thirtyThree)]), unchanged)
        XCTAssertEqual(outcome([("X-Forwarded-For", thirtyThree), ("X-Forwarded-Proto", "https")]),
                       Outcome(scheme: "https", source: .xForwarded), "the other fields still count")
        let forwarded = (0..<33).map { _ in "for=10.0.0.1" }.joined(separator: ",")
        XCTAssertEqual(outcome([("Forwarded", forwarded + ";proto=https")]), unchanged)
        // Spread over lines, the cap is the same.
        let lines = (0..<33).map { _ in ("X-Forwarded-For", "10.0.0.1") }
        XCTAssertEqual(outcome(lines), unchanged)
        let emptyLines = (0..<40).map { _ in ("X-Forwarded-For", "") }
        XCTAssertEqual(outcome(emptyLines), unchanged, "more lines than the capacity: ignored")
    }

    func testForwardedWinsOverXForwarded() {
        XCTAssertEqual(outcome([("X-Forwarded-For", "198.51.100.1"), ("X-Forwarded-Proto", "https"),
                                ("Forwarded", "for=192.0.2.1")]),
                       Outcome(client: "192.0.2.1", source: .forwarded))
        // Even a Forwarded that says nothing usable silences X-Forwarded-*.
        XCTAssertEqual(outcome([("Forwarded", "garbage"), ("X-Forwarded-For", "198.51.100.1")]), unchanged)
    }

    func testForwardedTakesProtoAndHostFromTheClientsElement() {
        XCTAssertEqual(outcome([("Forwarded", #"for=192.0.2.43;proto=https;host="example.com:8443", for=10.0.0.5;proto=http;host=inner"#)]),
                       Outcome(client: "192.0.2.43", scheme: "https", host: "example.com:8443", port: 8443, source: .forwarded))
        // RFC 7239 §7.5: the client's element has no proto or host; those
        // of the inner element describe a trusted hop's request, not the client's.
        XCTAssertEqual(outcome([("Forwarded", "for=192.0.2.43,for=198.51.100.17;by=203.0.113.60;proto=http;host=example.com")],
                               trusted: "10.0.0.0/8, 198.51.100.17"),
                       Outcome(client: "192.0.2.43", source: .forwarded))
        XCTAssertEqual(outcome([("Forwarded", "proto=https;host=example.org")]),
                       Outcome(scheme: "https", host: "example.org", source: .forwarded))
    }

    /// A hop we cannot read stops the walk: what lies left of it may be forged.
    func testMalformedHopStopsTheWalkAndKeepsThePeer() {
        XCTAssertEqual(outcome([("X-Forwarded-For", "192.0.2.1, garbage, 10.0.0.2")]), unchanged)
        XCTAssertEqual(outcome([("X-Forwarded-For", "garbage, 192.0.2.1")]), Outcome(client: "192.0.2.1", source: .xForwarded))
        XCTAssertEqual(outcome([("Forwarded", "for=192.0.2.1, for=bad;proto=https, for=10.0.0.2")]),
                       Outcome(scheme: "https", source: .forwarded))
        XCTAssertEqual(outcome([("X-Forwarded-For", "1.1.1.1, garbage")], trusted: "*"), unchanged)
    }

    func testXForwardedProtoHostAndPort() {
        XCTAssertEqual(outcome([("X-Forwarded-For", "192.0.2.1"), ("X-Forwarded-Proto", "HTTPS"),
                                ("X-Forwarded-Host", "example.com"), ("X-Forwarded-Port", "8443")]),
                       Outcome(client: "192.0.2.1", scheme: "https", host: "example.com", port: 8443, source: .xForwarded))
        XCTAssertEqual(outcome([("X-Forwarded-Host", "example.com:444")]),
                       Outcome(host: "example.com:444", port: 444, source: .xForwarded))
        XCTAssertEqual(outcome([("X-Forwarded-Host", "example.com:444"), ("X-Forwarded-Port", "555")]),
                       Outcome(host: "example.com:444", port: 555, source: .xForwarded))
        XCTAssertEqual(outcome([("X-Forwarded-Proto", "wss")]), Outcome(scheme: "https", source: .xForwarded))
        XCTAssertEqual(outcome([("X-Forwarded-Proto", "ws")]), Outcome(scheme: "http", source: .xForwarded))
    }

    func testXForwardedListsAlignWithTheChainOrAreIgnored() {
        // One element per hop: the chosen hop's element.
        XCTAssertEqual(outcome([("X-Forwarded-For", "192.0.2.1, 10.0.0.2"), ("X-Forwarded-Proto", "https, http"),
                                ("X-Forwarded-Host", "outer.example, inner.example")]),
                       Outcome(client: "192.0.2.1", scheme: "https", host: "outer.example", source: .xForwarded))
        XCTAssertEqual(outcome([("X-Forwarded-For", "1.1.1.1, 192.0.2.1, 10.0.0.2"), ("X-Forwarded-Proto", "http, https, http")]),
                       Outcome(client: "192.0.2.1", scheme: "https", source: .xForwarded))
        // Any other length is ambiguous.
        XCTAssertEqual(outcome([("X-Forwarded-For", "192.0.2.1, 10.0.0.2, 10.0.0.3"), ("X-Forwarded-Proto", "https, http")]),
                       Outcome(client: "192.0.2.1", source: .xForwarded))
        XCTAssertEqual(outcome([("X-Forwarded-Proto", "https, http")]), unchanged)
        // Lines of a list join too.
        XCTAssertEqual(outcome([("X-Forwarded-For", "192.0.2.1, 10.0.0.2"), ("X-Forwarded-Proto", "https"),
                                ("X-Forwarded-Proto", "http")]),
                       Outcome(client: "192.0.2.1", scheme: "https", source: .xForwarded))
    }

    /// Malformed values are ignored field by field, never an error.
    func testHostileXForwardedValuesTable() {
        let table: [([(String, String)], Outcome)] = [
            ([("X-Forwarded-Proto", "ftp")], unchanged),
            ([("X-Forwarded-Proto", "https ")], Outcome(scheme: "https", source: .xForwarded)),
            ([("X-Forwarded-Proto", "htt ps")], unchanged),
            ([("X-Forwarded-Proto", "https\u{0}")], unchanged),
            ([("X-Forwarded-Port", "0")], unchanged),
            ([("X-Forwarded-Port", "65536")], unchanged),
            ([("X-Forwarded-Port", "-1")], unchanged),
            ([("X-Forwarded-Port", "123456")], unchanged),
            ([("X-Forwarded-Port", "80a")], unchanged),
            ([("X-Forwarded-Port", "")], unchanged),
            ([("X-Forwarded-Host", "a b")], unchanged),
            ([("X-Forwarded-Host", "evil.com/path")], unchanged),
            ([("X-Forwarded-Host", "user@evil.com")], unchanged),
            ([("X-Forwarded-Host", "evil.com:")], unchanged),
            ([("X-Forwarded-Host", "evil.com:0")], unchanged),
            ([("X-Forwarded-Host", "evil.com:http")], unchanged),
            ([("X-Forwarded-Host", "[::1")], unchanged),
            ([("X-Forwarded-Host", "[v1.x]")], unchanged),
            ([("X-Forwarded-Host", "\"quoted\"")], unchanged),
            ([("X-Forwarded-Host", "[::1]:8080")], Outcome(host: "[::1]:8080", port: 8080, source: .xForwarded)),
            ([("X-Forwarded-For", "1.2.3.4.5")], unchanged),
            ([("X-Forwarded-For", "1.2.3.4:99999")], unchanged),
            ([("X-Forwarded-For", "1.2.3.4:")], unchanged),
            ([("X-Forwarded-For", "[1.2.3.4]")], unchanged),
            ([("X-Forwarded-For", "_hidden")], unchanged),
            ([("X-Forwarded-For", "\"192.0.2.1\"")], unchanged),
            ([("X-Forwarded-For", "2001:db8::1:80")], Outcome(client: "2001:db8::1:80", source: .xForwarded)),
            ([("X-Forwarded-For", "[2001:db8::1]x")], unchanged),
            ([("X-Forwarded-For", "192.0.2.1\u{0}")], unchanged),
            ([("X-Forwarded-For", "192.0.2.1;for=1.1.1.1")], unchanged),
        ]
        for (fields, expected) in table {
            XCTAssertEqual(outcome(fields), expected, "\(fields)")
        }
    }

    func testFieldNamesAreRecognisedInAnyCase() {
        for name in ["forwarded", "FORWARDED", "X-FORWARDED-FOR", "x-forwarded-proto", "X-Forwarded-Host", "x-forwarded-port"] {
            XCTAssertNotNil(withBytes(name) { ForwardedField(name: $0) }, name)
        }
        for name in ["x-forwarded", "forwarded-for", "x-forwarded-fo", "x-real-ip", "", "x_forwarded_for"] {
            XCTAssertNil(withBytes(name) { ForwardedField(name: $0) }, name)
        }
        var lines = ForwardedFieldLines()
        XCTAssertTrue(lines.isEmpty)
        XCTAssertFalse(withBytes("Host") { name in withBytes("x") { lines.append(name: name, value: $0) } })
        XCTAssertTrue(lines.isEmpty)
    }

    /// The per-request values stay small and fixed: no allocation, no growth.
    func testValueSizesStayFixed() {
        XCTAssertLessThanOrEqual(MemoryLayout<ForwardedResolution>.size, 80)
        XCTAssertLessThanOrEqual(MemoryLayout<ForwardedFieldLines>.size, 1500)
    }

    /// Slices handed out point into the caller's own bytes.
    func testHostAndObfuscatedNodePointIntoTheInput() {
        let value = Array(#"for="_abc";host=example.com"#.utf8)
        value.withUnsafeBytes { bytes in
            var lines = ForwardedFieldLines()
            lines.append(.forwarded, value: bytes)
            let r = ForwardedResolver(trusted: try! TrustedPeers(parsing: "*")).resolve(peer: .unix, fields: lines)
            guard case .obfuscated(let node)? = r.client, let host = r.host else { return XCTFail("\(r)") }
            XCTAssertEqual(node.bytes.baseAddress, bytes.baseAddress! + 5)
            XCTAssertEqual(host.bytes.baseAddress, bytes.baseAddress! + 16)
            XCTAssertEqual(host.bytes.count, 11)
        }
    }
}
