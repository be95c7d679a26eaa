// Every frame-size and value rule of RFC 9113 §4.2 and §6, with its exact
// scope and code.

import XCTest
@testable import HTTP2

final class FrameErrorTests: XCTestCase {
    private func expect(_ e: FrameError, _ wire: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsFrame(e, file: file, line: line) { _ = try decodeOne(wire) }
    }

    private func expectStreamError(_ e: FrameError, _ wire: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(try decodeOne(wire), .streamError(e, consumed: wire.count), file: file, line: line)
    }

    func testFrameLargerThanMaxFrameSizeIsConnectionFrameSizeErrorBeforeThePayloadArrives() {
        let header = Array(rawFrame(.data, stream: 1, [UInt8](repeating: 0, count: 16_385))[..<9])
        expect(.frameTooLarge, header)
        XCTAssertEqual(FrameError.frameTooLarge.code, .frameSizeError)
        XCTAssertEqual(try decodeOne(header, maxFrameSize: 16_385), .needMoreData)
    }

    func testFramesThatNeedAStreamRejectStreamZero() {
        for type in [FrameType.data, .headers, .priority, .rstStream, .pushPromise, .continuation] {
            expect(.streamIDZero, rawFrame(type, stream: 0, [0, 0, 0, 0, 0]))
        }
        XCTAssertEqual(FrameError.streamIDZero.code, .protocolError)
    }

    func testConnectionFramesRejectANonZeroStream() {
        expect(.streamIDNonZero, rawFrame(.settings, stream: 1, []))
        expect(.streamIDNonZero, rawFrame(.ping, stream: 1, [UInt8](repeating: 0, count: 8)))
        expect(.streamIDNonZero, rawFrame(.goAway, stream: 1, [UInt8](repeating: 0, count: 8)))
    }

    // §6.1 / §6.2 / §6.6: padding ≥ payload is a connection PROTOCOL_ERROR.
    func testPaddingAsLongAsThePayloadIsProtocolError() {
        expect(.paddingTooLong, rawFrame(.data, flags: .padded, stream: 1, [3, 0, 0]))
        expect(.paddingTooLong, rawFrame(.headers, flags: [.padded, .priority], stream: 1, [1, 0, 0, 0, 0, 0]))
        expect(.paddingTooLong, rawFrame(.pushPromise, flags: .padded, stream: 1, [1, 0, 0, 0, 2]))
        XCTAssertEqual(try decodeFrame(rawFrame(.data, flags: .padded, stream: 1, [2, 0, 0])),
                       .data(DataFrame(streamID: 1, endStream: false, data: .init(offset: 10, length: 0), padLength: 2,
                                       flowControlledLength: 3)))
    }

    func testPayloadTooShortForMandatoryFieldsIsFrameSizeError() {
        expect(.payloadTooShort, rawFrame(.data, flags: .padded, stream: 1, []))
        expect(.payloadTooShort, rawFrame(.headers, flags: .priority, stream: 1, [0, 0, 0, 0]))
        expect(.payloadTooShort, rawFrame(.pushPromise, stream: 1, [0, 0, 0]))
        expect(.payloadTooShort, rawFrame(.goAway, stream: 0, [0, 0, 0, 0, 0, 0, 0]))
        XCTAssertEqual(FrameError.payloadTooShort.code, .frameSizeError)
    }

    // §6.3: length other than 5 → stream error FRAME_SIZE_ERROR.
    func testPRIORITYOfWrongLengthIsStreamFrameSizeError() {
        expectStreamError(FrameError.prioritySize.onStream(3), rawFrame(.priority, stream: 3, [0, 0, 0, 1]))
    }

    // §5.3.1: self-dependency → stream error PROTOCOL_ERROR.
    func testStreamDependingOnItselfIsStreamProtocolError() {
        expectStreamError(FrameError.selfDependency.onStream(3), rawFrame(.priority, stream: 3, [0, 0, 0, 3, 0]))
    }

    // A HEADERS frame depending on itself still decodes (its field block must
    // reach the HPACK decoder); the connection answers the stream error.
    func testHEADERSDependingOnItselfStillDecodesForTheConnectionToJudge() throws {
        let wire = rawFrame(.headers, flags: [.priority, .endHeaders], stream: 5, [0x80, 0, 0, 5, 0, 0x82])
        guard case .headers(let h) = try decodeFrame(wire) else { return XCTFail("not HEADERS") }
        XCTAssertEqual(h.priority, PrioritySpec(exclusive: true, dependency: 5, weight: 0))
        XCTAssertEqual(slice(wire, h.fieldBlockFragment), [0x82])
    }

    // §6.4: length other than 4 → connection FRAME_SIZE_ERROR.
    func testRSTSTREAMOfWrongLengthIsConnectionFrameSizeError() {
        expect(.rstStreamSize, rawFrame(.rstStream, stream: 1, [0, 0, 0]))
    }

    func testSETTINGSAckWithPayloadIsFrameSizeError() {
        expect(.settingsAckWithPayload, rawFrame(.settings, flags: .ack, stream: 0, [0, 1, 0, 0, 0, 0]))
    }

    func testSETTINGSLengthNotMultipleOfSixIsFrameSizeError() {
        expect(.settingsSize, rawFrame(.settings, stream: 0, [0, 1, 0, 0, 0]))
    }

    func testSETTINGSValuesAreValidatedWithTheRFCCodes() {
        expect(.settingsEnablePush, rawFrame(.settings, stream: 0, hex("0002 00000002")))
        XCTAssertEqual(FrameError.settingsEnablePush.code, .protocolError)
        expect(.settingsInitialWindowSize, rawFrame(.settings, stream: 0, hex("0004 80000000")))
        XCTAssertEqual(FrameError.settingsInitialWindowSize.code, .flowControlError)
        expect(.settingsMaxFrameSize, rawFrame(.settings, stream: 0, hex("0005 00003fff")))
        expect(.settingsMaxFrameSize, rawFrame(.settings, stream: 0, hex("0005 01000000")))
        XCTAssertEqual(FrameError.settingsMaxFrameSize.code, .protocolError)
        expect(.settingsBoolean, rawFrame(.settings, stream: 0, hex("0008 00000002")))
    }

    func testSETTINGSBoundaryValuesAndUnknownIdentifiersAreAccepted() throws {
        let wire = rawFrame(.settings, stream: 0, hex("0002 00000001 0004 7fffffff 0005 00004000 0005 00ffffff 00ff ffffffff"))
        guard case .settings(let f) = try decodeFrame(wire) else { return XCTFail() }
        XCTAssertEqual(f.count, 5)
    }

    func testPINGOfWrongLengthIsConnectionFrameSizeError() {
        expect(.pingSize, rawFrame(.ping, stream: 0, [0, 0, 0, 0, 0, 0, 0]))
        expect(.pingSize, rawFrame(.ping, stream: 0, [UInt8](repeating: 0, count: 9)))
    }

    func testWINDOWUPDATEOfWrongLengthIsConnectionFrameSizeError() {
        expect(.windowUpdateSize, rawFrame(.windowUpdate, stream: 1, [0, 0, 1]))
    }

    // §6.9: zero increment — stream error on a stream, connection error on 0.
    func testZeroWindowIncrementIsProtocolErrorScopedByStream() {
        expect(.windowUpdateZero, rawFrame(.windowUpdate, stream: 0, [0, 0, 0, 0]))
        expectStreamError(FrameError.windowUpdateZero.onStream(7), rawFrame(.windowUpdate, stream: 7, [0x80, 0, 0, 0]))
    }

    func testConnectionErrorIsSticky() {
        var p = FrameParser(expectPreface: false)
        let bad = rawFrame(.ping, stream: 0, [0])
        let good = rawFrame(.ping, stream: 0, [UInt8](repeating: 0, count: 8))
        XCTAssertThrowsFrame(.pingSize) { _ = try bad.withUnsafeBytes { try p.nextEvent(in: $0) } }
        XCTAssertThrowsFrame(.pingSize) { _ = try good.withUnsafeBytes { try p.nextEvent(in: $0) } }
    }

    func testBadPrefaceIsProtocolError() {
        var p = FrameParser()
        XCTAssertThrowsFrame(.badPreface) { _ = try bytes("GET / HTTP/1.1\r\n").withUnsafeBytes { try p.nextEvent(in: $0) } }
        XCTAssertEqual(FrameError.badPreface.code, .protocolError)
    }
}
