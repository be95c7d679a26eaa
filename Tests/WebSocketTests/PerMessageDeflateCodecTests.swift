import XCTest

@testable import WebSocket

/// Message compression (RFC 7692 §7.2) against the examples of §7.2.3,
/// and the inflated-size limit.
final class PerMessageDeflateCodecTests: XCTestCase {
    let hello = Array("Hello".utf8)

    // §7.2.3.1: "Hello" compressed is f2 48 cd c9 c9 07 00.
    func testHelloCompresses() {
        let deflater = MessageDeflater(parameters: .init())
        XCTAssertEqual(hello.withUnsafeBytes { deflater.compress($0) }, [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00])
    }

    func testHelloInflatesWholeAndFragmented() throws {
        XCTAssertEqual(try inflate([[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00]]), [hello])
        // §7.2.3.1: the same message in two frames.
        XCTAssertEqual(try inflate([[0xf2, 0x48, 0xcd], [0xc9, 0xc9, 0x07, 0x00]], fragments: true), [hello])
    }

    // §7.2.3.2: with context takeover the second "Hello" is f2 00 11 00 00.
    func testSharedContext() throws {
        let deflater = MessageDeflater(parameters: .init())
        XCTAssertEqual(hello.withUnsafeBytes { deflater.compress($0) }, [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00])
        XCTAssertEqual(hello.withUnsafeBytes { deflater.compress($0) }, [0xf2, 0x00, 0x11, 0x00, 0x00])
        XCTAssertEqual(try inflate([[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00], [0xf2, 0x00, 0x11, 0x00, 0x00]]), [hello, hello])
    }

    // §7.2.3.2, without context takeover: both messages compress alike, and
    // the receiver cannot resolve a back-reference into the last message.
    func testNoContextTakeover() throws {
        let deflater = MessageDeflater(parameters: .init(serverNoContextTakeover: true))
        for _ in 0..<2 {
            XCTAssertEqual(hello.withUnsafeBytes { deflater.compress($0) }, [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00])
        }
        let params = PerMessageDeflateParameters(clientNoContextTakeover: true)
        XCTAssertEqual(try inflate([[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00], [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00]],
                                   parameters: params), [hello, hello])
        XCTAssertThrowsError(try inflate([[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00], [0xf2, 0x00, 0x11, 0x00, 0x00]],
                                         parameters: params)) { XCTAssertEqual($0 as? WebSocketError, .compressedDataInvalid) }
    }

    // §7.2.3.3: a stored (uncompressed) block.
    func testStoredBlock() throws {
        XCTAssertEqual(try inflate([[0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00]]), [hello])
    }

    // §7.2.3.4: a block with BFINAL set; context carries over into the next
    // message all the same.
    func testBFinalBlock() throws {
        XCTAssertEqual(try inflate([[0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00], [0xf2, 0x00, 0x11, 0x00, 0x00]]), [hello, hello])
    }

    // §7.2.3.5: two DEFLATE blocks in one message.
    func testTwoBlocks() throws {
        XCTAssertEqual(try inflate([[0xf2, 0x48, 0x05, 0x00, 0x00, 0x00, 0xff, 0xff, 0xca, 0xc9, 0xc9, 0x07, 0x00]]), [hello])
    }

    // §7.2.3.6: an empty message is the single byte 0x00 (or nothing).
    func testEmptyMessage() throws {
        XCTAssertEqual(try inflate([[0x00], []]), [[], []])
        XCTAssertEqual([UInt8]().withUnsafeBytes { MessageDeflater(parameters: .init()).compress($0) }, [0x00])
    }

    // fuzz-ws-deflate's first finding: an empty message after another one
    // wrote nothing (zlib refuses a second sync flush with no input), and
    // stripping the 4-byte tail trapped. It is now the tail alone (an
    // empty payload, §7.2.3.6), with and without context takeover, and it
    // inflates to an empty message between the others.
    func testEmptyMessageAfterAMessage() throws {
        for noTakeover in [false, true] {
            let deflater = MessageDeflater(parameters: .init(serverNoContextTakeover: noTakeover))
            let first = hello.withUnsafeBytes { deflater.compress($0) }
            let empty = [UInt8]().withUnsafeBytes { deflater.compress($0) }
            let again = [UInt8]().withUnsafeBytes { deflater.compress($0) }
            let last = hello.withUnsafeBytes { deflater.compress($0) }
            XCTAssertEqual(empty, [0x00])
            XCTAssertEqual(again, empty)
            let params = PerMessageDeflateParameters(clientNoContextTakeover: noTakeover)
            XCTAssertEqual(try inflate([first, empty, again, last], parameters: params), [hello, [], [], hello])
        }
        // The resumable form with too little room asks for more.
        let deflater = MessageDeflater(parameters: .init())
        _ = hello.withUnsafeBytes { deflater.compress($0) }
        var small = [UInt8](repeating: 0, count: 5)
        let step = small.withUnsafeMutableBytes { deflater.compress(UnsafeRawBufferPointer(start: nil, count: 0), into: $0) }
        XCTAssertEqual(step, MessageDeflater.Step(consumed: 0, written: 0, isFinished: false))
        var room = [UInt8](repeating: 0, count: 16)
        let done = room.withUnsafeMutableBytes { deflater.compress(UnsafeRawBufferPointer(start: nil, count: 0), into: $0) }
        XCTAssertEqual(done, MessageDeflater.Step(consumed: 0, written: 5, isFinished: true))
        XCTAssertEqual(Array(room[..<5]), [0x00, 0x00, 0x00, 0xFF, 0xFF])
    }

    func testRoundTripsLargeMessagesWithEveryWindow() throws {
        var text: [UInt8] = []
        for i in 0..<20_000 { text += Array("line \(i % 977) of a moderately repetitive text\n".utf8) }
        for bits in [9, 12, 15] {
            let params = PerMessageDeflateParameters(serverMaxWindowBits: bits, clientMaxWindowBits: bits)
            let deflater = MessageDeflater(parameters: params)
            let first = text.withUnsafeBytes { deflater.compress($0) }
            let second = text.withUnsafeBytes { deflater.compress($0) }
            XCTAssertLessThan(first.count, text.count / 4)
            // The receiver's window is the sender's (server_max = what we deflate with).
            let receiver = PerMessageDeflateParameters(clientMaxWindowBits: bits)
            XCTAssertEqual(try inflate([first, second], parameters: receiver, text: true), [text, text])
        }
    }

    func testMinimumLength() {
        let deflater = MessageDeflater(parameters: .init())
        XCTAssertFalse(deflater.shouldCompress(length: MessageDeflater.minimumLength - 1))
        XCTAssertTrue(deflater.shouldCompress(length: MessageDeflater.minimumLength))
        XCTAssertFalse(MessageDeflater(parameters: .init(serverMaxWindowBits: 8)).shouldCompress(length: 1000))
    }

    /// A decompression bomb stops one byte past the limit: 10 MB of zeros
    /// deflate to ~10 KB, the inflater never holds more than limit + 1 bytes.
    func testBombIsCutAtTheLimit() {
        let zeros = [UInt8](repeating: 0, count: 10 << 20)
        let bomb = zeros.withUnsafeBytes { MessageDeflater(parameters: .init()).compress($0) }
        XCTAssertLessThan(bomb.count, 20_000)
        let inflater = MessageInflater(parameters: .init(), maxMessageLength: 1 << 20)
        let failure = bomb.withUnsafeBytes { raw -> WebSocketError? in
            do throws(WebSocketError) { _ = try inflater.inflate(raw, isFirst: true, isLast: true, text: false) } catch { return error }
            return nil
        }
        XCTAssertEqual(failure, .messageTooBig)
        XCTAssertLessThanOrEqual(inflater.bufferCapacity, (1 << 20) + 1)
        // Exactly at the limit is fine.
        let exact = [UInt8](repeating: 7, count: 1 << 20)
        let packed = exact.withUnsafeBytes { MessageDeflater(parameters: .init()).compress($0) }
        XCTAssertEqual(try inflate([packed], parameters: .init(), limit: 1 << 20), [exact])
    }

    func testInvalidUTF8AndInvalidData() {
        let bad: [UInt8] = [0x48, 0xff, 0x6c, 0x6c, 0x6f] + Array(repeating: 0x41, count: 100)
        let packed = bad.withUnsafeBytes { MessageDeflater(parameters: .init()).compress($0) }
        XCTAssertThrowsError(try inflate([packed], text: true)) { XCTAssertEqual($0 as? WebSocketError, .invalidUTF8) }
        // Truncated character at the end of a text message.
        let cut = [UInt8](Array("abc".utf8) + [0xe2, 0x82]).withUnsafeBytes { MessageDeflater(parameters: .init()).compress($0) }
        XCTAssertThrowsError(try inflate([cut], text: true)) { XCTAssertEqual($0 as? WebSocketError, .invalidUTF8) }
        // BTYPE 11 is reserved: not DEFLATE.
        XCTAssertThrowsError(try inflate([[0xff, 0xff, 0xff]])) { XCTAssertEqual($0 as? WebSocketError, .compressedDataInvalid) }
    }

    /// Inflates messages (or, with `fragments`, the pieces of one message).
    private func inflate(_ messages: [[UInt8]], fragments: Bool = false, parameters: PerMessageDeflateParameters = .init(),
                         text: Bool = false, limit: Int = 16 << 20) throws -> [[UInt8]] {
        let inflater = MessageInflater(parameters: parameters, maxMessageLength: limit)
        var results: [[UInt8]] = []
        for (i, m) in messages.enumerated() {
            let isFirst = !fragments || i == 0, isLast = !fragments || i == messages.count - 1
            let outcome = m.withUnsafeBytes { raw -> Result<[UInt8]?, WebSocketError> in
                do throws(WebSocketError) {
                    return .success(try inflater.inflate(raw, isFirst: isFirst, isLast: isLast, text: text).map { Array($0) })
                } catch { return .failure(error) }
            }
            if let message = try outcome.get() {
                results.append(message)
                inflater.release()
            }
        }
        return results
    }
}
