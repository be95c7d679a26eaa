import XCTest

@testable import Proxy

/// The verdict does not depend on how the bytes arrive (STYLE §7: whole,
/// split at every point, and followed by extra bytes), and a prefix asks
/// for no more than the header needs.
final class ProxyHeaderDecoderSplitTests: XCTestCase {
    static var vectors: [[UInt8]] {
        let v1 = ["PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n", "PROXY TCP6 2001:db8::1 2001:db8::2 1 2\r\n",
                  "PROXY UNKNOWN\r\n", "PROXY UNKNOWN x y\r\n", "PROXY TCP4 1.2.3.4 5.6.7.8 1 08\r\n",
                  "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", "PROXY TCP4 1.2.\u{1}3.4 5.6.7.8 1 2\r\n"].map { Array($0.utf8) }
        let unix = [UInt8](repeating: 0x2F, count: 216)
        let v2s = [
            v2(family: 0x11, body: ProxyHeaderDecoderV2Tests.tcp4Body),
            v2(family: 0x21, body: ProxyHeaderDecoderV2Tests.tcp6Body + tlv(0x20, [1, 0, 0, 0, 0]) + tlv(0x01, [0x68, 0x32])),
            v2(family: 0x31, body: unix),
            v2(command: 0x20, family: 0x00, body: []),
            v2(family: 0x00, body: [1, 2]),
            v2(family: 0x11, body: ProxyHeaderDecoderV2Tests.tcp4Body + [0x01, 0x00, 0x09]),
            v2(family: 0x44, body: []),
            v2(command: 0x23, family: 0x11, body: []),
            v2(family: 0x21, body: ProxyHeaderDecoderV2Tests.tcp4Body),
        ]
        return v1 + v2s
    }

    func testEveryPrefixAgreesWithTheWholeHeader() {
        for vector in Self.vectors {
            let whole = decode(vector)
            let extra = decode(vector + Array("GET / HTTP/1.1\r\n\r\n".utf8))
            XCTAssertEqual(extra, whole, "bytes after the header changed the verdict: \(vector)")
            if case .needMoreData = whole { XCTFail("vector incomplete: \(vector)") }
            for cut in 0..<vector.count {
                let prefix = Array(vector.prefix(cut))
                switch decode(prefix) {
                case .needMoreData(let atLeast):
                    XCTAssertGreaterThan(atLeast, cut)
                    if case .complete(let h) = whole {
                        XCTAssertLessThanOrEqual(atLeast, h.length, "asked for more than the header at \(cut): \(vector)")
                    }
                    if case .complete = whole {
                        XCTAssertEqual(decode(prefix, endOfInput: true), .failed(.truncated))
                    }
                case let early:
                    XCTAssertEqual(early, whole, "prefix of \(cut) decided differently: \(vector)")
                }
            }
        }
    }

    /// Feeding as a worker does: read what the decoder asks for, split at
    /// every point, one decision, the same.
    func testTwoReadsAtEveryBoundaryGiveTheSameHeader() {
        for vector in Self.vectors {
            let whole = decode(vector)
            for cut in 0...vector.count {
                var buffer = Array(vector.prefix(cut))
                var result = decode(buffer)
                if case .needMoreData = result {
                    buffer = vector
                    result = decode(buffer)
                }
                XCTAssertEqual(result, whole, "split at \(cut): \(vector)")
            }
        }
    }
}
