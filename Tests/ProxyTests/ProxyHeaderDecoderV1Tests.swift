import XCTest
import Core

@testable import Proxy

/// PROXY protocol version 1, the text line (HAProxy spec §2.1).
final class ProxyHeaderDecoderV1Tests: XCTestCase {
    private func line(_ s: String) -> [UInt8] { Array(s.utf8) }

    func testTCP4LineGivesTheClientAndLeavesWhatFollows() {
        let bytes = line("PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\nGET / HTTP/1.1\r\n")
        let expected = ProxyHeader(length: 45, version: .v1, command: .proxy, transport: .stream,
                                   endpoints: .ip(source: ip("192.0.2.1"), sourcePort: 56324,
                                                  destination: ip("198.51.100.2"), destinationPort: 443),
                                   tlvs: .empty, ssl: nil)
        XCTAssertEqual(decode(bytes), .complete(expected))
    }

    func testTCP6Line() {
        guard let h = header(line("PROXY TCP6 2001:db8::1 ::ffff:10.0.0.1 0 65535\r\n")) else { return XCTFail() }
        XCTAssertEqual(h.endpoints, .ip(source: ip("2001:db8::1"), sourcePort: 0, destination: ip("::ffff:10.0.0.1"),
                                        destinationPort: 65535))
        XCTAssertEqual(h.length, 48)
    }

    /// §2.1: with UNKNOWN "the receiver must ignore anything presented
    /// before the CRLF" and keep the socket's addresses.
    func testUnknownKeepsTheSocketAddresses() {
        XCTAssertEqual(header(line("PROXY UNKNOWN\r\n"))?.endpoints, .keepSocket)
        XCTAssertEqual(header(line("PROXY UNKNOWN\r\n"))?.length, 15)
        XCTAssertEqual(header(line("PROXY UNKNOWN whatever 1.2.3 is here\r\n"))?.endpoints, .keepSocket)
    }

    /// §2.1: the worst case is 107 bytes; one more is refused.
    func testLengthBoundIs107Bytes() {
        let full = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
        let longest = line("PROXY UNKNOWN \(full) \(full) 65535 65535\r\n")
        XCTAssertEqual(longest.count, 107)
        XCTAssertEqual(header(longest)?.length, 107)
        let tcp6 = line("PROXY TCP6 \(full) \(full) 65535 65535\r\n")
        XCTAssertEqual(header(tcp6)?.length, 104)
        let over = line("PROXY UNKNOWN \(full) \(full) 65535 655355\r\n")
        XCTAssertEqual(decode(over), .failed(.v1TooLong))
        // Without CRLF, the 107th byte decides.
        XCTAssertEqual(decode(Array(over.prefix(106))), .needMoreData(atLeast: 107))
        XCTAssertEqual(decode(Array(over.prefix(107))), .failed(.v1TooLong))
        XCTAssertEqual(decode(line("PROXY ") + [UInt8](repeating: 0x41, count: 200)), .failed(.v1TooLong))
    }

    func testHostileLinesTable() {
        let table: [(String, ProxyHeaderError)] = [
            ("PROXY\r\n", .missingSignature),
            ("PROX TCP4\r\n", .missingSignature),
            ("proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n", .missingSignature),
            ("PROXY  TCP4 1.2.3.4 5.6.7.8 1 2\r\n", .v1Malformed(.protocolName)),
            ("PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n", .v1Malformed(.protocolName)),
            ("PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n", .v1Malformed(.protocolName)),
            ("PROXY UNKNOWNX\r\n", .v1Malformed(.protocolName)),
            ("PROXY \r\n", .v1Malformed(.protocolName)),
            ("PROXY TCP4\r\n", .v1Malformed(.separator)),
            ("PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", .v1Malformed(.separator)),
            ("PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n", .v1Malformed(.separator)),
            ("PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n", .v1Malformed(.separator)),
            ("PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n", .v1Malformed(.separator)),
            ("PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n", .v1Malformed(.sourceAddress)),
            ("PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n", .v1Malformed(.sourceAddress)),
            ("PROXY TCP4 ::1 5.6.7.8 1 2\r\n", .v1Malformed(.sourceAddress)),
            ("PROXY TCP4 1.2.3.4 5.6.7 1 2\r\n", .v1Malformed(.destinationAddress)),
            ("PROXY TCP6 1.2.3.4 ::1 1 2\r\n", .v1Malformed(.sourceAddress)),
            ("PROXY TCP6 ::1 1.2.3.4 1 2\r\n", .v1Malformed(.destinationAddress)),
            ("PROXY TCP6 [::1] ::1 1 2\r\n", .v1Malformed(.sourceAddress)),
            ("PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n", .v1Malformed(.sourcePort)),
            ("PROXY TCP4 1.2.3.4 5.6.7.8 080 2\r\n", .v1Malformed(.sourcePort)),
            ("PROXY TCP4 1.2.3.4 5.6.7.8 00 2\r\n", .v1Malformed(.sourcePort)),
            ("PROXY TCP4 1.2.3.4 5.6.7.8 +1 2\r\n", .v1Malformed(.sourcePort)),
            ("PROXY TCP4 1.2.3.4 5.6.7.8 1 99999\r\n", .v1Malformed(.destinationPort)),
            ("PROXY TCP4 1.2.3.4 5.6.7.8 1 0x1\r\n", .v1Malformed(.destinationPort)),
            ("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", .v1Malformed(.lineEnding)),
            ("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\r\n", .v1Malformed(.lineEnding)),
            ("PROXY TCP4 1.2.3.4\t5.6.7.8 1 2\r\n", .v1Malformed(.character)),
            ("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\u{0}\r\n", .v1Malformed(.character)),
            ("PROXY UNKNOWN \u{7F}\r\n", .v1Malformed(.character)),
            ("GET / HTTP/1.1\r\n", .missingSignature),
            ("\u{16}\u{3}\u{1}", .missingSignature),
        ]
        for (input, error) in table {
            XCTAssertEqual(decode(line(input)), .failed(error), input.debugDescription)
        }
        XCTAssertEqual(decode(line("PROXY UNKNOWN ") + [0xC3, 0xA9] + line("\r\n")), .failed(.v1Malformed(.character)))
    }

    /// A failure is reported as soon as the bytes show it, without waiting.
    func testBadPrefixIsRefusedAtOnce() {
        XCTAssertEqual(decode(line("G")), .failed(.missingSignature))
        XCTAssertEqual(decode(line("PX")), .failed(.missingSignature))
        XCTAssertEqual(decode(line("PROXY TCP4 1.2.3.4\u{1}")), .failed(.v1Malformed(.character)))
        XCTAssertEqual(decode(line("PROXY TCP4 1.2.3.4\n")), .failed(.v1Malformed(.lineEnding)))
    }

    func testNeedMoreDataNamesTheLeastTotal() {
        XCTAssertEqual(decode([]), .needMoreData(atLeast: 1))
        XCTAssertEqual(decode(line("P")), .needMoreData(atLeast: 15))
        XCTAssertEqual(decode(line("PROXY UNKNOWN")), .needMoreData(atLeast: 15))
        XCTAssertEqual(decode(line("PROXY UNKNOWN\r")), .needMoreData(atLeast: 15))
        XCTAssertEqual(decode(line("PROXY TCP4 1.2.3.4 5.6.7.8 1 2")), .needMoreData(atLeast: 32))
    }

    func testEndOfInputInsideTheLineIsTruncated() {
        XCTAssertEqual(decode([], endOfInput: true), .failed(.truncated))
        XCTAssertEqual(decode(line("PROXY TCP4 1.2.3.4"), endOfInput: true), .failed(.truncated))
        XCTAssertEqual(decode(line("PROXY UNKNOWN\r"), endOfInput: true), .failed(.truncated))
        XCTAssertEqual(header(line("PROXY UNKNOWN\r\n"))?.length, 15)
        XCTAssertEqual(decode(line("PROXY UNKNOWN\r\n"), endOfInput: true), decode(line("PROXY UNKNOWN\r\n")))
    }
}
