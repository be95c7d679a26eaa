// ACK_FREQUENCY and IMMEDIATE_ACK (draft-ietf-quic-ack-frequency §4, §5):
// exact bytes, round trip, every split, trailing bytes, and the two
// PROTOCOL_VIOLATIONs the decoder judges (not negotiated; a Request Max
// Ack Delay below our min_ack_delay).

import XCTest
import Core
@testable import QUIC

final class AckFrequencyFrameTests: XCTestCase {
    /// We advertised min_ack_delay = 1000 µs.
    private let negotiated = FrameDecodingOptions(peerIsClient: true, minAckDelay: 1000)
    private let frame = AckFrequencyFrame(sequenceNumber: 3, ackElicitingThreshold: 9, requestMaxAckDelay: 5000,
                                          reorderingThreshold: 0)
    // Type 0xaf (two-byte varint 40 af), sequence 3, threshold 9, 5000 µs (2 bytes: 53 88), reordering 0.
    private let wire = hex("40af 03 09 5388 00")

    func testACK_FREQUENCYBytesAndRoundTrip() throws {
        XCTAssertEqual(encoded(size: FrameEncoder.ackFrequencySize(frame)) { FrameEncoder.encodeAckFrequency(frame, into: $0) }, wire)
        XCTAssertEqual(try decodeOne(wire, options: negotiated), .ackFrequency(frame))
        let again = wire.withUnsafeBytes { src in
            encoded(size: Frame.ackFrequency(frame).encodedSize(source: src)) { Frame.ackFrequency(frame).encode(source: src, into: $0) }
        }
        XCTAssertEqual(again, wire)
        XCTAssertTrue(Frame.ackFrequency(frame).isAckEliciting)
    }

    func testIMMEDIATE_ACKBytesAndRoundTrip() throws {
        XCTAssertEqual(encoded(size: 1) { FrameEncoder.encodeImmediateAck(into: $0) }, [0x1f])
        XCTAssertEqual(try decodeOne([0x1f], options: negotiated), .immediateAck)
        XCTAssertTrue(Frame.immediateAck.isAckEliciting)
    }

    /// Split at every byte: each prefix is truncated; followed by a PING,
    /// the frame is the same and the PING follows.
    func testEverySplitAndTrailingBytes() throws {
        XCTAssertThrowsError(try decodeAll([wire[0]], options: negotiated), "half a frame type")
        for cut in 2..<wire.count {
            XCTAssertThrowsQUIC(QUICError.frameTruncated.inFrame(FrameType.ackFrequency)) {
                _ = try decodeAll(Array(wire[..<cut]), options: negotiated)
            }
        }
        XCTAssertEqual(try decodeAll(wire + [0x01], options: negotiated), [.ackFrequency(frame), .ping])
        XCTAssertEqual(try decodeAll([0x1f, 0x01], options: negotiated), [.immediateAck, .ping])
    }

    /// §3: only a peer we offered min_ack_delay to may send either frame.
    func testWithoutMinAckDelayBothAreProtocolViolations() {
        XCTAssertThrowsQUIC(QUICError.ackFrequencyNotNegotiated.inFrame(FrameType.ackFrequency)) {
            _ = try decodeOne(self.wire, options: serverSide)
        }
        XCTAssertThrowsQUIC(QUICError.ackFrequencyNotNegotiated.inFrame(FrameType.immediateAck)) {
            _ = try decodeOne([0x1f], options: serverSide)
        }
        XCTAssertEqual(QUICError.ackFrequencyNotNegotiated.code, .protocolViolation)
    }

    /// §4: Request Max Ack Delay below our min_ack_delay is a PROTOCOL_VIOLATION;
    /// equal to it is fine.
    func testRequestMaxAckDelayBelowMinAckDelay() throws {
        var f = frame
        f.requestMaxAckDelay = 999
        let below = encoded(size: FrameEncoder.ackFrequencySize(f)) { FrameEncoder.encodeAckFrequency(f, into: $0) }
        XCTAssertThrowsQUIC(QUICError.requestMaxAckDelayTooSmall.inFrame(FrameType.ackFrequency)) {
            _ = try decodeOne(below, options: self.negotiated)
        }
        f.requestMaxAckDelay = 1000
        let equal = encoded(size: FrameEncoder.ackFrequencySize(f)) { FrameEncoder.encodeAckFrequency(f, into: $0) }
        XCTAssertEqual(try decodeOne(equal, options: negotiated), .ackFrequency(f))
    }

    /// Like most frames, 0-RTT and 1-RTT packets only (RFC 9000 §12.4).
    func testPermittedPacketTypes() {
        for type in [FrameType.ackFrequency, FrameType.immediateAck] {
            XCTAssertFalse(FrameType.isPermitted(type, in: .initial))
            XCTAssertFalse(FrameType.isPermitted(type, in: .handshake))
            XCTAssertTrue(FrameType.isPermitted(type, in: .zeroRTT))
            XCTAssertTrue(FrameType.isPermitted(type, in: .oneRTT))
        }
    }
}
