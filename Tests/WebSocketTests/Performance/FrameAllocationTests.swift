// Decoding a masked text frame and encoding the reply allocates nothing per
// message once the connection is under way (issue 20 point 2; STYLE.md §6,
// after swift-nio's allocation-count test that decodes 1000 WebSocket
// frames). AllocationCounter interposes malloc for the test executable and
// counts per thread; the region counted is exactly what the server does per
// message: unmask and decode in place (RFC 6455 §5.3), validate the UTF-8 of
// the text (§8.1), and write an unmasked reply frame (§5.1: a server MUST
// NOT mask) into a buffer it owns. The client's frame is built once, outside.

import AllocationCounter
import Core
import XCTest

@testable import WebSocket

final class FrameAllocationTests: XCTestCase {
    private let warmUp = 100
    private let measured = 1000

    func testDecodingAMaskedTextFrameAndEncodingTheReplyAllocatesNothing() throws {
        let message = Array("Hello, world! {\"n\": 42}".utf8)
        let wire = clientFrame(0x1, message)
        var input = [UInt8](repeating: 0, count: wire.count)
        var output = [UInt8](repeating: 0, count: FrameEncoder.frameLength(payloadLength: message.count))
        var decoder = FrameDecoder()
        var decodeAllocations: Int64 = 0
        var encodeAllocations: Int64 = 0
        var replies = 0

        try input.withUnsafeMutableBytes { input in
            try output.withUnsafeMutableBytes { output in
                try wire.withUnsafeBytes { wire in
                    for i in 0..<(warmUp + measured) {
                        input.copyMemory(from: wire)  // a fresh read, still masked
                        let start = allocation_counter_thread_total()
                        let step = try decoder.decode(input)
                        let decoded = allocation_counter_thread_total()
                        guard case .event(.messageData(let piece), let consumed) = step,
                              piece.isFirst, piece.isLast, consumed == wire.count else {
                            return XCTFail("message \(i): \(step)")
                        }
                        let payload = UnsafeRawBufferPointer(rebasing: input[piece.span.start..<piece.span.end])
                        let n = FrameEncoder.writeFrame(opcode: .text, payload: payload, into: output)
                        let encoded = allocation_counter_thread_total()
                        XCTAssertEqual(n, output.count)
                        if i >= warmUp {
                            decodeAllocations += decoded - start
                            encodeAllocations += encoded - decoded
                            replies += 1
                        }
                    }
                }
            }
        }
        XCTAssertEqual(replies, measured)
        XCTAssertEqual(Array(output[2...]), message, "the reply echoes the text, unmasked")
        XCTAssertEqual(output[0], 0x81, "FIN + text")
        XCTAssertEqual(decodeAllocations, 0, "decoding \(measured) masked text frames")
        XCTAssertEqual(encodeAllocations, 0, "encoding \(measured) replies")
        print("websocket allocations: decode \(decodeAllocations), encode \(encodeAllocations) for \(measured) messages")
    }
}
