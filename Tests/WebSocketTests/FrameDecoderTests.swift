import Core
import XCTest

@testable import WebSocket

/// RFC 6455 §5 framing rules as the server decoder enforces them: every
/// protocol error class with its exact close code, every input fed whole,
/// split, byte at a time and with a trailing byte.
final class FrameDecoderTests: XCTestCase {
    // MARK: Accepted frames

    func testEmptyTextAndBinaryMessagesAreReportedAsOneEmptyLastPiece() {
        assertDecodes(clientFrame(0x1, []) + clientFrame(0x2, []), to: [.text([]), .binary([])])
    }

    func testEmptyFragmentsAreAllowedAnywhereInAMessage() {
        let input = clientFrame(0x2, [], fin: false) + clientFrame(0x0, [1, 2], fin: false)
            + clientFrame(0x0, [], fin: false) + clientFrame(0x0, [])
        assertDecodes(input, to: [.binary([1, 2])])
    }

    func testControlFramesMayInterleaveWithFragments() {
        // §5.4: "Control frames ... MAY be injected in the middle of a fragmented message."
        let input = clientFrame(0x1, Array("fragment "), fin: false) + clientFrame(0x9, Array("p"))
            + clientFrame(0x0, Array("one "), fin: false) + clientFrame(0xA, [])
            + clientFrame(0x0, Array("two"))
        assertDecodes(input, to: [.ping(Array("p")), .pong([]), .text(Array("fragment one two"))])
    }

    func testAnyMaskingKeyUnmasksEveryPhaseAndLength() {
        for n in [1, 7, 8, 9, 15, 16, 17, 125, 126, 300] {
            let payload = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
            assertDecodes(clientFrame(0x2, payload, mask: [0x01, 0x80, 0xFF, 0x7E]), to: [.binary(payload)])
        }
    }

    func testAllZeroMaskIsStillAMaskedFrame() {
        assertDecodes(clientFrame(0x2, [9, 9], mask: [0, 0, 0, 0]), to: [.binary([9, 9])])
    }

    func testLongestMinimalLengthsOfEachFormAreAccepted() {
        let p125 = [UInt8](repeating: 0x41, count: 125)
        let p65535 = [UInt8](repeating: 0x42, count: 65535)
        assertDecodes(clientFrame(0x2, p125), to: [.binary(p125)])
        XCTAssertEqual(decode([clientFrame(0x2, p65535)]), DecodeOutcome(events: [.binary(p65535)]))
    }

    func testControlPayloadOf125BytesIsAccepted() {
        let payload = [UInt8](repeating: 0x50, count: 125)
        assertDecodes(clientFrame(0x9, payload), to: [.ping(payload)])
    }

    func testPingPayloadMayBeAnyBytes() {
        assertDecodes(clientFrame(0x9, [0xFF, 0x00, 0xC0]), to: [.ping([0xFF, 0x00, 0xC0])])
    }

    // MARK: Header errors — 1002

    func testEachReservedBitFailsWith1002() {
        for rsv: UInt8 in [0x40, 0x20, 0x10, 0x70] {
            assertFails(clientFrame(0x1, Array("x"), rsv: rsv), with: .reservedBitsSet)
        }
    }

    func testRSV1IsAllowedOnAFirstDataFrameOnlyWhenNegotiated() {
        let deflate = FrameDecoder.Configuration(allowRSV1: true)
        var input = clientFrame(0x2, [1, 2, 3], fin: false, rsv: 0x40) + clientFrame(0x0, [4])
        var decoder = FrameDecoder(configuration: deflate)
        input.withUnsafeMutableBytes { bytes in
            guard case .event(.messageData(let piece), let n) = try! decoder.decode(bytes) else { return XCTFail() }
            XCTAssertTrue(piece.isCompressed)
            guard case .event(.messageData(let next), _) = try! decoder.decode(UnsafeMutableRawBufferPointer(rebasing: bytes[n...])) else { return XCTFail() }
            XCTAssertTrue(next.isCompressed && next.isLast)
        }
        // RFC 7692 §6: not on continuation frames, not on control frames.
        assertFails(clientFrame(0x2, [1], fin: false) + clientFrame(0x0, [2], rsv: 0x40), with: .reservedBitsSet, configuration: deflate)
        assertFails(clientFrame(0x9, [], rsv: 0x40), with: .reservedBitsSet, configuration: deflate)
        assertFails(clientFrame(0x2, [1], rsv: 0x20), with: .reservedBitsSet, configuration: deflate)
    }

    func testCompressedTextIsNotUTF8ValidatedByTheDecoder() {
        // Deflated bytes are not text; the inflating layer validates.
        let deflate = FrameDecoder.Configuration(allowRSV1: true)
        XCTAssertEqual(decode([clientFrame(0x1, [0xFF, 0xFE], rsv: 0x40)], configuration: deflate),
                       DecodeOutcome(events: [.text([0xFF, 0xFE])]))
    }

    func testEveryReservedOpcodeFailsWith1002() {
        for opcode: UInt8 in [0x3, 0x4, 0x5, 0x6, 0x7, 0xB, 0xC, 0xD, 0xE, 0xF] {
            assertFails(clientFrame(opcode, []), with: .unknownOpcode)
        }
    }

    func testUnmaskedFrameFailsWith1002() {
        assertFails(clientFrame(0x2, [1, 2], mask: nil), with: .unmaskedFrame)
        assertFails(clientFrame(0x8, [], mask: nil), with: .unmaskedFrame)
    }

    func testSixteenBitLengthUnder126FailsWith1002() {
        assertFails(clientFrame(0x2, [1, 2, 3], length: .sixteen), with: .nonMinimalLength)
        assertFails(clientFrame(0x2, Array(repeating: 0, count: 125), length: .sixteen), with: .nonMinimalLength)
    }

    func testSixtyFourBitLengthUnder65536FailsWith1002() {
        assertFails(clientFrame(0x2, [1], length: .sixtyFour), with: .nonMinimalLength)
        assertFails(clientFrame(0x2, Array(repeating: 0, count: 300), length: .sixtyFour), with: .nonMinimalLength)
    }

    func testSixtyFourBitLengthWithHighBitSetFailsWith1002() {
        let header: [UInt8] = [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1] + exampleMask
        assertFails(header, with: .lengthHighBitSet)
    }

    func testHugeSixtyFourBitLengthFailsWith1009BeforeAnyPayload() {
        let header: [UInt8] = [0x82, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF] + exampleMask
        assertFails(header, with: .messageTooBig)
    }

    // MARK: Control frames — 1002

    func testControlFrameOver125BytesFailsWith1002() {
        for opcode: UInt8 in [0x8, 0x9, 0xA] {
            assertFails(clientFrame(opcode, Array(repeating: 0x30, count: 126)), with: .controlFrameTooLong)
        }
        // Even a 16-bit length claiming less is refused: the 7-bit field says 126.
        assertFails([0x89, 0xFE, 0x00, 0x05] + exampleMask, with: .controlFrameTooLong)
    }

    func testFragmentedControlFrameFailsWith1002() {
        for opcode: UInt8 in [0x8, 0x9, 0xA] {
            assertFails(clientFrame(opcode, [], fin: false), with: .fragmentedControlFrame)
        }
    }

    // MARK: Fragmentation — 1002

    func testContinuationWithoutAMessageFailsWith1002() {
        assertFails(clientFrame(0x0, Array("x")), with: .continuationWithoutMessage)
        // After a completed message the next continuation has nothing to continue.
        assertFails(clientFrame(0x1, Array("a")) + clientFrame(0x0, Array("b")),
                    with: .continuationWithoutMessage, after: [.text(Array("a"))])
    }

    func testNewDataFrameWhileAMessageIsInProgressFailsWith1002() {
        assertFails(clientFrame(0x1, Array("a"), fin: false) + clientFrame(0x1, Array("b")), with: .dataFrameInsideMessage)
        assertFails(clientFrame(0x2, [1], fin: false) + clientFrame(0x9, []) + clientFrame(0x2, [2]),
                    with: .dataFrameInsideMessage, after: [.ping([])])
    }

    // MARK: Message size — 1009

    func testMessageOverTheLimitFailsWith1009FromTheHeader() {
        let limit = FrameDecoder.Configuration(maxMessageLength: 10)
        assertDecodes(clientFrame(0x2, Array(repeating: 1, count: 10)), to: [.binary(Array(repeating: 1, count: 10))], configuration: limit)
        // The header alone decides: no payload byte follows it here.
        assertFails(Array(clientFrame(0x2, Array(repeating: 1, count: 11)).prefix(6)), with: .messageTooBig, configuration: limit)
    }

    func testFragmentsAreSummedAgainstTheLimit() {
        let limit = FrameDecoder.Configuration(maxMessageLength: 10)
        let input = clientFrame(0x2, Array(repeating: 1, count: 6), fin: false) + clientFrame(0x9, Array("ctl"))
            + clientFrame(0x0, Array(repeating: 2, count: 5))
        assertFails(input, with: .messageTooBig, after: [.ping(Array("ctl"))], configuration: limit)
        // Each message is counted on its own.
        let two = clientFrame(0x2, Array(repeating: 1, count: 6)) + clientFrame(0x2, Array(repeating: 2, count: 6))
        assertDecodes(two, to: [.binary(Array(repeating: 1, count: 6)), .binary(Array(repeating: 2, count: 6))], configuration: limit)
    }

    func testControlFramesDoNotCountAgainstTheMessageLimit() {
        let limit = FrameDecoder.Configuration(maxMessageLength: 0)
        assertDecodes(clientFrame(0x9, Array("ping")) + clientFrame(0x2, []), to: [.ping(Array("ping")), .binary([])], configuration: limit)
    }

    // MARK: Close frames

    func testEmptyCloseHasNoCode() {
        assertDecodes(clientFrame(0x8, []), to: [.close(nil, [])])
    }

    func testCloseWithCodeAndReasonDecodes() {
        assertDecodes(clientFrame(0x8, closePayload(1000, Array("bye ✓"))), to: [.close(1000, Array("bye ✓"))])
        assertDecodes(clientFrame(0x8, closePayload(4999)), to: [.close(4999, [])])
        assertDecodes(clientFrame(0x8, closePayload(3000, Array(repeating: 0x61, count: 123))), to: [.close(3000, Array(repeating: 0x61, count: 123))])
    }

    func testOneByteClosePayloadFailsWith1002() {
        assertFails(clientFrame(0x8, [0x03]), with: .closePayloadOneByte)
    }

    func testInvalidCloseCodesFailWith1002() {
        for code: UInt16 in [0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535] {
            assertFails(clientFrame(0x8, closePayload(code)), with: .invalidCloseCode)
        }
    }

    func testCloseReasonNotUTF8FailsWith1007() {
        assertFails(clientFrame(0x8, closePayload(1000, [0xCE, 0xBA, 0xE1, 0xBD])), with: .closeReasonNotUTF8)
        assertFails(clientFrame(0x8, closePayload(1000, [0xED, 0xA0, 0x80])), with: .closeReasonNotUTF8)
    }

    func testBytesAfterACloseFrameAreConsumedAndIgnored() {
        let input = clientFrame(0x8, closePayload(1001)) + clientFrame(0x1, Array("late")) + [0xFF, 0x00, 0x13]
        assertDecodes(input, to: [.close(1001, [])])
        var decoder = FrameDecoder()
        var bytes = input
        bytes.withUnsafeMutableBytes { b in
            _ = try! decoder.decode(b)
            XCTAssertTrue(decoder.isClosed)
            XCTAssertEqual(try! decoder.decode(UnsafeMutableRawBufferPointer(rebasing: b[8...])), .needMoreData(consumed: b.count - 8))
        }
    }

    func testCloseAbandonsAMessageInProgress() {
        assertDecodes(clientFrame(0x1, Array("half"), fin: false) + clientFrame(0x8, []), to: [.close(nil, [])])
    }

    // MARK: Decoder discipline

    func testErrorsAreSticky() {
        var decoder = FrameDecoder()
        var bad = clientFrame(0x3, [])
        var good = clientFrame(0x9, [])
        XCTAssertEqual(decodeOnce(&decoder, &bad), .failure(.unknownOpcode))
        XCTAssertEqual(decodeOnce(&decoder, &good), .failure(.unknownOpcode))
    }

    func testIncompleteHeaderConsumesNothing() {
        let frame = clientFrame(0x2, Array(repeating: 7, count: 200))
        for cut in 0..<8 {
            var decoder = FrameDecoder()
            var part = Array(frame.prefix(cut))
            part.withUnsafeMutableBytes { b in XCTAssertEqual(try! decoder.decode(b), .needMoreData(consumed: 0), "cut \(cut)") }
        }
    }

    func testCompleteHeaderWithoutPayloadIsConsumed() {
        var decoder = FrameDecoder()
        var header = Array(clientFrame(0x2, Array(repeating: 7, count: 200)).prefix(8))
        header.withUnsafeMutableBytes { b in XCTAssertEqual(try! decoder.decode(b), .needMoreData(consumed: 8)) }
    }

    func testPartialControlFrameConsumesNothing() {
        var decoder = FrameDecoder()
        var part = Array(clientFrame(0x9, Array("abc")).prefix(8))
        part.withUnsafeMutableBytes { b in XCTAssertEqual(try! decoder.decode(b), .needMoreData(consumed: 0)) }
    }

    func testEventsStaySmall() {
        XCTAssertLessThanOrEqual(MemoryLayout<MessagePiece>.size, 12)
        XCTAssertLessThanOrEqual(MemoryLayout<FrameEvent>.size, 16)
        XCTAssertLessThanOrEqual(MemoryLayout<DecodeStep>.size, 24)
    }
}
