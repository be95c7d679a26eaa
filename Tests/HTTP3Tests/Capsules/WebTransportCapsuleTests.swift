// WebTransport capsules (draft-ietf-webtrans-http3, "Flow Control" and
// "Session Termination"), the HTTP/3 Datagram prefix (RFC 9297 §2.1) and the
// application error code mapping ("Resetting Data Streams").

import XCTest
import Core
@testable import HTTP3

final class WebTransportCapsuleTests: XCTestCase {
    private func roundTrip(_ c: WebTransportCapsule) throws -> WebTransportCapsule? {
        var wire: [UInt8] = []
        c.append(to: &wire)
        var reader = CapsuleReader(delivers: CapsuleType.isWebTransport)
        var decoded: [WebTransportCapsule?] = []
        var failure: CapsuleError?
        try wire.withUnsafeBytes { b in
            try reader.read(b) { type, value in
                do throws(CapsuleError) { decoded.append(try WebTransportCapsule.decode(type: type, value: value)) } catch { failure = error }
            }
        }
        if let failure { throw failure }
        XCTAssertEqual(decoded.count, 1)
        return decoded.first ?? nil
    }

    private func decode(_ type: UInt64, _ value: [UInt8]) throws -> WebTransportCapsule? {
        try value.withUnsafeBytes { b in try WebTransportCapsule.decode(type: type, value: b) }
    }

    func testEveryCapsuleRoundTrips() throws {
        let all: [WebTransportCapsule] = [
            .closeSession(code: 0, message: []), .closeSession(code: 0xffff_ffff, message: Array("done ✓".utf8)),
            .drainSession, .maxData(0), .maxData((1 << 62) - 1), .maxStreams(bidirectional: true, 100),
            .maxStreams(bidirectional: false, 1 << 60), .dataBlocked(12_345), .streamsBlocked(bidirectional: true, 7),
            .streamsBlocked(bidirectional: false, 0), .datagram([]), .datagram(Array(repeating: 0xab, count: 1000)),
        ]
        for c in all { XCTAssertEqual(try roundTrip(c), c) }
    }

    /// The wire form of WT_CLOSE_SESSION: type 0x2843 (a 2-byte varint),
    /// length, a 32-bit code, the message.
    func testCloseSessionWireForm() {
        var wire: [UInt8] = []
        WebTransportCapsule.closeSession(code: 0x0a0b_0c0d, message: Array("x".utf8)).append(to: &wire)
        XCTAssertEqual(wire, [0x68, 0x43, 0x05, 0x0a, 0x0b, 0x0c, 0x0d, 0x78])
    }

    /// A message over 1024 bytes or not UTF-8 is H3_MESSAGE_ERROR; a code
    /// cut short is malformed.
    func testCloseSessionValidation() throws {
        let code: [UInt8] = [0, 0, 0, 1]
        XCTAssertEqual(try decode(CapsuleType.closeSession, code + Array(repeating: 0x61, count: 1024)),
                       .closeSession(code: 1, message: Array(repeating: 0x61, count: 1024)))
        XCTAssertThrowsError(try decode(CapsuleType.closeSession, code + Array(repeating: 0x61, count: 1025))) {
            XCTAssertEqual($0 as? CapsuleError, .badCloseMessage)
        }
        XCTAssertThrowsError(try decode(CapsuleType.closeSession, code + [0xc3, 0x28])) {
            XCTAssertEqual($0 as? CapsuleError, .badCloseMessage)
        }
        XCTAssertThrowsError(try decode(CapsuleType.closeSession, [0, 0, 1])) {
            XCTAssertEqual($0 as? CapsuleError, .lengthMismatch)
        }
    }

    /// Senders cut a long message at a UTF-8 character boundary.
    func testLongCloseMessageIsCutAtACharacterBoundary() throws {
        let message = Array(String(repeating: "é", count: 600).utf8)  // 1200 bytes of 2-byte characters
        guard case .closeSession(_, let sent)? = try roundTrip(.closeSession(code: 3, message: message)) else {
            return XCTFail("not a close")
        }
        XCTAssertEqual(sent.count, 1024)
        XCTAssertNotNil(String(validating: sent, as: UTF8.self))
        let threeByte = Array(String(repeating: "€", count: 400).utf8)  // 1200 bytes of 3-byte characters
        XCTAssertEqual(WebTransportCapsule.truncatedUTF8(threeByte, to: 1024).count, 1023)
    }

    /// §3.3: values with bytes after their fields, or too few, are malformed.
    func testValuesMustHoldExactlyTheirFields() throws {
        XCTAssertThrowsError(try decode(CapsuleType.maxData, [0x05, 0x00])) { XCTAssertEqual($0 as? CapsuleError, .lengthMismatch) }
        XCTAssertThrowsError(try decode(CapsuleType.maxData, [])) { XCTAssertEqual($0 as? CapsuleError, .lengthMismatch) }
        XCTAssertThrowsError(try decode(CapsuleType.maxStreamsUni, [0x40])) { XCTAssertEqual($0 as? CapsuleError, .lengthMismatch) }
        XCTAssertThrowsError(try decode(CapsuleType.drainSession, [0])) { XCTAssertEqual($0 as? CapsuleError, .lengthMismatch) }
        XCTAssertNil(try decode(0x1234, [1, 2, 3]), "an unknown type is not an error")
    }

    /// Stream counts above 2^60 close the session with WT_FLOW_CONTROL_ERROR.
    func testStreamCountsAbove2To60() throws {
        var over: [UInt8] = []
        QUICVarInt.append((1 << 60) + 1, to: &over)
        for type in [CapsuleType.maxStreamsBidi, CapsuleType.maxStreamsUni, CapsuleType.streamsBlockedBidi, CapsuleType.streamsBlockedUni] {
            XCTAssertThrowsError(try decode(type, over)) {
                XCTAssertEqual(($0 as? CapsuleError)?.code, WebTransportErrorCode.flowControlError)
            }
        }
    }

    // MARK: HTTP/3 Datagrams (RFC 9297 §2.1)

    func testQuarterStreamIDPrefix() throws {
        for id: UInt64 in [0, 4, 252, 256, 1 << 40, ((1 << 60) - 1) * 4] {
            var d: [UInt8] = []
            H3Datagram.appendPrefix(streamID: id, to: &d)
            let prefix = d.count
            d += [1, 2]
            let parsed = try d.withUnsafeBytes { b in try H3Datagram.parse(b) }
            XCTAssertEqual(parsed.streamID, id)
            XCTAssertEqual(parsed.payloadStart, prefix)
        }
    }

    /// Too short for the prefix, or a prefix over 2^60 - 1: H3_DATAGRAM_ERROR.
    func testDatagramPrefixErrors() {
        for bad: [UInt8] in [[], [0x40], [0xc0, 0, 0, 0]] {
            XCTAssertThrowsError(try bad.withUnsafeBytes { b in try H3Datagram.parse(b) }) {
                XCTAssertEqual($0 as? H3Error, .datagramTruncated)
            }
        }
        var tooLarge: [UInt8] = []
        QUICVarInt.append(1 << 60, to: &tooLarge)
        XCTAssertThrowsError(try tooLarge.withUnsafeBytes { b in try H3Datagram.parse(b) }) {
            XCTAssertEqual(($0 as? H3Error)?.code.rawValue, 0x33)
        }
    }

    // MARK: error codes

    /// The draft's endpoints: 0 → 0x52e4a40fa8db, 0xffffffff → 0x52e5ac983162
    /// (and draft-02's 0xff → 0x52e4a40fa9e2, the same mapping).
    func testErrorCodeRangeEnds() {
        XCTAssertEqual(WebTransportErrorCode.http3Code(application: 0).rawValue, 0x52e4_a40f_a8db)
        XCTAssertEqual(WebTransportErrorCode.http3Code(application: 0xffff_ffff).rawValue, 0x52e5_ac98_3162)
        XCTAssertEqual(WebTransportErrorCode.http3Code(application: 0xff).rawValue, 0x52e4_a40f_a9e2)
        XCTAssertEqual(WebTransportErrorCode.applicationCode(http3: H3ErrorCode(rawValue: 0x52e5_ac98_3162)), 0xffff_ffff)
    }

    /// Every mapped code round-trips and is never a reserved codepoint; the
    /// reserved ones inside the range, and codes outside it, carry none.
    func testErrorCodesSkipReservedCodepoints() {
        let samples = Array(0..<UInt32(5000)) + Array((UInt32.max - 5000)...UInt32.max)
        var previous: UInt64?
        for n in samples {
            let h = WebTransportErrorCode.http3Code(application: n)
            XCTAssertFalse(h.isReserved, "\(n)")
            XCTAssertEqual(WebTransportErrorCode.applicationCode(http3: h), n)
            if let p = previous, n > 0, n != UInt32.max - 5000 { XCTAssertTrue(h.rawValue == p + 1 || h.rawValue == p + 2) }
            previous = h.rawValue
        }
        var reservedInside = 0
        for h in 0x52e4_a40f_a8db...(0x52e4_a40f_a8db + 2000) as ClosedRange<UInt64> where H3ErrorCode(rawValue: h).isReserved {
            reservedInside += 1
            XCTAssertNil(WebTransportErrorCode.applicationCode(http3: H3ErrorCode(rawValue: h)))
        }
        XCTAssertGreaterThan(reservedInside, 60)
        XCTAssertNil(WebTransportErrorCode.applicationCode(http3: H3ErrorCode(rawValue: 0x52e4_a40f_a8da)))
        XCTAssertNil(WebTransportErrorCode.applicationCode(http3: H3ErrorCode(rawValue: 0x52e5_ac98_3163)))
        XCTAssertNil(WebTransportErrorCode.applicationCode(http3: .noError))
    }
}
