// Hostile frames (RFC 9000 §12.4, §19; RFC 9221 §3): each is refused with
// its specific error code and the frame type that carried it.

import XCTest
import Core
@testable import QUIC

final class FrameValidationTests: XCTestCase {
    /// Every frame, cut at every byte before its end, is FRAME_ENCODING_ERROR
    /// ("frame truncated") — except STREAM/DATAGRAM without Length and
    /// PADDING, whose end is the payload's end.
    func testEveryTruncationIsAFrameEncodingError() {
        let frames: [String] = [
            "02 4064 43e8 02 05 03 0a 404b 00", "03 00 00 00 00 01 02 412c", "04 04 410c 80011170", "05 08 00",
            "06 4064 05 68656c6c6f", "0e 04 43e8 05 68656c6c6f", "10 80100000", "11 00 4040", "12 4064", "14 09",
            "15 01 02", "17 07", "18 02 01 08 0102030405060708 00112233445566778899aabbccddeeff", "19 05",
            "1a 0102030405060708", "1c 0a 06 05 68656c6c6f", "1d 4100 00", "31 05 68656c6c6f",
        ]
        for h in frames {
            let wire = hex(h)
            XCTAssertNoThrow(try decodeOne(wire), h)
            for cut in 1..<wire.count {
                let type = UInt64(wire[0])
                XCTAssertThrowsQUIC(QUICError.frameTruncated.inFrame(type)) { _ = try decodeOne(Array(wire[..<cut])) }
            }
        }
    }

    func testTrailingBytesAreTheNextFrame() throws {
        XCTAssertEqual(try decodeAll(hex("10 05 01 01")), [.maxData(5), .ping, .ping])
        // A truncated frame after good ones still fails the packet.
        XCTAssertThrowsQUIC(QUICError.frameTruncated.inFrame(0x11)) { _ = try decodeAll(hex("01 11 00")) }
    }

    func testUnknownFrameTypeIsFrameEncodingError() {
        // (0x1f is IMMEDIATE_ACK now: AckFrequencyFrameTests.)
        XCTAssertThrowsQUIC(QUICError.unknownFrameType.inFrame(0x2f)) { _ = try decodeOne([0x2f]) }
        XCTAssertThrowsQUIC(QUICError.unknownFrameType.inFrame(0x21)) { _ = try decodeOne(hex("21")) }
        XCTAssertThrowsQUIC(QUICError.unknownFrameType.inFrame(0x4000)) { _ = try decodeOne(hex("8000 4000")) }
    }

    /// §12.4: a frame type in more bytes than needed.
    func testNonMinimalFrameTypeIsProtocolViolation() {
        XCTAssertThrowsQUIC(QUICError.frameTypeNotMinimal.inFrame(0x01)) { _ = try decodeOne(hex("4001")) }
    }

    /// §19.3.1: "If any computed packet number is negative, an endpoint MUST
    /// generate a connection error of type FRAME_ENCODING_ERROR."
    func testACKRangeUnderflowIsFrameEncodingError() {
        // First range larger than Largest Acknowledged.
        XCTAssertThrowsQUIC(QUICError.ackRangeNegative.inFrame(0x02)) { _ = try decodeOne(hex("02 05 00 00 06")) }
        // Gap below zero: largest 10, first 5 → smallest 5; gap 4 → 5-4-2 < 0.
        XCTAssertThrowsQUIC(QUICError.ackRangeNegative.inFrame(0x02)) { _ = try decodeOne(hex("02 0a 00 01 05 04 00")) }
        // Length below zero: gap 1 → largest 2; length 3.
        XCTAssertThrowsQUIC(QUICError.ackRangeNegative.inFrame(0x02)) { _ = try decodeOne(hex("02 0a 00 01 05 01 03")) }
        // Exactly reaching 0 is fine: largest 2, length 2.
        XCTAssertNoThrow(try decodeOne(hex("02 0a 00 01 05 01 02")))
        // A huge range count runs out of bytes, not time.
        XCTAssertThrowsQUIC(QUICError.frameTruncated.inFrame(0x02)) { _ = try decodeOne(hex("02 0a 00 bfffffff 00")) }
    }

    /// §19.6/§19.8: offset + length above 2^62-1.
    func testOffsetsPast2To62AreFrameEncodingErrors() {
        XCTAssertThrowsQUIC(QUICError.offsetTooLarge.inFrame(0x06)) { _ = try decodeOne(hex("06 ffffffffffffffff 01 00")) }
        XCTAssertThrowsQUIC(QUICError.offsetTooLarge.inFrame(0x0e)) { _ = try decodeOne(hex("0e 00 ffffffffffffffff 01 00")) }
        XCTAssertNoThrow(try decodeOne(hex("0e 00 ffffffffffffffff 00")))
    }

    /// §19.11, §19.14: stream counts above 2^60.
    func testStreamCountsAbove2To60AreFrameEncodingErrors() {
        for type: UInt8 in [0x12, 0x13, 0x16, 0x17] {
            XCTAssertThrowsQUIC(QUICError.streamLimitTooLarge.inFrame(UInt64(type))) { _ = try decodeOne([type] + hex("d000000000000001")) }
        }
    }

    /// §19.15: connection ID length 0 or 21; Retire Prior To above Sequence Number.
    func testNEW_CONNECTION_IDFieldsOutOfRange() {
        let token = String(repeating: "ab", count: 16)
        XCTAssertThrowsQUIC(QUICError.connectionIDLength.inFrame(0x18)) { _ = try decodeOne(hex("18 01 00 00" + token)) }
        XCTAssertThrowsQUIC(QUICError.connectionIDLength.inFrame(0x18)) {
            _ = try decodeOne(hex("18 01 00 15" + String(repeating: "01", count: 21) + token))
        }
        XCTAssertNoThrow(try decodeOne(hex("18 01 00 14" + String(repeating: "01", count: 20) + token)))
        XCTAssertThrowsQUIC(QUICError.retirePriorToAboveSequence.inFrame(0x18)) { _ = try decodeOne(hex("18 01 02 01 aa" + token)) }
    }

    /// §19.7: empty NEW_TOKEN; a client sending NEW_TOKEN or HANDSHAKE_DONE (§19.20).
    func testNEW_TOKENAndHANDSHAKE_DONERules() {
        XCTAssertThrowsQUIC(QUICError.emptyToken.inFrame(0x07)) { _ = try decodeOne(hex("07 00")) }
        XCTAssertThrowsQUIC(QUICError.serverOnlyFrame.inFrame(0x07)) { _ = try decodeOne(hex("07 01 aa"), options: serverSide) }
        XCTAssertThrowsQUIC(QUICError.serverOnlyFrame.inFrame(0x1e)) { _ = try decodeOne(hex("1e"), options: serverSide) }
    }

    /// RFC 9221 §3: DATAGRAM without the transport parameter, or larger than it.
    func testDATAGRAMRejectedUnlessNegotiatedAndWithinTheLimit() {
        let none = FrameDecodingOptions(maxDatagramFrameSize: nil, peerIsClient: true)
        XCTAssertThrowsQUIC(QUICError.datagramNotNegotiated.inFrame(0x31)) { _ = try decodeOne(hex("31 01 aa"), options: none) }
        XCTAssertThrowsQUIC(QUICError.datagramNotNegotiated.inFrame(0x30)) { _ = try decodeOne(hex("30 aa"), options: none) }
        let small = FrameDecodingOptions(maxDatagramFrameSize: 3, peerIsClient: true)
        XCTAssertNoThrow(try decodeOne(hex("31 01 aa"), options: small))
        XCTAssertThrowsQUIC(QUICError.datagramTooLarge.inFrame(0x31)) { _ = try decodeOne(hex("31 02 aaaa"), options: small) }
    }

    /// §12.4: "An endpoint MUST treat receipt of a packet containing no frames
    /// as a connection error of type PROTOCOL_VIOLATION."
    func testEmptyPayloadIsProtocolViolation() {
        XCTAssertThrowsQUIC(.packetWithoutFrames) { _ = try decodeAll([]) }
    }

    /// §12.4 Table 3, row by row, for every packet kind.
    func testTable3PermittedFramesPerPacketType() {
        // (frame bytes, I, 0, H, 1)
        let rows: [(String, Bool, Bool, Bool, Bool)] = [
            ("00", true, true, true, true),                 // PADDING   IH01
            ("01", true, true, true, true),                 // PING      IH01
            ("02 00 00 00 00", true, false, true, true),    // ACK       IH_1
            ("03 00 00 00 00 00 00 00", true, false, true, true),
            ("04 00 00 00", false, true, false, true),      // RESET_STREAM __01
            ("05 00 00", false, true, false, true),         // STOP_SENDING __01
            ("06 00 00", true, false, true, true),          // CRYPTO    IH_1
            ("07 01 aa", false, false, false, true),        // NEW_TOKEN ___1
            ("08 00", false, true, false, true),            // STREAM    __01
            ("10 00", false, true, false, true),            // MAX_DATA  __01
            ("11 00 00", false, true, false, true),
            ("12 00", false, true, false, true),
            ("13 00", false, true, false, true),
            ("14 00", false, true, false, true),
            ("15 00 00", false, true, false, true),
            ("16 00", false, true, false, true),
            ("17 00", false, true, false, true),
            ("18 00 00 01 aa" + String(repeating: "00", count: 16), false, true, false, true),
            ("19 00", false, true, false, true),
            ("1a 0000000000000000", false, true, false, true),  // PATH_CHALLENGE __01
            ("1b 0000000000000000", false, false, false, true), // PATH_RESPONSE  ___1
            ("1c 00 00 00", true, true, true, true),        // CONNECTION_CLOSE 0x1c: ih01
            ("1d 00 00", false, true, false, true),         // 0x1d: only 0-RTT and 1-RTT
            ("1e", false, false, false, true),              // HANDSHAKE_DONE ___1
            ("30", false, true, false, true),               // DATAGRAM (RFC 9221 §4)
            ("31 00", false, true, false, true),
        ]
        for (h, i, z, hs, one) in rows {
            for (kind, allowed) in [(PacketKind.initial, i), (.zeroRTT, z), (.handshake, hs), (.oneRTT, one)] {
                let wire = hex(h)
                do {
                    _ = try decodeAll(wire, kind: kind, options: clientSide)
                    XCTAssertTrue(allowed, "\(h) accepted in \(kind)")
                } catch {
                    XCTAssertFalse(allowed, "\(h) refused in \(kind): \(error)")
                    XCTAssertEqual(error as? QUICError, QUICError.frameNotPermitted.inFrame(UInt64(wire[0])), h)
                }
            }
        }
    }
}
