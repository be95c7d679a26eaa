// Every frame type: encode into a marker-filled buffer, compare the exact
// bytes (RFC 9113 §6 layouts), decode back and compare fields and spans.

import XCTest
import Core
@testable import HTTP2

final class FrameRoundTripTests: XCTestCase {
    private let payload = bytes("hello")

    func testDATAPlain() throws {
        let wire = payload.withUnsafeBytes { d in
            encoded(size: FrameEncoder.dataSize(dataLength: 5)) {
                FrameEncoder.encodeData(streamID: 1, data: d, endStream: true, into: $0)
            }
        }
        XCTAssertEqual(wire, hex("000005 00 01 00000001") + payload)
        guard case .data(let f) = try decodeFrame(wire) else { return XCTFail() }
        XCTAssertEqual(f.streamID, 1)
        XCTAssertTrue(f.endStream)
        XCTAssertNil(f.padLength)
        XCTAssertEqual(f.flowControlledLength, 5)
        XCTAssertEqual(slice(wire, f.data), payload)
    }

    func testDATAPaddedCountsPaddingInFlowControl() throws {
        let wire = payload.withUnsafeBytes { d in
            encoded(size: FrameEncoder.dataSize(dataLength: 5, padLength: 3)) {
                FrameEncoder.encodeData(streamID: 3, data: d, endStream: false, padLength: 3, into: $0)
            }
        }
        XCTAssertEqual(wire, hex("000009 00 08 00000003 03") + payload + [0, 0, 0])
        guard case .data(let f) = try decodeFrame(wire) else { return XCTFail() }
        XCTAssertEqual(f.padLength, 3)
        XCTAssertFalse(f.endStream)
        XCTAssertEqual(f.flowControlledLength, 9)
        XCTAssertEqual(slice(wire, f.data), payload)
    }

    func testHEADERSWithPaddingAndPriority() throws {
        let spec = PrioritySpec(exclusive: true, dependency: 7, weight: 15)
        let wire = payload.withUnsafeBytes { b in
            encoded(size: FrameEncoder.headersSize(fieldBlockLength: 5, priority: spec, padLength: 2)) {
                FrameEncoder.encodeHeaders(streamID: 9, fieldBlock: b, endStream: true, endHeaders: true,
                                           priority: spec, padLength: 2, into: $0)
            }
        }
        XCTAssertEqual(wire, hex("00000d 01 2d 00000009 02 80000007 0f") + payload + [0, 0])
        guard case .headers(let f) = try decodeFrame(wire) else { return XCTFail() }
        XCTAssertEqual(f.priority, spec)
        XCTAssertEqual(f.padLength, 2)
        XCTAssertTrue(f.endStream && f.endHeaders)
        XCTAssertEqual(slice(wire, f.fieldBlockFragment), payload)
    }

    func testHEADERSPlain() throws {
        let wire = payload.withUnsafeBytes { b in
            encoded(size: FrameEncoder.headersSize(fieldBlockLength: 5)) {
                FrameEncoder.encodeHeaders(streamID: 1, fieldBlock: b, endStream: false, endHeaders: false, into: $0)
            }
        }
        XCTAssertEqual(wire, hex("000005 01 00 00000001") + payload)
        guard case .headers(let f) = try decodeFrame(wire) else { return XCTFail() }
        XCTAssertNil(f.priority)
        XCTAssertNil(f.padLength)
        XCTAssertFalse(f.endHeaders)
    }

    func testPRIORITY() throws {
        let spec = PrioritySpec(exclusive: false, dependency: 3, weight: 255)
        let wire = encoded(size: FrameEncoder.prioritySize) { FrameEncoder.encodePriority(streamID: 5, priority: spec, into: $0) }
        XCTAssertEqual(wire, hex("000005 02 00 00000005 00000003 ff"))
        XCTAssertEqual(try decodeFrame(wire), .priority(PriorityFrame(streamID: 5, priority: spec)))
    }

    func testRSTSTREAMKeepsUnknownCodes() throws {
        let wire = encoded(size: FrameEncoder.rstStreamSize) {
            FrameEncoder.encodeRstStream(streamID: 1, errorCode: HTTP2ErrorCode(rawValue: 0xff), into: $0)
        }
        XCTAssertEqual(wire, hex("000004 03 00 00000001 000000ff"))
        XCTAssertEqual(try decodeFrame(wire), .rstStream(RstStreamFrame(streamID: 1, errorCode: HTTP2ErrorCode(rawValue: 0xff))))
    }

    func testSETTINGSInWireOrderIncludingUnknownIdentifiers() throws {
        let settings = [Setting(.maxConcurrentStreams, 100), Setting(.initialWindowSize, 65535),
                        Setting(SettingsParameter(rawValue: 0x99), 7), Setting(.enablePush, 0)]
        let wire = encoded(size: FrameEncoder.settingsSize(count: 4)) { FrameEncoder.encodeSettings(settings, into: $0) }
        XCTAssertEqual(wire, hex("000018 04 00 00000000 0003 00000064 0004 0000ffff 0099 00000007 0002 00000000"))
        guard case .settings(let f) = try decodeFrame(wire) else { return XCTFail() }
        XCTAssertFalse(f.ack)
        XCTAssertEqual(f.count, 4)
        XCTAssertEqual(wire.withUnsafeBytes { b in (0..<f.count).map { f.parameter($0, in: b) } }, settings)
    }

    func testSETTINGSAck() throws {
        let wire = encoded(size: FrameEncoder.settingsAckSize) { FrameEncoder.encodeSettingsAck(into: $0) }
        XCTAssertEqual(wire, hex("000000 04 01 00000000"))
        guard case .settings(let f) = try decodeFrame(wire) else { return XCTFail() }
        XCTAssertTrue(f.ack)
        XCTAssertEqual(f.count, 0)
    }

    // A server receiving PUSH_PROMISE is a connection PROTOCOL_ERROR (RFC 9113
    // §8.4) — decided by the connection; the frame itself still decodes.
    func testPUSHPROMISEPadded() throws {
        let wire = payload.withUnsafeBytes { b in
            encoded(size: FrameEncoder.pushPromiseSize(fieldBlockLength: 5, padLength: 1)) {
                FrameEncoder.encodePushPromise(streamID: 1, promisedStreamID: 2, fieldBlock: b, endHeaders: true,
                                               padLength: 1, into: $0)
            }
        }
        XCTAssertEqual(wire, hex("00000b 05 0c 00000001 01 00000002") + payload + [0])
        guard case .pushPromise(let f) = try decodeFrame(wire) else { return XCTFail() }
        XCTAssertEqual(f.promisedStreamID, 2)
        XCTAssertEqual(f.padLength, 1)
        XCTAssertTrue(f.endHeaders)
        XCTAssertEqual(slice(wire, f.fieldBlockFragment), payload)
    }

    func testPING() throws {
        let wire = encoded(size: FrameEncoder.pingSize) { FrameEncoder.encodePing(ack: true, opaqueData: 0x0102_0304_0506_0708, into: $0) }
        XCTAssertEqual(wire, hex("000008 06 01 00000000 0102030405060708"))
        XCTAssertEqual(try decodeFrame(wire), .ping(PingFrame(ack: true, opaqueData: 0x0102_0304_0506_0708)))
    }

    func testGOAWAYWithDebugData() throws {
        let wire = payload.withUnsafeBytes { d in
            encoded(size: FrameEncoder.goAwaySize(debugDataLength: 5)) {
                FrameEncoder.encodeGoAway(lastStreamID: 7, errorCode: .enhanceYourCalm, debugData: d, into: $0)
            }
        }
        XCTAssertEqual(wire, hex("00000d 07 00 00000000 00000007 0000000b") + payload)
        guard case .goAway(let f) = try decodeFrame(wire) else { return XCTFail() }
        XCTAssertEqual(f.lastStreamID, 7)
        XCTAssertEqual(f.errorCode, .enhanceYourCalm)
        XCTAssertEqual(slice(wire, f.debugData), payload)
    }

    func testWINDOWUPDATEOnConnectionAndStream() throws {
        for stream: UInt32 in [0, 3] {
            let wire = encoded(size: FrameEncoder.windowUpdateSize) {
                FrameEncoder.encodeWindowUpdate(streamID: stream, increment: 0x7fff_ffff, into: $0)
            }
            XCTAssertEqual(wire, hex("000004 08 00 0000000\(stream) 7fffffff"))
            XCTAssertEqual(try decodeFrame(wire), .windowUpdate(WindowUpdateFrame(streamID: stream, increment: 0x7fff_ffff)))
        }
    }

    func testCONTINUATION() throws {
        let wire = payload.withUnsafeBytes { b in
            encoded(size: FrameEncoder.continuationSize(fieldBlockLength: 5)) {
                FrameEncoder.encodeContinuation(streamID: 1, fieldBlock: b, endHeaders: true, into: $0)
            }
        }
        XCTAssertEqual(wire, hex("000005 09 04 00000001") + payload)
        XCTAssertEqual(try decodeFrame(wire),
                       .continuation(ContinuationFrame(streamID: 1, endHeaders: true, fieldBlockFragment: ByteSpan(offset: 9, length: 5))))
    }

    // RFC 9113 §5.5: "Implementations MUST ignore unknown or unsupported
    // values in all extensible protocol elements" — unknown types are
    // surfaced as `.unknown` for the connection to skip.
    func testUnknownTypeIsSurfacedWithItsPayload() throws {
        let wire = rawFrame(FrameType(rawValue: 0xbb), flags: FrameFlags(rawValue: 0xff), stream: 0, payload)
        XCTAssertEqual(try decodeFrame(wire), .unknown(UnknownFrame(
            header: FrameHeader(length: 5, type: FrameType(rawValue: 0xbb), flags: FrameFlags(rawValue: 0xff), streamID: 0),
            payload: ByteSpan(offset: 9, length: 5))))
    }

    func testEventAndSpanSizesStaySmall() {
        XCTAssertEqual(MemoryLayout<ByteSpan>.size, 8)
        XCTAssertLessThanOrEqual(MemoryLayout<Frame>.size, 48)  // 41 today (HEADERS)
        XCTAssertLessThanOrEqual(MemoryLayout<HeaderField>.size, 17)
    }
}
