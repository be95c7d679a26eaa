import XCTest

@testable import Proxy

/// The RFC 7239 §4 grammar, element by element, including the RFC's own
/// examples (https://www.rfc-editor.org/rfc/rfc7239) and hostile input.
final class ForwardedElementsTests: XCTestCase {
    /// Each element as "node|proto|host".
    private func elements(_ line: String) -> [String] {
        withBytes(line) { bytes in
            var list = ForwardedElements(bytes)
            var out: [String] = []
            while let e = list.next() {
                let node: String
                switch e.node {
                case .absent: node = "-"
                case .malformed: node = "!"
                case .node(.unknown): node = "unknown"
                case .node(.obfuscated(let s)): node = s.description
                case .node(.address(let a, let p)): node = a.description + (p.map { ":\($0)" } ?? "")
                }
                let proto = e.scheme.map { $0 == .https ? "https" : "http" } ?? "-"
                let host = e.host.map { String(decoding: $0, as: UTF8.self) + (e.hostPort.map { "@\($0)" } ?? "") } ?? "-"
                out.append("\(node)|\(proto)|\(host)")
            }
            return out
        }
    }

    /// RFC 7239 §4, the four examples.
    func testRFC7239Section4Examples() {
        XCTAssertEqual(elements(#"for="_gazonk""#), ["_gazonk|-|-"])
        XCTAssertEqual(elements(#"For="[2001:db8:cafe::17]:4711""#), ["2001:db8:cafe::17:4711|-|-"])
        XCTAssertEqual(elements("for=192.0.2.60;proto=http;by=203.0.113.43"), ["192.0.2.60|http|-"])
        XCTAssertEqual(elements("for=192.0.2.43, for=198.51.100.17"), ["192.0.2.43|-|-", "198.51.100.17|-|-"])
    }

    /// RFC 7239 §5.2–5.4: `for`, `host` and `proto` parameters.
    func testRFC7239Section5Parameters() {
        XCTAssertEqual(elements(#"for="192.0.2.43:47011""#), ["192.0.2.43:47011|-|-"])
        XCTAssertEqual(elements(#"for="[2001:db8:cafe::17]:47011""#), ["2001:db8:cafe::17:47011|-|-"])
        XCTAssertEqual(elements("host=example.com;proto=https"), ["-|https|example.com"])
        XCTAssertEqual(elements(#"host="example.com:8443""#), ["-|-|example.com:8443@8443"])
        XCTAssertEqual(elements(#"host="[2001:db8::1]:8080""#), ["-|-|[2001:db8::1]:8080@8080"])
        XCTAssertEqual(elements("PROTO=HTTPS;HOST=Example.COM;FOR=192.0.2.1"), ["192.0.2.1|https|Example.COM"])
    }

    /// RFC 7239 §6.2 `unknown`, §6.3 obfuscated identifiers (nodes and ports).
    func testRFC7239Section6NodeNames() {
        XCTAssertEqual(elements("for=unknown"), ["unknown|-|-"])
        XCTAssertEqual(elements("for=UNKNOWN"), ["unknown|-|-"])
        XCTAssertEqual(elements(#"for="unknown:_port""#), ["unknown|-|-"])
        XCTAssertEqual(elements("for=_hidden, for=_SEVKISEK"), ["_hidden|-|-", "_SEVKISEK|-|-"])
        XCTAssertEqual(elements(#"for="_hidden:_p.1""#), ["_hidden|-|-"])
        XCTAssertEqual(elements(#"for="192.0.2.43:_abc""#), ["192.0.2.43|-|-"])
        XCTAssertEqual(elements(#"for="[::1]""#), ["::1|-|-"])
    }

    /// RFC 7239 §7.1: one field value or several, the same list.
    func testRFC7239Section7ListsAcrossFieldLines() {
        let joined = elements(#"for=192.0.2.43,for="[2001:db8:cafe::17]",for=unknown"#)
        XCTAssertEqual(joined, ["192.0.2.43|-|-", "2001:db8:cafe::17|-|-", "unknown|-|-"])
        XCTAssertEqual(elements(#"for=192.0.2.43, for="[2001:db8:cafe::17]", for=unknown"#), joined)
        XCTAssertEqual(elements("for=192.0.2.43") + elements(#"for="[2001:db8:cafe::17]", for=unknown"#), joined)
    }

    /// RFC 7239 §7.5's example of a request through two proxies.
    func testRFC7239Section7Dot5Example() {
        XCTAssertEqual(elements("for=192.0.2.43,for=198.51.100.17;by=203.0.113.60;proto=http;host=example.com"),
                       ["192.0.2.43|-|-", "198.51.100.17|http|example.com"])
    }

    func testQuotedStringsWithQuotedPairsKeepElementsApart() {
        // A comma and a semicolon inside quotes belong to the value.
        XCTAssertEqual(elements(#"ext="a,b;c", for=192.0.2.1"#), ["-|-|-", "192.0.2.1|-|-"])
        // An escaped quote does not end the string.
        XCTAssertEqual(elements(#"ext="a\",for=1.1.1.1", for=192.0.2.1"#), ["-|-|-", "192.0.2.1|-|-"])
        // A value with a quoted-pair cannot be handed out as a slice: not valid for its parameter.
        XCTAssertEqual(elements(#"for="\192.0.2.1";proto="\https";host="exa\mple""#), ["!|-|-"])
    }

    func testEmptyElementsAndPairsAreIgnored() {
        XCTAssertEqual(elements(""), [])
        XCTAssertEqual(elements(" , ,, "), [])
        XCTAssertEqual(elements(",for=192.0.2.1,,"), ["192.0.2.1|-|-"])
        XCTAssertEqual(elements(";;for=192.0.2.1;;"), ["192.0.2.1|-|-"])
        XCTAssertEqual(elements(";"), ["-|-|-"])
        XCTAssertEqual(elements("for=192.0.2.1 ; proto=https"), ["192.0.2.1|https|-"])
    }

    func testRepeatedParameterIsNotValid() {
        XCTAssertEqual(elements("for=192.0.2.1;for=192.0.2.2"), ["!|-|-"])
        XCTAssertEqual(elements("for=192.0.2.1;proto=http;proto=https"), ["192.0.2.1|-|-"])
        XCTAssertEqual(elements("host=a;host=a;for=192.0.2.1"), ["192.0.2.1|-|-"])
    }

    /// Hostile input: each bad element is malformed or loses the bad
    /// parameter; the elements around it survive.
    func testHostileElementsTable() {
        let table: [(String, [String])] = [
            ("for=", ["!|-|-"]),
            ("=x", ["!|-|-"]),
            ("for", ["!|-|-"]),
            ("for==1.2.3.4", ["!|-|-"]),
            ("for =1.2.3.4", ["!|-|-"]),
            ("for= 1.2.3.4", ["!|-|-"]),
            ("for=192.0.2.43:47011", ["!|-|-"]),  // ':' is not a tchar: the RFC requires quotes
            (#"for=[2001:db8::1]"#, ["!|-|-"]),
            (#"for="2001:db8::1""#, ["!|-|-"]),  // IPv6 without brackets is not a node
            (#"for="[2001:db8::1]:65536""#, ["!|-|-"]),
            (#"for="192.0.2.1:123456""#, ["!|-|-"]),
            (#"for="192.0.2.1:""#, ["!|-|-"]),
            (#"for="192.0.2.1:-1""#, ["!|-|-"]),
            (#"for="[2001:db8::1""#, ["!|-|-"]),
            (#"for="[1.2.3.4]""#, ["!|-|-"]),
            (#"for="_""#, ["!|-|-"]),
            (#"for="_a b""#, ["!|-|-"]),
            ("for=1.2.3.256", ["!|-|-"]),
            ("for=01.2.3.4", ["!|-|-"]),
            ("for=localhost", ["!|-|-"]),
            (#"for="1.2.3.4"x, for=192.0.2.9"#, ["!|-|-", "192.0.2.9|-|-"]),
            (#"for="unterminated, for=192.0.2.9"#, ["!|-|-"]),
            ("for=1.2.3.4 x, for=192.0.2.9", ["!|-|-", "192.0.2.9|-|-"]),
            ("for=\u{1}, for=192.0.2.9", ["!|-|-", "192.0.2.9|-|-"]),
            ("for=\"a\u{1}b\", for=192.0.2.9", ["!|-|-", "192.0.2.9|-|-"]),
            ("for=\"a\u{7F}\", for=192.0.2.9", ["!|-|-", "192.0.2.9|-|-"]),
            ("proto=ftp;for=192.0.2.1", ["192.0.2.1|-|-"]),
            ("proto=;for=192.0.2.1", ["!|-|-"]),
            ("proto=https:;for=192.0.2.1", ["!|-|-"]),
            (#"host="a b";for=192.0.2.1"#, ["192.0.2.1|-|-"]),
            (#"host="a/b";for=192.0.2.1"#, ["192.0.2.1|-|-"]),
            (#"host="a@b";for=192.0.2.1"#, ["192.0.2.1|-|-"]),
            (#"host="a:99999";for=192.0.2.1"#, ["192.0.2.1|-|-"]),
            (#"host="a:";for=192.0.2.1"#, ["192.0.2.1|-|-"]),
            (#"host="";for=192.0.2.1"#, ["192.0.2.1|-|-"]),
            (#"host="[::1";for=192.0.2.1"#, ["192.0.2.1|-|-"]),
            (#"host="%zz";for=192.0.2.1"#, ["192.0.2.1|-|-"]),
            (#"host="%41";for=192.0.2.1"#, ["192.0.2.1|-|%41"]),
            ("for=192.0.2.1;by=", ["!|-|-"]),
            ("by=_x;for=192.0.2.1;ext=\"ok\"", ["192.0.2.1|-|-"]),
        ]
        for (line, expected) in table {
            XCTAssertEqual(elements(line), expected, line.debugDescription)
        }
    }

    func testNonASCIIAndControlBytesNeverEscapeTheLine() {
        let bytes: [UInt8] = Array("for=\"".utf8) + [0xFF, 0x80] + Array("\", for=192.0.2.1".utf8)
        let result = bytes.withUnsafeBytes { raw -> Int in
            var list = ForwardedElements(raw)
            var n = 0
            while list.next() != nil { n += 1 }
            return n
        }
        XCTAssertEqual(result, 2)
    }
}
