// RFC 9000 §17.1 and Appendix A.2/A.3 packet number truncation and recovery.

import XCTest
@testable import QUIC

final class PacketNumberTests: XCTestCase {
    /// A.2: "if an endpoint has received an acknowledgment for packet
    /// 0xabe8b3 and is sending a packet with a number of 0xac5c02, there are
    /// 29,519 (0x734f) outstanding packet numbers. In order to represent at
    /// least twice this range (59,038 packets, or 0xe69e), 16 bits are
    /// required. In the same state, sending a packet with a number of
    /// 0xace8fe uses the 24-bit encoding".
    func testRFC9000AppendixA2EncodingExamples() {
        XCTAssertEqual(PacketNumber.encodedLength(0xac5c02, largestAcknowledged: 0xabe8b3), 2)
        XCTAssertEqual(PacketNumber.encodedLength(0xace8fe, largestAcknowledged: 0xabe8b3), 3)
        XCTAssertEqual(PacketNumber.truncate(0xac5c02, length: 2), 0x5c02)
        XCTAssertEqual(PacketNumber.truncate(0xace8fe, length: 3), 0xace8fe)
    }

    func testEncodedLengthWithoutAcknowledgments() {
        XCTAssertEqual(PacketNumber.encodedLength(0, largestAcknowledged: nil), 1)
        XCTAssertEqual(PacketNumber.encodedLength(126, largestAcknowledged: nil), 1)
        XCTAssertEqual(PacketNumber.encodedLength(127, largestAcknowledged: nil), 2)
        XCTAssertEqual(PacketNumber.encodedLength(1 << 40, largestAcknowledged: nil), 4)
    }

    /// A.3: "if the highest successfully authenticated packet had a packet
    /// number of 0xa82f30ea, then a packet containing a 16-bit value of
    /// 0x9b32 will be decoded as 0xa82f9b32."
    func testRFC9000AppendixA3DecodingExample() {
        XCTAssertEqual(PacketNumber.decode(truncated: 0x9b32, length: 2, largestReceived: 0xa82f30ea), 0xa82f9b32)
    }

    func testDecodeWrapsAroundTheWindowBothWays() {
        // Expected 0x100: a truncated 0xff (1 byte) is 0xff, just below.
        XCTAssertEqual(PacketNumber.decode(truncated: 0xff, length: 1, largestReceived: 0xff), 0xff)
        // Expected 0x1fe: 0x01 is closer as 0x201 than 0x101.
        XCTAssertEqual(PacketNumber.decode(truncated: 0x01, length: 1, largestReceived: 0x1fd), 0x201)
        // Nothing received: expected 0.
        XCTAssertEqual(PacketNumber.decode(truncated: 0, length: 1, largestReceived: nil), 0)
        XCTAssertEqual(PacketNumber.decode(truncated: 0xff, length: 1, largestReceived: nil), 0xff)
        // Never past 2^62 - 1.
        let top = PacketNumber.max
        XCTAssertEqual(PacketNumber.decode(truncated: 0, length: 1, largestReceived: top - 1), top - 0xff)
    }

    func testRoundTripOverManyPacketNumbers() {
        var largest: UInt64? = nil
        var pn: UInt64 = 0
        while pn < 1 << 30 {  // the gap stays within what 4 bytes can cover
            let n = PacketNumber.encodedLength(pn, largestAcknowledged: largest)
            let t = PacketNumber.truncate(pn, length: n)
            XCTAssertEqual(PacketNumber.decode(truncated: UInt64(t), length: n, largestReceived: largest), pn)
            largest = pn
            pn = pn * 3 + 1
        }
    }
}
