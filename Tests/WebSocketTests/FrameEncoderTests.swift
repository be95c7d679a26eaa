import Core
import XCTest

@testable import WebSocket

/// Server frames (RFC 6455 §5.2): exact bytes into a marker-filled buffer,
/// sizes announced before writing, and a round trip through the decoder
/// (after masking, as a client would send the same frame).
final class FrameEncoderTests: XCTestCase {
    func testHeaderLengthsUseTheMinimalForm() {
        XCTAssertEqual(FrameEncoder.headerLength(payloadLength: 0), 2)
        XCTAssertEqual(FrameEncoder.headerLength(payloadLength: 125), 2)
        XCTAssertEqual(FrameEncoder.headerLength(payloadLength: 126), 4)
        XCTAssertEqual(FrameEncoder.headerLength(payloadLength: 65535), 4)
        XCTAssertEqual(FrameEncoder.headerLength(payloadLength: 65536), 10)
        XCTAssertEqual(FrameEncoder.frameLength(payloadLength: 300), 304)
    }

    func testLengthFormBoundariesAreWrittenExactly() {
        for (n, header) in [(125, [0x82, 125]), (126, [0x82, 126, 0, 126]), (65535, [0x82, 126, 0xFF, 0xFF]),
                            (65536, [0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0])] as [(Int, [UInt8])] {
            let frame = encoded { FrameEncoder.writeHeader(opcode: .binary, fin: true, payloadLength: n, into: $0) }
            XCTAssertEqual(frame, header, "\(n)")
        }
        let huge = encoded { FrameEncoder.writeHeader(opcode: .binary, fin: true, payloadLength: Int(Int32.max) + 1, into: $0) }
        XCTAssertEqual(huge, [0x82, 127, 0, 0, 0, 0, 0x80, 0, 0, 0])
    }

    func testServerFramesAreNeverMasked() {
        // §5.1: "A server MUST NOT mask any frames that it sends to the client."
        for n in [0, 5, 200, 70_000] {
            let frame = encoded { FrameEncoder.writeHeader(opcode: .text, fin: true, payloadLength: n, into: $0) }
            XCTAssertEqual(frame[1] & 0x80, 0)
        }
    }

    func testFragmentedMessageFlagsAndOpcodes() {
        let first = encoded { FrameEncoder.writeFrame(opcode: .binary, fin: false, payload: bytes("ab"), into: $0) }
        let middle = encoded { FrameEncoder.writeFrame(opcode: .continuation, fin: false, payload: bytes("c"), into: $0) }
        let last = encoded { FrameEncoder.writeFrame(opcode: .continuation, fin: true, payload: bytes(""), into: $0) }
        XCTAssertEqual(first, [0x02, 0x02, 0x61, 0x62])
        XCTAssertEqual(middle, [0x00, 0x01, 0x63])
        XCTAssertEqual(last, [0x80, 0x00])
    }

    func testRSV1MarksACompressedFirstFrame() {
        XCTAssertEqual(encoded { FrameEncoder.writeFrame(opcode: .text, rsv1: true, payload: bytes("z"), into: $0) },
                       [0xC1, 0x01, 0x7A])
    }

    func testCloseFrames() {
        XCTAssertEqual(encoded { FrameEncoder.writeClose(code: nil, into: $0) }, [0x88, 0x00])
        XCTAssertEqual(encoded { FrameEncoder.writeClose(code: .normalClosure, into: $0) }, [0x88, 0x02, 0x03, 0xE8])
        XCTAssertEqual(encoded { FrameEncoder.writeClose(code: .goingAway, reason: bytes("bye"), into: $0) },
                       [0x88, 0x05, 0x03, 0xE9, 0x62, 0x79, 0x65])
        XCTAssertEqual(FrameEncoder.closeFrameLength(code: .goingAway, reasonLength: 3), 7)
        XCTAssertEqual(FrameEncoder.closeFrameLength(code: nil, reasonLength: 0), 2)
        let longest = [UInt8](repeating: 0x72, count: FrameEncoder.maxCloseReasonLength)
        let frame = encoded { out in longest.withUnsafeBytes { FrameEncoder.writeClose(code: CloseCode(rawValue: 4000), reason: $0, into: out) } }
        XCTAssertEqual(Array(frame[..<4]), [0x88, 125, 0x0F, 0xA0])
        XCTAssertEqual(frame.count, 127)
    }

    func testCloseForAnErrorCarriesItsCodeAndReason() {
        let frame = encoded { FrameEncoder.writeClose(for: .invalidUTF8, into: $0) }
        XCTAssertEqual(Array(frame[..<4]), [0x88, UInt8(2 + WebSocketError.invalidUTF8.reason.utf8CodeUnitCount), 0x03, 0xEF])
        XCTAssertEqual(String(decoding: frame[4...], as: UTF8.self), "text message is not UTF-8")
    }

    func testEveryFrameTypeRoundTripsThroughTheDecoder() {
        let cases: [(frame: [UInt8], seen: [Seen])] = [
            (encoded { FrameEncoder.writeFrame(opcode: .text, payload: bytes("héllo"), into: $0) }, [.text(Array("héllo"))]),
            (encoded { FrameEncoder.writeFrame(opcode: .binary, payload: bytes(""), into: $0) }, [.binary([])]),
            (encoded { FrameEncoder.writePing(payload: bytes("p"), into: $0) }, [.ping(Array("p"))]),
            (encoded { FrameEncoder.writePong(payload: bytes(""), into: $0) }, [.pong([])]),
            (encoded { FrameEncoder.writeClose(code: nil, into: $0) }, [.close(nil, [])]),
            (encoded { FrameEncoder.writeClose(code: .messageTooBig, reason: bytes("big"), into: $0) }, [.close(1009, Array("big"))]),
        ]
        for (frame, seen) in cases {
            assertDecodes(masked(frame), to: seen)
        }
        let big = (0..<70_000).map { UInt8(truncatingIfNeeded: $0) }
        let frame = encoded(capacity: 80_000) { out in big.withUnsafeBytes { FrameEncoder.writeFrame(opcode: .binary, payload: $0, into: out) } }
        XCTAssertEqual(decode([masked(frame)]), DecodeOutcome(events: [.binary(big)]))
    }

    /// A server frame turned into the client frame with the same content.
    private func masked(_ frame: [UInt8]) -> [UInt8] {
        let length7 = Int(frame[1] & 0x7F)
        let headerLength = length7 == 126 ? 4 : length7 == 127 ? 10 : 2
        return clientFrame(frame[0] & 0x0F, Array(frame[headerLength...]), fin: frame[0] & 0x80 != 0, rsv: frame[0] & 0x70,
                           mask: [0xA1, 0xB2, 0xC3, 0xD4])
    }
}
