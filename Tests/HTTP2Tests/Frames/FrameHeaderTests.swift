import XCTest
@testable import HTTP2

final class FrameHeaderTests: XCTestCase {
    func testHeaderRoundTripsWith24BitLengthAnd31BitStream() {
        let h = FrameHeader(length: 0xabcdef, type: .headers, flags: [.endHeaders, .padded], streamID: 0x7fff_fffe)
        var b = [UInt8](repeating: marker, count: 10)
        b.withUnsafeMutableBytes { h.encode(into: $0.baseAddress!) }
        XCTAssertEqual(b, [0xab, 0xcd, 0xef, 0x01, 0x0c, 0x7f, 0xff, 0xff, 0xfe, marker])
        XCTAssertEqual(b.withUnsafeBytes { FrameHeader.decode($0, at: 0) }, h)
    }

    // RFC 9113 §4.1: the reserved bit "MUST be ignored when receiving".
    func testReservedBitIsIgnoredOnReceive() {
        let b: [UInt8] = [0, 0, 0, 0x8, 0, 0x80, 0, 0, 0x05]
        XCTAssertEqual(b.withUnsafeBytes { FrameHeader.decode($0, at: 0) }?.streamID, 5)
    }

    func testFewerThanNineBytesIsNoHeader() {
        let b: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0]
        XCTAssertNil(b.withUnsafeBytes { FrameHeader.decode($0, at: 0) })
    }

    func testUnknownTypesAndFlagsAreRepresentable() {
        XCTAssertEqual(FrameType(rawValue: 0xfa).rawValue, 0xfa)
        XCTAssertEqual(FrameFlags(rawValue: 0xff).rawValue, 0xff)
    }
}
