import XCTest
import Core

@testable import Proxy

/// PROXY protocol version 2, the binary header (HAProxy spec §2.2).
final class ProxyHeaderDecoderV2Tests: XCTestCase {
    static let tcp4Body: [UInt8] = [192, 0, 2, 1, 198, 51, 100, 2] + be16(56324) + be16(443)
    static let tcp6Body: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1]
        + [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [2] + be16(1234) + be16(8443)

    func testPROXYOverTCP4() {
        let bytes = v2(family: 0x11, body: Self.tcp4Body) + Array("GET /".utf8)
        let expected = ProxyHeader(length: 28, version: .v2, command: .proxy, transport: .stream,
                                   endpoints: .ip(source: ip("192.0.2.1"), sourcePort: 56324,
                                                  destination: ip("198.51.100.2"), destinationPort: 443),
                                   tlvs: ByteSpan(offset: 28, length: 0), ssl: nil)
        XCTAssertEqual(decode(bytes), .complete(expected))
        guard let client = header(bytes)?.clientAddress, let server = header(bytes)?.serverAddress else { return XCTFail() }
        XCTAssertTrue(client.address.isIPv4)
        XCTAssertEqual(client.port, 56324)
        XCTAssertEqual(server.address.description, "198.51.100.2")
        XCTAssertEqual(server.port, 443)
    }

    func testPROXYOverTCP6() {
        guard let h = header(v2(family: 0x21, body: Self.tcp6Body)) else { return XCTFail() }
        XCTAssertEqual(h.endpoints, .ip(source: ip("2001:db8::1"), sourcePort: 1234, destination: ip("2001:db8::2"),
                                        destinationPort: 8443))
        XCTAssertEqual(h.length, 52)
        XCTAssertEqual(h.transport, .stream)
    }

    func testDatagramTransportIsReported() {
        XCTAssertEqual(header(v2(family: 0x12, body: Self.tcp4Body))?.transport, .datagram)
        XCTAssertEqual(header(v2(family: 0x22, body: Self.tcp6Body))?.transport, .datagram)
    }

    func testUnixAddressesAreSpansCutAtTheirNUL() {
        var src = Array("/run/haproxy.sock".utf8)
        src += [UInt8](repeating: 0, count: 108 - src.count)
        var dst = Array("/run/app.sock".utf8)
        dst += [UInt8](repeating: 0, count: 108 - dst.count)
        let bytes = v2(family: 0x31, body: src + dst)
        guard let h = header(bytes), case .unix(let s, let d) = h.endpoints else { return XCTFail() }
        XCTAssertEqual(text(bytes, s), "/run/haproxy.sock")
        XCTAssertEqual(text(bytes, d), "/run/app.sock")
        XCTAssertEqual(h.length, 16 + 216)
        // An abstract socket name (leading NUL) is an empty span; a full
        // 108-byte path without NUL is kept whole.
        let full = [UInt8](repeating: 0x61, count: 108)
        let abstract = [0] + [UInt8](repeating: 0x62, count: 107)
        guard case .unix(let s2, let d2)? = header(v2(family: 0x32, body: full + abstract))?.endpoints else { return XCTFail() }
        XCTAssertEqual(s2.length, 108)
        XCTAssertEqual(d2.length, 0)
    }

    /// §2.2: LOCAL "must use the real connection endpoints and discard the
    /// protocol block including the family which is ignored".
    func testLocalKeepsTheSocketAndIgnoresTheBlock() {
        let plain = v2(command: 0x20, family: 0x00, body: [])
        XCTAssertNil(header(plain)?.clientAddress)
        XCTAssertEqual(decode(plain), .complete(ProxyHeader(length: 16, version: .v2, command: .local, transport: .unspecified,
                                                             endpoints: .keepSocket, tlvs: .empty, ssl: nil)))
        let withJunk = v2(command: 0x20, family: 0xFF, body: [1, 2, 3] + tlv(0x20, [1]))
        XCTAssertEqual(header(withJunk)?.endpoints, .keepSocket)
        XCTAssertEqual(header(withJunk)?.length, 16 + 7)
        XCTAssertEqual(header(withJunk)?.ssl, nil)
    }

    /// §2.2: UNSPEC under PROXY: the addresses are ignored, the socket's kept.
    func testUnspecKeepsTheSocket() {
        let h = header(v2(family: 0x00, body: [9, 9, 9, 9]))
        XCTAssertEqual(h?.command, .proxy)
        XCTAssertEqual(h?.endpoints, .keepSocket)
        XCTAssertEqual(h?.length, 20)
    }

    /// §2.2 TLVs, with §2.2.5 PP2_TYPE_SSL noted.
    func testTLVsAreWalkedAndSSLIsNoted() {
        let ssl = tlv(0x20, [0x07, 0, 0, 0, 0] + tlv(0x21, Array("TLSv1.3".utf8)) + tlv(0x22, Array("client".utf8)))
        let tlvs = tlv(0x01, Array("h2".utf8)) + tlv(0x02, Array("example.com".utf8)) + tlv(0x04, []) + ssl
            + tlv(0xE0, [1, 2, 3])
        let bytes = v2(family: 0x21, body: Self.tcp6Body + tlvs)
        guard let h = header(bytes) else { return XCTFail("\(decode(bytes))") }
        XCTAssertEqual(h.ssl, ProxyHeader.SSL(client: 0x07, verify: 0))
        XCTAssertEqual(h.ssl?.clientUsedTLS, true)
        XCTAssertEqual(h.tlvs, ByteSpan(offset: 52, length: tlvs.count))
        var walk = bytes.withUnsafeBytes { ProxyTLVs($0, h.tlvs) }
        var seen: [(UInt8, String)] = []
        var sslValue = ByteSpan.empty
        while let t = walk.next() {
            seen.append((t.type, text(bytes, t.value)))
            if t.type == ProxyTLVs.typeSSL { sslValue = t.value }
        }
        XCTAssertFalse(walk.overran)
        XCTAssertEqual(seen.map(\.0), [0x01, 0x02, 0x04, 0x20, 0xE0])
        XCTAssertEqual(seen[0].1, "h2")
        XCTAssertEqual(seen[1].1, "example.com")
        // SSL's sub-TLVs walk the same way, inside its value after 5 bytes.
        XCTAssertEqual(sslValue.count, ssl.count - 3)
        var sub = bytes.withUnsafeBytes { ProxyTLVs($0, ByteSpan(offset: sslValue.start + 5, length: sslValue.count - 5)) }
        XCTAssertEqual(sub.next().map { text(bytes, $0.value) }, "TLSv1.3")
        XCTAssertEqual(sub.next().map { text(bytes, $0.value) }, "client")
        XCTAssertNil(sub.next())
        XCTAssertEqual(header(v2(family: 0x11, body: Self.tcp4Body + tlv(0x20, [0, 0, 0, 0, 1])))?.ssl,
                       ProxyHeader.SSL(client: 0, verify: 1))
    }

    func testErrorClasses() {
        let table: [([UInt8], ProxyHeaderError)] = [
            ([0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0B], .missingSignature),
            (v2(command: 0x11, family: 0x11, body: Self.tcp4Body), .v2BadVersion),
            (v2(command: 0x31, family: 0x11, body: Self.tcp4Body), .v2BadVersion),
            (v2(command: 0x22, family: 0x11, body: Self.tcp4Body), .v2BadCommand),
            (v2(command: 0x2F, family: 0x11, body: Self.tcp4Body), .v2BadCommand),
            (v2(family: 0x13, body: Self.tcp4Body), .v2BadFamily),
            (v2(family: 0x41, body: Self.tcp4Body), .v2BadFamily),
            (v2(family: 0x01, body: Self.tcp4Body), .v2BadFamily),
            (v2(family: 0x10, body: Self.tcp4Body), .v2BadFamily),
            (v2(family: 0x11, body: Array(Self.tcp4Body.prefix(11))), .v2AddressLengthMismatch),
            (v2(family: 0x21, body: Self.tcp4Body), .v2AddressLengthMismatch),
            (v2(family: 0x31, body: Self.tcp6Body), .v2AddressLengthMismatch),
            (v2(family: 0x11, body: Self.tcp4Body + [0x01, 0x00]), .v2TLVOverrun),
            (v2(family: 0x11, body: Self.tcp4Body + [0x01, 0x00, 0x02, 0x41]), .v2TLVOverrun),
            (v2(family: 0x11, body: Self.tcp4Body + tlv(0x01, [1]) + [0x05]), .v2TLVOverrun),
            (v2(family: 0x11, body: Self.tcp4Body + [0x20, 0xFF, 0xFF]), .v2TLVOverrun),
            (v2(family: 0x11, body: Self.tcp4Body + tlv(0x20, [1, 0, 0, 0])), .v2MalformedSSL),
            (v2(family: 0x11, body: Self.tcp4Body, length: 5000), .v2TooLong),
        ]
        for (bytes, error) in table {
            XCTAssertEqual(decode(bytes), .failed(error), "\(bytes)")
        }
    }

    /// The length cap is the caller's; it is checked from the fixed 16 bytes.
    func testLengthCapIsCheckedBeforeTheBody() {
        let header16 = Array(v2(family: 0x11, body: [], length: 4097))
        XCTAssertEqual(decode(header16), .failed(.v2TooLong))
        XCTAssertEqual(decode(v2(family: 0x11, body: [], length: 4096)), .needMoreData(atLeast: 16 + 4096))
        XCTAssertEqual(decode(v2(family: 0x11, body: Self.tcp4Body + [UInt8](repeating: 4, count: 20)), maxV2Length: 31),
                       .failed(.v2TooLong))
        XCTAssertEqual(header(v2(family: 0x11, body: Self.tcp4Body + tlv(0x04, [UInt8](repeating: 0, count: 16))))?.length, 47)
        XCTAssertEqual(decode(v2(family: 0x11, body: [], length: 65535), maxV2Length: 100_000),
                       .needMoreData(atLeast: 65551))
    }

    /// Results travel by value through the worker; keep them small.
    func testValueSizesStaySmall() {
        XCTAssertLessThanOrEqual(MemoryLayout<ProxyHeader>.size, 96)
        XCTAssertLessThanOrEqual(MemoryLayout<ProxyHeaderResult>.size, 97)
    }

    func testNeedMoreDataAndTruncation() {
        let whole = v2(family: 0x11, body: Self.tcp4Body)
        XCTAssertEqual(decode(Array(whole.prefix(1))), .needMoreData(atLeast: 16))
        XCTAssertEqual(decode(Array(whole.prefix(15))), .needMoreData(atLeast: 16))
        XCTAssertEqual(decode(Array(whole.prefix(16))), .needMoreData(atLeast: 28))
        XCTAssertEqual(decode(Array(whole.prefix(27))), .needMoreData(atLeast: 28))
        XCTAssertEqual(decode(Array(whole.prefix(27)), endOfInput: true), .failed(.truncated))
        XCTAssertEqual(decode(Array(whole.prefix(3)), endOfInput: true), .failed(.truncated))
    }
}
