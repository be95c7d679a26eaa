// SETTINGS payloads (RFC 9114 §7.2.4, RFC 9204 §5, RFC 9220 §3).

import XCTest
@testable import HTTP3

final class H3SettingsTests: XCTestCase {
    private func decode(_ b: [UInt8]) throws -> H3Settings {
        try b.withUnsafeBytes { try H3Settings.decode($0) }
    }

    func testKnownSettingsDecodeAndUnknownOrReservedAreIgnored() throws {
        let s = try decode(hex("01 5000 07 4064 06 4400 08 01 21 05 4040 00"))
        XCTAssertEqual(s, H3Settings(qpackMaxTableCapacity: 4096, qpackBlockedStreams: 100, maxFieldSectionSize: 1024,
                                     enableConnectProtocol: true))
        XCTAssertEqual(try decode([]), H3Settings(), "defaults: 0, 0, unlimited, off")
    }

    // §7.2.4: duplicates are H3_SETTINGS_ERROR (the MAY we take).
    func testDuplicateIdentifierIsSettingsError() {
        XCTAssertThrowsH3(.duplicateSetting) { _ = try decode(hex("01 00 01 00")) }
        XCTAssertThrowsH3(.duplicateSetting) { _ = try decode(hex("21 00 21 01")) }
        XCTAssertEqual(H3Error.duplicateSetting.code, .settingsError)
    }

    // §7.2.4.1: HTTP/2 identifiers 0x00, 0x02–0x05.
    func testHTTP2IdentifiersAreSettingsError() {
        for id: UInt8 in [0x00, 0x02, 0x03, 0x04, 0x05] {
            XCTAssertThrowsH3(.http2Setting) { _ = try decode([id, 0x00]) }
        }
    }

    func testEnableConnectProtocolAboveOneIsSettingsError() {
        XCTAssertThrowsH3(.invalidSettingValue) { _ = try decode(hex("08 02")) }
    }

    // §7.1: a payload ending inside a parameter is H3_FRAME_ERROR.
    func testTruncatedParameterIsFrameError() {
        XCTAssertThrowsH3(.framePayloadMismatch) { _ = try decode(hex("01")) }
        XCTAssertThrowsH3(.framePayloadMismatch) { _ = try decode(hex("01 40")) }
    }

    func testEncodingWithGreaseRoundTrips() throws {
        let s = H3Settings(qpackMaxTableCapacity: 4096, qpackBlockedStreams: 16, maxFieldSectionSize: 65536, enableConnectProtocol: true)
        let grease = H3Grease.value(7)
        let payload = s.encodedPayload(grease: grease, greaseValue: 99)
        XCTAssertEqual(try decode(payload), s)
        var frame: [UInt8] = []
        H3FrameEncoder.appendSettings(s, grease: grease, greaseValue: 99, to: &frame)
        XCTAssertEqual(frame[0], 0x04)
        XCTAssertEqual(Int(frame[1]), payload.count)
        XCTAssertTrue(H3Grease.isReserved(grease))
        XCTAssertFalse(H3Grease.isReserved(0x22))
    }
}
