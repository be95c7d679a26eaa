// Every frame type of RFC 9000 §19 and RFC 9221 §4: encode into a
// marker-filled buffer, compare the exact bytes of the layout, decode back
// and compare fields and spans; then re-encode the decoded frame.

import XCTest
import Core
@testable import QUIC

final class FrameRoundTripTests: XCTestCase {
    private let payload = bytes("hello")

    /// Decodes `wire`, checks it re-encodes to the same bytes, returns it.
    private func roundTrip(_ wire: [UInt8], options: FrameDecodingOptions = clientSide,
                           file: StaticString = #filePath, line: UInt = #line) throws -> Frame {
        let frame = try decodeOne(wire, options: options, file: file, line: line)
        let again = wire.withUnsafeBytes { src in
            encoded(size: frame.encodedSize(source: src), file: file, line: line) { frame.encode(source: src, into: $0) }
        }
        XCTAssertEqual(again, wire, "re-encoding differs", file: file, line: line)
        return frame
    }

    func testPADDINGRunIsOneFrame() throws {
        let wire = encoded(size: 7) { FrameEncoder.encodePadding(count: 7, into: $0) }
        XCTAssertEqual(wire, [UInt8](repeating: 0, count: 7))
        XCTAssertEqual(try roundTrip(wire), .padding(count: 7))
        XCTAssertEqual(try decodeAll(wire + [0x01] + [0, 0]), [.padding(count: 7), .ping, .padding(count: 2)])
    }

    func testPINGAndHANDSHAKE_DONE() throws {
        XCTAssertEqual(encoded(size: 1) { FrameEncoder.encodePing(into: $0) }, [0x01])
        XCTAssertEqual(try roundTrip([0x01]), .ping)
        XCTAssertEqual(encoded(size: 1) { FrameEncoder.encodeHandshakeDone(into: $0) }, [0x1e])
        XCTAssertEqual(try roundTrip([0x1e]), .handshakeDone)
    }

    /// §19.3, §19.3.1: ranges [95...100], [80...90], [3...3]:
    /// largest 100, first range 5; gap = 95-90-2 = 3, length 10; gap = 80-3-2 = 75, length 0.
    func testACKWithRangesAndDelay() throws {
        let ranges: [ClosedRange<UInt64>] = [95...100, 80...90, 3...3]
        let wire = encoded(size: FrameEncoder.ackSize(ranges: ranges, ackDelay: 1000)) {
            FrameEncoder.encodeAck(ranges: ranges, ackDelay: 1000, into: $0)
        }
        XCTAssertEqual(wire, hex("02 40 64 43e8 02 05 03 0a 40 4b 00"))
        guard case .ack(let f) = try roundTrip(wire) else { return XCTFail() }
        XCTAssertEqual(f.largestAcknowledged, 100)
        XCTAssertEqual(f.ackDelay, 1000)
        XCTAssertEqual(f.rangeCount, 2)
        XCTAssertNil(f.ecn)
        XCTAssertEqual(wire.withUnsafeBytes { Array(f.ranges(in: $0)) }, ranges)
    }

    func testACK_ECNCarriesTheThreeCounts() throws {
        let ecn = ECNCounts(ect0: 1, ect1: 2, ce: 300)
        let wire = encoded(size: FrameEncoder.ackSize(ranges: [0...0], ackDelay: 0, ecn: ecn)) {
            FrameEncoder.encodeAck(ranges: [0...0], ackDelay: 0, ecn: ecn, into: $0)
        }
        XCTAssertEqual(wire, hex("03 00 00 00 00 01 02 412c"))
        guard case .ack(let f) = try roundTrip(wire) else { return XCTFail() }
        XCTAssertEqual(f.ecn, ecn)
        XCTAssertEqual(wire.withUnsafeBytes { Array(f.ranges(in: $0)) }, [0...0])
    }

    func testRESET_STREAMAndSTOP_SENDING() throws {
        let reset = encoded(size: FrameEncoder.resetStreamSize(streamID: 4, errorCode: 0x10c, finalSize: 70_000)) {
            FrameEncoder.encodeResetStream(streamID: 4, errorCode: 0x10c, finalSize: 70_000, into: $0)
        }
        XCTAssertEqual(reset, hex("04 04 410c 80011170"))
        XCTAssertEqual(try roundTrip(reset), .resetStream(ResetStreamFrame(streamID: 4, errorCode: 0x10c, finalSize: 70_000)))
        let stop = encoded(size: FrameEncoder.stopSendingSize(streamID: 8, errorCode: 0)) {
            FrameEncoder.encodeStopSending(streamID: 8, errorCode: 0, into: $0)
        }
        XCTAssertEqual(stop, hex("05 08 00"))
        XCTAssertEqual(try roundTrip(stop), .stopSending(StopSendingFrame(streamID: 8, errorCode: 0)))
    }

    func testCRYPTO() throws {
        let wire = payload.withUnsafeBytes { d in
            encoded(size: FrameEncoder.cryptoSize(offset: 100, dataLength: 5)) { FrameEncoder.encodeCrypto(offset: 100, data: d, into: $0) }
        }
        XCTAssertEqual(wire, hex("06 4064 05") + payload)
        guard case .crypto(let f) = try roundTrip(wire) else { return XCTFail() }
        XCTAssertEqual(f.offset, 100)
        XCTAssertEqual(slice(wire, f.data), payload)
    }

    func testNEW_TOKENFromTheServer() throws {
        let wire = payload.withUnsafeBytes { t in encoded(size: FrameEncoder.newTokenSize(tokenLength: 5)) { FrameEncoder.encodeNewToken(t, into: $0) } }
        XCTAssertEqual(wire, hex("07 05") + payload)
        guard case .newToken(let t) = try roundTrip(wire) else { return XCTFail() }
        XCTAssertEqual(slice(wire, t), payload)
    }

    /// §19.8: all eight OFF/LEN/FIN combinations.
    func testSTREAMEveryOFFLENFINCombination() throws {
        for offset in [UInt64(0), 1000] {
            for explicit in [false, true] {
                for fin in [false, true] {
                    let wire = payload.withUnsafeBytes { d in
                        encoded(size: FrameEncoder.streamSize(streamID: 4, offset: offset, dataLength: 5, explicitLength: explicit)) {
                            FrameEncoder.encodeStream(streamID: 4, offset: offset, data: d, fin: fin, explicitLength: explicit, into: $0)
                        }
                    }
                    let type = UInt8(0x08) | (offset > 0 ? 0x04 : 0) | (explicit ? 0x02 : 0) | (fin ? 0x01 : 0)
                    XCTAssertEqual(wire, [type, 0x04] + (offset > 0 ? hex("43e8") : []) + (explicit ? [5] : []) + payload)
                    guard case .stream(let f) = try roundTrip(wire) else { return XCTFail() }
                    XCTAssertEqual(f.streamID, 4)
                    XCTAssertEqual(f.offset, offset)
                    XCTAssertEqual(f.fin, fin)
                    XCTAssertEqual(f.hasLength, explicit)
                    XCTAssertEqual(slice(wire, f.data), payload)
                }
            }
        }
    }

    func testSTREAMWithoutLengthTakesTheRestOfThePacket() throws {
        let frames = try decodeAll(hex("01 08 00") + payload)  // PING, STREAM id 0, data to the end
        guard frames.count == 2, case .stream(let f) = frames[1] else { return XCTFail("\(frames)") }
        XCTAssertEqual(f.data, ByteSpan(offset: 3, length: 5))
    }

    func testFlowControlFrames() throws {
        XCTAssertEqual(encoded(size: 5) { FrameEncoder.encodeMaxData(1 << 20, into: $0) }, hex("10 80100000"))
        XCTAssertEqual(try roundTrip(hex("10 80100000")), .maxData(1 << 20))
        XCTAssertEqual(encoded(size: 4) { FrameEncoder.encodeMaxStreamData(streamID: 0, maximum: 64, into: $0) }, hex("11 00 4040"))
        XCTAssertEqual(try roundTrip(hex("11 00 4040")), .maxStreamData(MaxStreamDataFrame(streamID: 0, maximum: 64)))
        XCTAssertEqual(encoded(size: 3) { FrameEncoder.encodeMaxStreams(bidirectional: true, limit: 100, into: $0) }, hex("12 4064"))
        XCTAssertEqual(try roundTrip(hex("12 4064")), .maxStreams(StreamLimitFrame(bidirectional: true, limit: 100)))
        XCTAssertEqual(encoded(size: 2) { FrameEncoder.encodeMaxStreams(bidirectional: false, limit: 3, into: $0) }, hex("13 03"))
        XCTAssertEqual(try roundTrip(hex("13 03")), .maxStreams(StreamLimitFrame(bidirectional: false, limit: 3)))
        XCTAssertEqual(encoded(size: 2) { FrameEncoder.encodeDataBlocked(9, into: $0) }, hex("14 09"))
        XCTAssertEqual(try roundTrip(hex("14 09")), .dataBlocked(9))
        XCTAssertEqual(encoded(size: 3) { FrameEncoder.encodeStreamDataBlocked(streamID: 1, limit: 2, into: $0) }, hex("15 01 02"))
        XCTAssertEqual(try roundTrip(hex("15 01 02")), .streamDataBlocked(StreamDataBlockedFrame(streamID: 1, limit: 2)))
        XCTAssertEqual(encoded(size: 2) { FrameEncoder.encodeStreamsBlocked(bidirectional: true, limit: 7, into: $0) }, hex("16 07"))
        XCTAssertEqual(try roundTrip(hex("16 07")), .streamsBlocked(StreamLimitFrame(bidirectional: true, limit: 7)))
        XCTAssertEqual(encoded(size: 2) { FrameEncoder.encodeStreamsBlocked(bidirectional: false, limit: 7, into: $0) }, hex("17 07"))
        XCTAssertEqual(try roundTrip(hex("17 07")), .streamsBlocked(StreamLimitFrame(bidirectional: false, limit: 7)))
        // MAX_STREAMS at exactly 2^60 is allowed.
        XCTAssertEqual(try roundTrip(hex("12 d000000000000000")), .maxStreams(StreamLimitFrame(bidirectional: true, limit: 1 << 60)))
    }

    func testNEW_CONNECTION_IDAndRETIRE_CONNECTION_ID() throws {
        let token = StatelessResetToken(high: 0x0011_2233_4455_6677, low: 0x8899_aabb_ccdd_eeff)
        let id = cid("0102030405060708")
        let wire = encoded(size: FrameEncoder.newConnectionIDSize(sequenceNumber: 2, retirePriorTo: 1, connectionID: id)) {
            FrameEncoder.encodeNewConnectionID(sequenceNumber: 2, retirePriorTo: 1, connectionID: id, statelessResetToken: token, into: $0)
        }
        XCTAssertEqual(wire, hex("18 02 01 08 0102030405060708 00112233445566778899aabbccddeeff"))
        XCTAssertEqual(try roundTrip(wire), .newConnectionID(NewConnectionIDFrame(sequenceNumber: 2, retirePriorTo: 1,
                                                                                    connectionID: id, statelessResetToken: token)))
        XCTAssertEqual(encoded(size: 2) { FrameEncoder.encodeRetireConnectionID(sequenceNumber: 5, into: $0) }, hex("19 05"))
        XCTAssertEqual(try roundTrip(hex("19 05")), .retireConnectionID(sequenceNumber: 5))
    }

    func testPATH_CHALLENGEAndPATH_RESPONSE() throws {
        XCTAssertEqual(encoded(size: 9) { FrameEncoder.encodePathChallenge(0x0102_0304_0506_0708, into: $0) }, hex("1a 0102030405060708"))
        XCTAssertEqual(try roundTrip(hex("1a 0102030405060708")), .pathChallenge(0x0102_0304_0506_0708))
        XCTAssertEqual(encoded(size: 9) { FrameEncoder.encodePathResponse(42, into: $0) }, hex("1b 000000000000002a"))
        XCTAssertEqual(try roundTrip(hex("1b 000000000000002a")), .pathResponse(42))
    }

    /// §19.19: type 0x1c carries the frame type, 0x1d does not.
    func testCONNECTION_CLOSEBothTypes() throws {
        let transport = payload.withUnsafeBytes { r in
            encoded(size: FrameEncoder.connectionCloseSize(errorCode: 0x0a, frameType: 0x06, reasonLength: 5)) {
                FrameEncoder.encodeConnectionClose(errorCode: 0x0a, frameType: 0x06, reason: r, into: $0)
            }
        }
        XCTAssertEqual(transport, hex("1c 0a 06 05") + payload)
        guard case .connectionClose(let t) = try roundTrip(transport) else { return XCTFail() }
        XCTAssertFalse(t.isApplicationClose)
        XCTAssertEqual(t.errorCode, 0x0a)
        XCTAssertEqual(t.frameType, 0x06)
        XCTAssertEqual(slice(transport, t.reasonPhrase), payload)
        let application = encoded(size: FrameEncoder.connectionCloseSize(errorCode: 0x100, frameType: nil, reasonLength: 0)) {
            FrameEncoder.encodeConnectionClose(errorCode: 0x100, frameType: nil, reason: UnsafeRawBufferPointer(start: nil, count: 0), into: $0)
        }
        XCTAssertEqual(application, hex("1d 4100 00"))
        XCTAssertEqual(try roundTrip(application),
                       .connectionClose(ConnectionCloseFrame(isApplicationClose: true, errorCode: 0x100, frameType: 0,
                                                             reasonPhrase: ByteSpan(offset: 4, length: 0))))
    }

    /// Our own connection errors close with their code and frame type.
    func testCONNECTION_CLOSEFromAQUICError() throws {
        let wire = encoded(size: FrameEncoder.connectionCloseSize(errorCode: 0x07, frameType: 0x02, reasonLength: 0)) {
            FrameEncoder.encodeConnectionClose(QUICError.ackRangeNegative.inFrame(0x02), reason: UnsafeRawBufferPointer(start: nil, count: 0), into: $0)
        }
        XCTAssertEqual(wire, hex("1c 07 02 00"))
    }

    /// RFC 9221 §4: 0x31 with Length, 0x30 to the end of the packet.
    func testDATAGRAMWithAndWithoutLength() throws {
        for explicit in [true, false] {
            let wire = payload.withUnsafeBytes { d in
                encoded(size: FrameEncoder.datagramSize(dataLength: 5, explicitLength: explicit)) {
                    FrameEncoder.encodeDatagram(d, explicitLength: explicit, into: $0)
                }
            }
            XCTAssertEqual(wire, (explicit ? hex("31 05") : hex("30")) + payload)
            guard case .datagram(let f) = try roundTrip(wire) else { return XCTFail() }
            XCTAssertEqual(f.hasLength, explicit)
            XCTAssertEqual(slice(wire, f.data), payload)
        }
    }

    /// Non-minimal integers inside a frame are valid and decode to the same
    /// values (only the frame type must be minimal, §12.4).
    func testNonMinimalFieldsDecode() throws {
        XCTAssertEqual(try decodeOne(hex("10 4005")), .maxData(5))
        XCTAssertEqual(try decodeOne(hex("19 80000005")), .retireConnectionID(sequenceNumber: 5))
    }

    func testAckElicitingClassification() {
        XCTAssertFalse(Frame.padding(count: 1).isAckEliciting)
        XCTAssertFalse(Frame.ack(AckFrame(largestAcknowledged: 0, ackDelay: 0, firstRange: 0, rangeCount: 0,
                                          additionalRanges: .empty, ecn: nil)).isAckEliciting)
        XCTAssertTrue(Frame.ping.isAckEliciting)
        XCTAssertTrue(Frame.handshakeDone.isAckEliciting)
    }
}
