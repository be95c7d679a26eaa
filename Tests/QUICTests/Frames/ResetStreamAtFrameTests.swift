// RESET_STREAM_AT (draft-ietf-quic-reliable-stream-reset §4) and the
// reset_stream_at transport parameter (§3): exact bytes, round trip, every
// split, trailing bytes, the decoder's two connection errors (not
// negotiated; Reliable Size above Final Size) and the packet types.

import XCTest
import Core
@testable import QUIC

final class ResetStreamAtFrameTests: XCTestCase {
    /// We sent reset_stream_at.
    private let negotiated = FrameDecodingOptions(peerIsClient: true, resetStreamAt: true)
    private let frame = ResetStreamAtFrame(streamID: 4, errorCode: 0x52e4a40fa8db, finalSize: 300, reliableSize: 3)
    // Type 0x24, stream 4, code 0x52e4a40fa8db (8-byte varint c0 00 52 e4 a4 0f a8 db),
    // final size 300 (2 bytes: 41 2c), reliable size 3.
    private let wire = hex("24 04 c00052e4a40fa8db 412c 03")

    func testRESET_STREAM_ATBytesAndRoundTrip() throws {
        XCTAssertEqual(FrameEncoder.resetStreamAtSize(frame), wire.count)
        XCTAssertEqual(encoded(size: FrameEncoder.resetStreamAtSize(frame)) { FrameEncoder.encodeResetStreamAt(frame, into: $0) }, wire)
        XCTAssertEqual(try decodeOne(wire, options: negotiated), .resetStreamAt(frame))
        let again = wire.withUnsafeBytes { src in
            encoded(size: Frame.resetStreamAt(frame).encodedSize(source: src)) { Frame.resetStreamAt(frame).encode(source: src, into: $0) }
        }
        XCTAssertEqual(again, wire)
        XCTAssertTrue(Frame.resetStreamAt(frame).isAckEliciting)
        XCTAssertFalse(Frame.resetStreamAt(frame).isProbing)
    }

    /// Split at every byte: each prefix is truncated (FRAME_ENCODING_ERROR);
    /// followed by a PING, the frame is the same and the PING follows.
    func testEverySplitAndTrailingBytes() throws {
        for cut in 1..<wire.count {
            XCTAssertThrowsQUIC(QUICError.frameTruncated.inFrame(FrameType.resetStreamAt)) {
                _ = try decodeAll(Array(self.wire[..<cut]), options: self.negotiated)
            }
        }
        XCTAssertEqual(try decodeAll(wire + [0x01], options: negotiated), [.resetStreamAt(frame), .ping])
        XCTAssertEqual(try decodeAll(wire + wire, options: negotiated), [.resetStreamAt(frame), .resetStreamAt(frame)])
    }

    /// §3: only a peer we sent reset_stream_at to may send the frame.
    func testWithoutTheParameterItIsAProtocolViolation() {
        XCTAssertThrowsQUIC(QUICError.resetStreamAtNotNegotiated.inFrame(FrameType.resetStreamAt)) {
            _ = try decodeOne(self.wire, options: serverSide)
        }
        XCTAssertEqual(QUICError.resetStreamAtNotNegotiated.code, .protocolViolation)
    }

    /// §4: Reliable Size > Final Size is a FRAME_ENCODING_ERROR; equal is fine.
    func testReliableSizeAboveFinalSize() throws {
        var f = frame
        f.finalSize = 3
        let equal = encoded(size: FrameEncoder.resetStreamAtSize(f)) { FrameEncoder.encodeResetStreamAt(f, into: $0) }
        XCTAssertEqual(try decodeOne(equal, options: negotiated), .resetStreamAt(f))
        let above = hex("24 04 00 02 03")  // final size 2, reliable size 3
        XCTAssertThrowsQUIC(QUICError.reliableSizeAboveFinalSize.inFrame(FrameType.resetStreamAt)) {
            _ = try decodeOne(above, options: self.negotiated)
        }
        XCTAssertEqual(QUICError.reliableSizeAboveFinalSize.code, .frameEncodingError)
    }

    /// Like RESET_STREAM (RFC 9000 §12.4 Table 3 "__01"): 0-RTT and 1-RTT only;
    /// in an Initial or Handshake packet a PROTOCOL_VIOLATION before decoding.
    func testPermittedPacketTypes() {
        XCTAssertFalse(FrameType.isPermitted(FrameType.resetStreamAt, in: .initial))
        XCTAssertFalse(FrameType.isPermitted(FrameType.resetStreamAt, in: .handshake))
        XCTAssertTrue(FrameType.isPermitted(FrameType.resetStreamAt, in: .zeroRTT))
        XCTAssertTrue(FrameType.isPermitted(FrameType.resetStreamAt, in: .oneRTT))
        XCTAssertThrowsQUIC(QUICError.frameNotPermitted.inFrame(FrameType.resetStreamAt)) {
            _ = try decodeAll(self.wire, kind: .handshake, options: self.negotiated)
        }
    }

    // MARK: the transport parameter (§3)

    private func parameters(_ extra: [UInt8]) throws -> TransportParameters {
        var p = TransportParameters()
        p.initialSourceConnectionID = cid("c1c2c3c4")
        var bytes = [UInt8](repeating: 0, count: p.encodedSize())
        bytes.withUnsafeMutableBytes { _ = p.encode(into: $0) }
        bytes += extra
        return try bytes.withUnsafeBytes { try TransportParameters.decode($0, sentBy: .client) }
    }

    /// ID 0x17f7586d2cb571 is an 8-byte varint: c0 17 f7 58 6d 2c b5 71.
    private let parameterID = hex("c017f7586d2cb571")

    func testParameterIsEmptyAndRoundTrips() throws {
        var p = TransportParameters()
        p.initialSourceConnectionID = cid("c1c2c3c4")
        p.resetStreamAt = true
        var bytes = [UInt8](repeating: 0, count: p.encodedSize())
        bytes.withUnsafeMutableBytes { _ = p.encode(into: $0) }
        XCTAssertEqual(Array(bytes.suffix(9)), parameterID + [0x00], "id, length 0, no value")
        let decoded = try bytes.withUnsafeBytes { try TransportParameters.decode($0, sentBy: .client) }
        XCTAssertTrue(decoded.resetStreamAt)
        XCTAssertEqual(decoded, p)
        XCTAssertFalse(try parameters([]).resetStreamAt, "absent: false")
    }

    /// §3: the parameter is empty; a value is a TRANSPORT_PARAMETER_ERROR, so is a repeat.
    func testNonEmptyOrRepeatedParameterIsRefused() throws {
        XCTAssertTrue(try parameters(parameterID + [0x00]).resetStreamAt)
        XCTAssertThrowsQUIC(.parameterMalformed) { _ = try self.parameters(self.parameterID + [0x01, 0x00]) }
        XCTAssertThrowsQUIC(.duplicateParameter) { _ = try self.parameters(self.parameterID + [0x00] + self.parameterID + [0x00]) }
        XCTAssertEqual(QUICError.parameterMalformed.code, .transportParameterError)
    }

    /// The configuration advertises it only when asked (WebTransport).
    func testConfigurationAdvertisesItOnlyWhenAsked() {
        var c = QUICConfiguration()
        XCTAssertFalse(c.transportParameters.resetStreamAt)
        c.reliableStreamReset = true
        XCTAssertTrue(c.transportParameters.resetStreamAt)
    }
}
