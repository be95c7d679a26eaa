// Each frame type's rules as the connection applies them (RFC 9113 §4.2, §6).

import XCTest
import Core
@testable import HTTP2

final class H2ConnectionFrameRulesTests: XCTestCase {
    // §4.2: larger than our SETTINGS_MAX_FRAME_SIZE → FRAME_SIZE_ERROR.
    func testOversizedFrameIsFrameSizeError() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        let big = h.data(1, Array(repeating: 0, count: 16385))
        // Refused as soon as the header is in, before the payload is buffered.
        XCTAssertEqual(h.feed(Array(big[0 ..< 9])), [.connectionError(.frameSizeError, "frame larger than SETTINGS_MAX_FRAME_SIZE")])
        XCTAssertEqual(h.drain().goAwayCode, .frameSizeError)
    }

    func testFrameOfExactlyMaxSizeIsAccepted() {
        var l = H2Limits()
        l.initialStreamWindow = 1 << 20
        let h = H2Harness(limits: l)
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        let events = h.feed(h.data(1, Array(repeating: 7, count: 16384)))
        XCTAssertEqual(events, [.data(1, Array(repeating: 7, count: 16384), flowControlled: 16384, endStream: false)])
    }

    // §5.5: "Implementations MUST ignore and discard frames of unknown types."
    func testUnknownFrameTypesAndFlagsAreIgnored() {
        let h = H2Harness()
        _ = h.drain()
        XCTAssertEqual(h.feed(rawFrame(FrameType(rawValue: 0xbb), flags: FrameFlags(rawValue: 0xff), stream: 9, [1, 2, 3])), [])
        XCTAssertEqual(h.feed(rawFrame(.ping, flags: FrameFlags(rawValue: 0xf0), stream: 0, Array(repeating: 1, count: 8))), [])
        XCTAssertEqual(h.drain(), [.ping(ack: true, 0x0101_0101_0101_0101)])
        XCTAssertFalse(h.conn.isClosing)
    }

    // §8.4: "servers MUST treat the receipt of a PUSH_PROMISE frame as a
    // connection error of type PROTOCOL_ERROR."
    func testPushPromiseFromClientIsProtocolError() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        let pp = rawFrame(.pushPromise, flags: .endHeaders, stream: 1, [0, 0, 0, 2, 0x82])
        XCTAssertEqual(h.feed(pp), [.connectionError(.protocolError, "PUSH_PROMISE from a client")])
    }

    // §6.7
    func testPingIsAnsweredWithTheSameData() {
        let h = H2Harness()
        _ = h.drain()
        XCTAssertEqual(h.feed(h.ping(0x0102_0304_0506_0708) + h.ping(5, ack: true)), [])
        XCTAssertEqual(h.drain(), [.ping(ack: true, 0x0102_0304_0506_0708)])
    }

    func testPingRulesAreConnectionErrors() {
        let h = H2Harness()
        XCTAssertEqual(h.feed(rawFrame(.ping, stream: 1, Array(repeating: 0, count: 8))).connectionError, .protocolError)
        let h2 = H2Harness()
        XCTAssertEqual(h2.feed(rawFrame(.ping, stream: 0, Array(repeating: 0, count: 7))).connectionError, .frameSizeError)
    }

    // §6.4
    func testRstStreamRules() {
        let h = H2Harness()
        XCTAssertEqual(h.feed(rawFrame(.rstStream, stream: 0, be32(8))).connectionError, .protocolError)
        let h2 = H2Harness()
        _ = h2.feed(h2.headers(1, h2.get()))
        XCTAssertEqual(h2.feed(rawFrame(.rstStream, stream: 1, [0, 0, 8])).connectionError, .frameSizeError)
    }

    // §6.3: PRIORITY of the wrong length is a stream error FRAME_SIZE_ERROR;
    // §5.3.1 a stream depending on itself, PROTOCOL_ERROR.
    func testPriorityStreamErrors() {
        let h = H2Harness()
        _ = h.drain()
        XCTAssertEqual(h.feed(rawFrame(.priority, stream: 3, [0, 0, 0, 1])), [])
        XCTAssertEqual(h.drain(), [.rst(3, .frameSizeError)])
        XCTAssertEqual(h.feed(h.priority(5, dependsOn: 5)), [])
        XCTAssertEqual(h.drain(), [.rst(5, .protocolError)])
        _ = h.feed(h.headers(7, h.post(), endStream: false))
        XCTAssertEqual(h.feed(h.priority(7, dependsOn: 7)), [.reset(7, .protocolError)])
        XCTAssertEqual(h.drain(), [.rst(7, .protocolError)])
        XCTAssertEqual(h.feed(rawFrame(.priority, stream: 0, [0, 0, 0, 1, 0])).connectionError, .protocolError)
    }

    func testHeadersDependingOnItselfIsStreamErrorAndKeepsHPACKInStep() {
        let h = H2Harness()
        _ = h.drain()
        h.clientEncoder = HPACKEncoder()
        let selfDep = h.clientEncoder.encode(h.get("/first"), indexing: .incremental)
        XCTAssertEqual(h.feed(h.headers(1, block: selfDep, priority: PrioritySpec(exclusive: false, dependency: 1, weight: 3))), [])
        XCTAssertEqual(h.drain(), [.rst(1, .protocolError)])
        // The next block refers to entries the refused one added.
        let next = h.clientEncoder.encode(h.get("/first"), indexing: .incremental)
        XCTAssertEqual(h.feed(h.headers(3, block: next)), [.request(3, getHead("/first"), endStream: true)])
    }

    func testHeadersWithPriorityAndPaddingAreAccepted() {
        let h = H2Harness()
        XCTAssertEqual(h.feed(h.headers(1, h.get(), padLength: 10, priority: PrioritySpec(exclusive: true, dependency: 0, weight: 200))),
                       [.request(1, getHead(), endStream: true)])
    }

    // §6.1, §6.2: padding as long as the payload → PROTOCOL_ERROR.
    func testPaddingTooLongIsProtocolError() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        XCTAssertEqual(h.feed(rawFrame(.data, flags: .padded, stream: 1, [3, 0, 0])).connectionError, .protocolError)
        let h2 = H2Harness()
        XCTAssertEqual(h2.feed(rawFrame(.headers, flags: [.padded, .endHeaders], stream: 1, [5, 0x82])).connectionError, .protocolError)
    }

    func testDataAndHeadersOnStreamZeroAreProtocolErrors() {
        let h = H2Harness()
        XCTAssertEqual(h.feed(h.data(0, [1])).connectionError, .protocolError)
        let h2 = H2Harness()
        XCTAssertEqual(h2.feed(h2.headers(0, h2.get())).connectionError, .protocolError)
    }

    // §6.9: "A receiver MUST treat the receipt of a WINDOW_UPDATE frame with a
    // flow-control window increment of 0 as a stream error of type
    // PROTOCOL_ERROR; errors on the connection flow-control window MUST be
    // treated as a connection error".
    func testWindowUpdateOfZero() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        _ = h.drain()
        XCTAssertEqual(h.feed(h.windowUpdate(1, 0)), [.reset(1, .protocolError)])
        XCTAssertEqual(h.drain(), [.rst(1, .protocolError)])
        XCTAssertEqual(h.feed(h.windowUpdate(0, 0)).connectionError, .protocolError)
    }

    func testWindowUpdateOfZeroOnAClosedStreamIsAConnectionError() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        h.respond(1, status: 204, endStream: true)
        XCTAssertEqual(h.feed(h.windowUpdate(1, 0)), [.connectionError(.protocolError, "WINDOW_UPDATE increment of 0")])
        // ...but ignored after our RST_STREAM, like everything else.
        let r = H2Harness()
        _ = r.feed(r.headers(1, r.get()))
        r.conn.resetStream(streamID: 1, code: .cancel)
        XCTAssertEqual(r.feed(r.windowUpdate(1, 0)), [])
    }

    func testWindowUpdateOfWrongLengthIsFrameSizeError() {
        let h = H2Harness()
        XCTAssertEqual(h.feed(rawFrame(.windowUpdate, stream: 0, [0, 0, 1])).connectionError, .frameSizeError)
    }

    func testGoAwayShorterThanEightIsFrameSizeError() {
        let h = H2Harness()
        XCTAssertEqual(h.feed(rawFrame(.goAway, stream: 0, [0, 0, 0, 0])).connectionError, .frameSizeError)
        let h2 = H2Harness()
        XCTAssertEqual(h2.feed(rawFrame(.goAway, stream: 1, Array(repeating: 0, count: 8))).connectionError, .protocolError)
    }

    // §6.10: CONTINUATION
    func testHeadersSplitOverContinuation() {
        let h = H2Harness()
        let block = h.block(h.get("/long", extra: [("x-a", String(repeating: "a", count: 100))]))
        let frames = h.headers(1, block: Array(block[0 ..< 10]), endStream: true, endHeaders: false)
            + h.continuation(1, block: Array(block[10 ..< 50]), endHeaders: false)
            + h.continuation(1, block: Array(block[50...]), endHeaders: true)
        XCTAssertEqual(h.feed(frames), [.request(1, getHead("/long", fields: [["x-a", String(repeating: "a", count: 100)]]), endStream: true)])
    }

    func testFrameInterleavedInFieldBlockIsProtocolError() {
        let interleaved: [(H2Harness) -> [UInt8]] = [
            { $0.ping(1) }, { $0.headers(3, $0.get()) }, { $0.continuation(3, block: [], endHeaders: true) },
            { $0.priority(1, dependsOn: 0) }, { _ in rawFrame(FrameType(rawValue: 0xcc), stream: 0, []) },
            { _ in rawFrame(.priority, stream: 1, [0]) },
        ]
        for make in interleaved {
            let h = H2Harness()
            let start = h.headers(1, block: [0x82], endStream: true, endHeaders: false)
            XCTAssertEqual(h.feed(start + make(h)), [.connectionError(.protocolError, "frame interleaved in a field block")])
        }
    }

    // §4.3: "A decoding error in a field block MUST be treated as a connection
    // error of type COMPRESSION_ERROR."
    func testHPACKErrorIsCompressionError() {
        let h = H2Harness()
        XCTAssertEqual(h.feed(h.headers(1, block: [0x80])), [.connectionError(.compressionError, "HPACK index 0")])
        let h2 = H2Harness()
        XCTAssertEqual(h2.feed(h2.headers(1, block: [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])).connectionError, .compressionError)
    }

    func testHPACKErrorOnAnIgnoredStreamIsStillCompressionError() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        h.conn.resetStream(streamID: 1, code: .cancel)
        XCTAssertEqual(h.feed(h.headers(1, block: [0x80], endStream: true)).connectionError, .compressionError)
    }

    // §4.2 of RFC 7541 via SETTINGS_HEADER_TABLE_SIZE: an update above our
    // acknowledged value is a COMPRESSION_ERROR.
    func testTableSizeUpdateAboveOurSettingIsCompressionError() {
        var l = H2Limits()
        l.headerTableSize = 256
        let h = H2Harness(limits: l)
        XCTAssertEqual(h.feed(h.headers(1, block: [0x3f, 0xe1, 0x1f] + h.block(h.get()))).connectionError, .compressionError)
    }
}
