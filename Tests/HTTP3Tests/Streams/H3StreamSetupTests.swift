// Unidirectional streams (RFC 9114 §6.2, RFC 9204 §4.2) and the control
// stream's frames (§5.2, §7.2.3, §7.2.7).

import XCTest
import Core
@testable import HTTP3

final class H3StreamSetupTests: XCTestCase {
    func testPreambleWholeSplitAndTrailing() {
        for wire in [hex("00"), hex("02"), hex("4021"), hex("c000000000000021")] {
            let expected = wire.withUnsafeBytes { QUICVarInt.decode($0, at: 0)!.value }
            for cut in 0 ... wire.count {
                var p = H3UniStreamPreamble()
                let a = Array(wire[..<cut]) , b = Array(wire[cut...]) + [0xee]
                let (t1, n1) = a.withUnsafeBytes { p.read($0) }
                XCTAssertEqual(n1, a.count)
                if let t1 { XCTAssertEqual(t1.rawValue, expected); XCTAssertEqual(cut, wire.count); continue }
                let (t2, n2) = b.withUnsafeBytes { p.read($0) }
                XCTAssertEqual(t2?.rawValue, expected)
                XCTAssertEqual(n2, b.count - 1, "the byte after the type is not consumed")
            }
        }
    }

    // §6.2.1, RFC 9204 §4.2: one of each critical stream.
    func testSecondCriticalStreamIsStreamCreationError() throws {
        var s = H3PeerStreams()
        XCTAssertEqual(try s.opened(2, type: .control), .control)
        XCTAssertEqual(try s.opened(6, type: .qpackEncoder), .qpackEncoder)
        XCTAssertEqual(try s.opened(10, type: .qpackDecoder), .qpackDecoder)
        XCTAssertThrowsH3(.duplicateControlStream) { _ = try s.opened(14, type: .control) }
        XCTAssertThrowsH3(.duplicateEncoderStream) { _ = try s.opened(14, type: .qpackEncoder) }
        XCTAssertThrowsH3(.duplicateDecoderStream) { _ = try s.opened(14, type: .qpackDecoder) }
        XCTAssertEqual(H3Error.duplicateControlStream.code, .streamCreationError)
    }

    // §6.2.2: only servers push; §6.2.3: reserved and unknown types ignored.
    func testPushStreamFromClientRefusedAndUnknownTypesIgnored() throws {
        var s = H3PeerStreams()
        XCTAssertThrowsH3(.pushStreamFromClient) { _ = try s.opened(2, type: .push) }
        XCTAssertEqual(try s.opened(6, type: H3UniStreamType(rawValue: H3Grease.value(5))), .ignored)
        XCTAssertEqual(try s.opened(10, type: H3UniStreamType(rawValue: 0x54)), .ignored)
        XCTAssertNoThrow(try s.closed(6), "closing an ignored stream is nothing")
    }

    // §6.2.1: "If either control stream is closed at any point, this MUST be
    // treated as a connection error of type H3_CLOSED_CRITICAL_STREAM."
    func testClosingACriticalStreamIsClosedCriticalStream() throws {
        var s = H3PeerStreams()
        _ = try s.opened(2, type: .control)
        _ = try s.opened(6, type: .qpackEncoder)
        _ = try s.opened(10, type: .qpackDecoder)
        XCTAssertThrowsH3(.closedControlStream) { try s.closed(2) }
        XCTAssertThrowsH3(.closedEncoderStream) { try s.closed(6) }
        XCTAssertThrowsH3(.closedDecoderStream) { try s.closed(10) }
        XCTAssertEqual(H3Error.closedControlStream.code, .closedCriticalStream)
    }

    private func control(_ wire: [UInt8]) throws -> [H3ControlStream.Event] {
        var c = H3ControlStream()
        var events: [H3ControlStream.Event] = []
        try wire.withUnsafeBytes { (p: UnsafeRawBufferPointer) throws in
            var i = 0
            while i < p.count {
                let (e, n) = try c.read(UnsafeRawBufferPointer(rebasing: p[i...]))
                if let e { events.append(e) }
                i += n
            }
        }
        return events
    }

    func testControlStreamEvents() throws {
        XCTAssertEqual(try control(hex("04 02 0801 0d 01 03 0d 01 04 07 01 09 07 01 09 07 01 02")),
                       [.settings(H3Settings(enableConnectProtocol: true)), .maxPushID(3), .maxPushID(4),
                        .goaway(pushID: 9), .goaway(pushID: 9), .goaway(pushID: 2)])
    }

    // §5.2: GOAWAY identifiers only decrease; §7.2.7: MAX_PUSH_ID only grows;
    // §7.2.3: CANCEL_PUSH of an unpromised push.
    func testControlStreamIDErrors() {
        XCTAssertThrowsH3(.goawayIDIncreased) { _ = try control(hex("04 00 07 01 02 07 01 03")) }
        XCTAssertThrowsH3(.maxPushIDDecreased) { _ = try control(hex("04 00 0d 01 05 0d 01 04")) }
        XCTAssertThrowsH3(.cancelUnknownPush) { _ = try control(hex("04 00 03 01 00")) }
        XCTAssertEqual(H3Error.goawayIDIncreased.code, .idError)
    }

    func testErrorCodeValues() {
        XCTAssertEqual(H3ErrorCode.noError.rawValue, 0x100)
        XCTAssertEqual(H3ErrorCode.messageError.rawValue, 0x10e)
        XCTAssertEqual(H3ErrorCode.versionFallback.rawValue, 0x110)
        XCTAssertEqual(H3ErrorCode.qpackDecoderStreamError.rawValue, 0x202)
        XCTAssertTrue(H3ErrorCode(rawValue: 0x21 + 0x1f * 3).isReserved)
    }
}
