import XCTest

@testable import WebSocket

/// RFC 6455 §5.3: octet i is XORed with key octet i mod 4, whatever the
/// length and wherever in the payload a chunk starts.
final class MaskingTests: XCTestCase {
    func testEveryLengthAndPhaseMatchesTheBytewiseDefinition() {
        let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        for length in 0..<40 {
            for phase in 0..<8 {
                var data = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
                let expected = data.enumerated().map { $0.element ^ key[($0.offset + phase) % 4] }
                data.withUnsafeMutableBytes { Masking.apply($0, key: MaskingKey(key[0], key[1], key[2], key[3]), phase: phase) }
                XCTAssertEqual(data, expected, "length \(length) phase \(phase)")
            }
        }
    }

    func testRFCExampleMaskOverHello() {
        var data = Array("Hello".utf8)
        data.withUnsafeMutableBytes { Masking.apply($0, key: MaskingKey(0x37, 0xFA, 0x21, 0x3D), phase: 0) }
        XCTAssertEqual(data, [0x7F, 0x9F, 0x4D, 0x51, 0x58])
    }

    func testApplyingTwiceRestoresTheInput() {
        let original = (0..<100).map { UInt8($0) }
        var data = original
        let key = MaskingKey(1, 2, 3, 4)
        data.withUnsafeMutableBytes { Masking.apply($0, key: key, phase: 3) }
        XCTAssertNotEqual(data, original)
        data.withUnsafeMutableBytes { Masking.apply($0, key: key, phase: 3) }
        XCTAssertEqual(data, original)
    }
}
