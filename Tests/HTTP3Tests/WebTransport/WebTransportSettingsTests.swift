// WebTransport and HTTP Datagram SETTINGS (RFC 9297 §2.1.1;
// draft-ietf-webtrans-http3-02 §3.1; draft-ietf-webtrans-http3 §3.1, §5.5,
// §9.2), as real clients send them.

import XCTest
@testable import HTTP3

final class WebTransportSettingsTests: XCTestCase {
    private func decode(_ b: [UInt8]) throws -> H3Settings {
        try b.withUnsafeBytes { try H3Settings.decode($0) }
    }

    // aioquic 1.x, H3Connection(enable_webtransport=True): QPACK settings,
    // ENABLE_CONNECT_PROTOCOL, H3_DATAGRAM (0x33), ENABLE_WEBTRANSPORT.
    func testAioquicDraft02ClientSettings() throws {
        let s = try decode(hex("01 00  07 00  08 01  33 01  ab60 3742 01"))
        XCTAssertTrue(s.enableConnectProtocol)
        XCTAssertTrue(s.webTransport.h3Datagram)
        XCTAssertTrue(s.webTransport.enableWebTransportDraft02)
        XCTAssertFalse(s.webTransport.wtEnabled)
        XCTAssertFalse(s.webTransport.offersFlowControl)
    }

    // A current-draft client (pywebtransport 0.21): SETTINGS_WT_ENABLED at its
    // IANA codepoint and the three initial flow-control limits.
    func testCurrentDraftClientSettings() throws {
        let s = try decode(hex("33 01  ac7c f000 01  6b64 0a  6b65 0a  6b61 80 40 00 00"))
        XCTAssertTrue(s.webTransport.h3Datagram)
        XCTAssertTrue(s.webTransport.wtEnabled)
        XCTAssertFalse(s.webTransport.enableWebTransportDraft02)
        XCTAssertEqual(s.webTransport.initialMaxStreamsUni, 10)
        XCTAssertEqual(s.webTransport.initialMaxStreamsBidi, 10)
        XCTAssertEqual(s.webTransport.initialMaxData, 0x40_0000)
        XCTAssertTrue(s.webTransport.offersFlowControl)
    }

    // The draft-04 H3_DATAGRAM codepoint 0xffd277 counts as well; the WT
    // max-sessions settings of drafts 07 and 12 are tolerated and recorded.
    func testOlderCodepointsAreTolerated() throws {
        let s = try decode(hex("80 ff d2 77 01  c0 00 00 00 c6 71 70 6a 04"))
        XCTAssertTrue(s.webTransport.h3Datagram)
        XCTAssertEqual(s.webTransport.maxSessions, 4)
        XCTAssertEqual(try decode(hex("94 e9 cd 29 02")).webTransport.maxSessions, 2)
    }

    // RFC 9297 §2.1.1: "Any value other than 0 or 1 MUST be treated as a
    // connection error of type H3_SETTINGS_ERROR"; draft-02 §3.1 the same
    // for SETTINGS_ENABLE_WEBTRANSPORT.
    func testDatagramAndDraft02SettingAboveOneAreSettingsErrors() {
        XCTAssertThrowsH3(.invalidSettingValue) { _ = try decode(hex("33 02")) }
        XCTAssertThrowsH3(.invalidSettingValue) { _ = try decode(hex("80 ff d2 77 02")) }
        XCTAssertThrowsH3(.invalidSettingValue) { _ = try decode(hex("ab60 3742 02")) }
        XCTAssertEqual(H3Error.invalidSettingValue.code, .settingsError)
    }

    func testZeroValuesMeanOff() throws {
        let s = try decode(hex("33 00  ab60 3742 00  ac7c f000 00"))
        XCTAssertEqual(s.webTransport, H3WebTransportSettings())
    }

    // What a server with WebTransport on advertises: extended CONNECT, both
    // H3_DATAGRAM codepoints, both drafts, the initial limits.
    func testServerAdvertisesBothDraftsExactBytes() throws {
        var limits = H3Limits()
        limits.webTransport = WebTransportLimits()
        limits.webTransport!.initialMaxStreamsBidi = 100
        limits.webTransport!.initialMaxStreamsUni = 10
        limits.webTransport!.initialMaxData = 65536
        let session = H3Session(limits: limits)
        let payload = session.localSettings.encodedPayload()
        XCTAssertEqual(payload, hex("""
            01 5000  06 8000 4000  07 4064  08 01
            33 01  80ff d277 01  ab60 3742 01  ac7c f000 01
            6b64 0a  6b65 4064  6b61 8001 0000
            """))
        let back = try decode(payload)
        XCTAssertEqual(back.webTransport, session.localSettings.webTransport)
        XCTAssertTrue(back.enableConnectProtocol)
        XCTAssertTrue(back.webTransport.enableWebTransportDraft02 && back.webTransport.wtEnabled && back.webTransport.h3Datagram)
        XCTAssertEqual(back.webTransport.initialMaxStreamsUni, 10)
        XCTAssertEqual(back.webTransport.initialMaxStreamsBidi, 100)
        XCTAssertEqual(back.webTransport.initialMaxData, 65536)
    }

    func testOffSendsNoWebTransportSetting() throws {
        let back = try decode(H3Session(limits: H3Limits()).localSettings.encodedPayload())
        XCTAssertEqual(back.webTransport, H3WebTransportSettings())
    }
}
