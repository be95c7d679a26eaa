import Core
import XCTest

@testable import WebSocket

/// RFC 6455 §5.7 "Examples", every one
/// (https://www.rfc-editor.org/rfc/rfc6455#section-5.7). The unmasked ones
/// are server frames: our encoder must produce them byte for byte, and our
/// (server) decoder must refuse them, since clients MUST mask (§5.1). Each
/// is also decoded masked, as a client would send it.
final class FrameDecoderRFCExamplesTests: XCTestCase {
    /// "A single-frame unmasked text message (contains "Hello")"
    let unmaskedHello: [UInt8] = [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]
    /// "A single-frame masked text message (contains "Hello")"
    let maskedHello: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
    /// "A fragmented unmasked text message": "Hel", then "lo".
    let fragmentedHel: [UInt8] = [0x01, 0x03, 0x48, 0x65, 0x6C]
    let fragmentedLo: [UInt8] = [0x80, 0x02, 0x6C, 0x6F]
    /// "Unmasked Ping request" (body "Hello").
    let unmaskedPing: [UInt8] = [0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]
    /// "masked Ping response" — i.e. a Pong, opcode 0xA (body "Hello").
    let maskedPong: [UInt8] = [0x8A, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]

    func testSingleFrameMaskedTextHelloDecodes() {
        assertDecodes(maskedHello, to: [.text(Array("Hello"))])
    }

    func testSingleFrameMaskedTextHelloIsTheExampleMaskOverHello() {
        XCTAssertEqual(clientFrame(0x1, Array("Hello")), maskedHello)
    }

    func testSingleFrameUnmaskedTextHelloIsWhatTheEncoderWrites() {
        XCTAssertEqual(encoded { FrameEncoder.writeFrame(opcode: .text, payload: bytes("Hello"), into: $0) }, unmaskedHello)
    }

    func testSingleFrameUnmaskedTextHelloIsRefusedFromAClient() {
        assertFails(unmaskedHello, with: .unmaskedFrame)
    }

    func testFragmentedUnmaskedTextIsWhatTheEncoderWrites() {
        let first = encoded { FrameEncoder.writeFrame(opcode: .text, fin: false, payload: bytes("Hel"), into: $0) }
        let second = encoded { FrameEncoder.writeFrame(opcode: .continuation, fin: true, payload: bytes("lo"), into: $0) }
        XCTAssertEqual(first, fragmentedHel)
        XCTAssertEqual(second, fragmentedLo)
    }

    func testFragmentedTextMaskedDecodesToOneMessage() {
        let input = clientFrame(0x1, Array("Hel"), fin: false) + clientFrame(0x0, Array("lo"))
        assertDecodes(input, to: [.text(Array("Hello"))])
    }

    func testFragmentedTextPiecesCarryFirstAndLastFlags() {
        var input = clientFrame(0x1, Array("Hel"), fin: false) + clientFrame(0x0, Array("lo"))
        var decoder = FrameDecoder()
        input.withUnsafeMutableBytes { bytes in
            let first = try! decoder.decode(bytes)
            guard case .event(.messageData(let a), let n) = first else { return XCTFail("\(first)") }
            XCTAssertEqual(a, MessagePiece(span: ByteSpan(offset: 6, length: 3), opcode: .text, isFirst: true, isLast: false))
            XCTAssertEqual(n, 9)
            let second = try! decoder.decode(UnsafeMutableRawBufferPointer(rebasing: bytes[n...]))
            guard case .event(.messageData(let b), let m) = second else { return XCTFail("\(second)") }
            // The continuation piece reports the message's opcode, not 0x0.
            XCTAssertEqual(b, MessagePiece(span: ByteSpan(offset: 6, length: 2), opcode: .text, isFirst: false, isLast: true))
            XCTAssertEqual(m, 8)
        }
    }

    func testUnmaskedPingIsWhatTheEncoderWrites() {
        XCTAssertEqual(encoded { FrameEncoder.writePing(payload: bytes("Hello"), into: $0) }, unmaskedPing)
    }

    func testUnmaskedPingIsRefusedFromAClient() {
        assertFails(unmaskedPing, with: .unmaskedFrame)
    }

    func testMaskedPingDecodes() {
        assertDecodes(clientFrame(0x9, Array("Hello")), to: [.ping(Array("Hello"))])
    }

    func testMaskedPongDecodes() {
        assertDecodes(maskedPong, to: [.pong(Array("Hello"))])
    }

    func testUnmaskedPongIsWhatTheEncoderWrites() {
        XCTAssertEqual(encoded { FrameEncoder.writePong(payload: bytes("Hello"), into: $0) },
                       [0x8A, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
    }

    /// "256 bytes binary message in a single unmasked frame":
    /// 0x82 0x7E 0x0100 [256 bytes of binary data]
    func test256ByteBinaryUses16BitLength() {
        let payload = (0..<256).map { UInt8($0 & 0xFF) }
        let frame = encoded { out in payload.withUnsafeBytes { FrameEncoder.writeFrame(opcode: .binary, payload: $0, into: out) } }
        XCTAssertEqual(Array(frame[..<4]), [0x82, 0x7E, 0x01, 0x00])
        XCTAssertEqual(Array(frame[4...]), payload)
        let masked = clientFrame(0x2, payload)
        XCTAssertEqual(Array(masked[..<4]), [0x82, 0xFE, 0x01, 0x00])
        assertDecodes(masked, to: [.binary(payload)])
    }

    /// "64KiB binary message in a single unmasked frame":
    /// 0x82 0x7F 0x0000000000010000 [65536 bytes of binary data]
    func test64KiBBinaryUses64BitLength() {
        let payload = (0..<65536).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let frame = encoded { out in payload.withUnsafeBytes { FrameEncoder.writeFrame(opcode: .binary, payload: $0, into: out) } }
        XCTAssertEqual(Array(frame[..<10]), [0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0])
        XCTAssertEqual(frame.count, 10 + 65536)
        XCTAssertEqual(Array(frame[10...]), payload)
        let masked = clientFrame(0x2, payload)
        XCTAssertEqual(Array(masked[..<10]), [0x82, 0xFF, 0, 0, 0, 0, 0, 1, 0, 0])
        assertDecodes(masked, to: [.binary(payload)])
    }
}

/// Runs a writer into a buffer pre-filled with a marker byte and returns
/// exactly the bytes it reports writing; asserts nothing past them changed.
func encoded(capacity: Int = 70_000, file: StaticString = #filePath, line: UInt = #line,
             _ write: (UnsafeMutableRawBufferPointer) -> Int) -> [UInt8] {
    var buffer = [UInt8](repeating: 0xEE, count: capacity)
    let n = buffer.withUnsafeMutableBytes { write($0) }
    XCTAssertTrue(buffer[n...].allSatisfy { $0 == 0xEE }, "wrote past the reported length", file: file, line: line)
    return Array(buffer[..<n])
}

/// A static ASCII string as a raw buffer (static storage: valid forever).
func bytes(_ s: StaticString) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount)
}
