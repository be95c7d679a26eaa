// Abuse budgets: each answered with GOAWAY(ENHANCE_YOUR_CALM) (or the code
// named) while memory stays bounded.

import XCTest
import Core
@testable import HTTP2

final class H2ConnectionMitigationTests: XCTestCase {
    // CVE-2023-44487: open and reset streams quickly, beyond the budget.
    func testRapidResetIsEnhanceYourCalm() {
        var l = H2Limits()
        l.rapidResetBurst = 10
        l.rapidResetPerSecond = 1
        let h = H2Harness(limits: l)
        var wire: [UInt8] = []
        for i in 0 ..< 11 {
            let id = UInt32(2 * i + 1)
            wire += h.headers(id, h.get(), endStream: false) + h.rst(id, .cancel)
        }
        let events = h.feed(wire)
        XCTAssertEqual(events.filter { if case .reset = $0 { return true } else { return false } }.count, 10)
        XCTAssertEqual(events.last, .connectionError(.enhanceYourCalm, "too many stream resets (rapid reset)"))
        XCTAssertEqual(h.drain().last, .goAway(21, .enhanceYourCalm, "too many stream resets (rapid reset)"))
    }

    func testResetBudgetRefillsOverTime() {
        var l = H2Limits()
        l.rapidResetBurst = 2
        l.rapidResetPerSecond = 1
        let h = H2Harness(limits: l)
        var id: UInt32 = 1
        for _ in 0 ..< 6 {
            XCTAssertEqual(h.feed(h.headers(id, h.get(), endStream: false) + h.rst(id, .cancel)).connectionError, nil)
            id += 2
            h.now = h.now.adding(milliseconds: 1000)
        }
    }

    func testMalformedRequestsCountAsResets() {
        var l = H2Limits()
        l.rapidResetBurst = 3
        l.rapidResetPerSecond = 0
        let h = H2Harness(limits: l)
        var wire: [UInt8] = []
        for i in 0 ..< 4 { wire += h.headers(UInt32(2 * i + 1), [(":method", "GET")]) }
        XCTAssertEqual(h.feed(wire).connectionError, .enhanceYourCalm)
    }

    // CONTINUATION flood (CVE-2024-27316): too many frames.
    func testTooManyContinuationFramesIsEnhanceYourCalm() {
        let h = H2Harness()
        var wire = h.headers(1, block: [0x82], endStream: true, endHeaders: false)
        for _ in 0 ..< 9 { wire += h.continuation(1, block: [0x84], endHeaders: false) }
        XCTAssertEqual(h.feed(wire), [.connectionError(.enhanceYourCalm, "too many CONTINUATION frames")])
    }

    // ...and too many bytes: refused before they are buffered.
    func testHeaderBlockOverTheBufferLimitIsEnhanceYourCalm() {
        var l = H2Limits()
        l.maxHeaderBlockBytes = 20_000
        let h = H2Harness(limits: l)
        let wire = h.headers(1, block: Array(repeating: 0x84, count: 16_000), endStream: true, endHeaders: false)
            + h.continuation(1, block: Array(repeating: 0x84, count: 5_000), endHeaders: true)
        XCTAssertEqual(h.feed(wire), [.connectionError(.enhanceYourCalm, "field block larger than the buffering limit")])
        XCTAssertLessThanOrEqual(h.conn.blockBuffer.capacity, 32_768)
    }

    // PING / SETTINGS flood while not reading our output.
    func testPingFloodIsEnhanceYourCalm() {
        var l = H2Limits()
        l.maxQueuedControlFrames = 50
        let h = H2Harness(limits: l)
        _ = h.drain()
        var wire: [UInt8] = []
        for i in 0 ..< 51 { wire += h.ping(UInt64(i)) }
        XCTAssertEqual(h.feed(wire), [.connectionError(.enhanceYourCalm, "too many control frames queued unsent (PING/SETTINGS flood)")])
    }

    func testSettingsFloodIsEnhanceYourCalm() {
        var l = H2Limits()
        l.maxQueuedControlFrames = 20
        let h = H2Harness(limits: l)
        _ = h.drain()
        var wire: [UInt8] = []
        for _ in 0 ..< 21 { wire += h.settings([]) }
        XCTAssertEqual(h.feed(wire).connectionError, .enhanceYourCalm)
    }

    func testControlFramesWrittenOutDoNotCount() {
        var l = H2Limits()
        l.maxQueuedControlFrames = 5
        let h = H2Harness(limits: l)
        for round in 0 ..< 10 {
            var wire: [UInt8] = []
            for i in 0 ..< 5 { wire += h.ping(UInt64(round * 10 + i)) }
            XCTAssertEqual(h.feed(wire), [])
            XCTAssertEqual(h.drain().count, 5)
        }
    }

    func testRstFloodFromRefusedStreamsIsBounded() {
        var l = H2Limits()
        l.maxConcurrentStreams = 0
        l.maxQueuedControlFrames = 10
        let h = H2Harness(limits: l)
        _ = h.drain()
        var wire: [UInt8] = []
        for i in 0 ..< 11 { wire += h.headers(UInt32(2 * i + 1), h.get()) }
        XCTAssertEqual(h.feed(wire).connectionError, .enhanceYourCalm)
    }

    // Empty frames: zero-length DATA without END_STREAM, empty fragments.
    func testEmptyDataFloodIsEnhanceYourCalm() {
        var l = H2Limits()
        l.emptyFrameBurst = 5
        l.emptyFramesPerSecond = 0
        let h = H2Harness(limits: l)
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        var wire: [UInt8] = []
        for _ in 0 ..< 6 { wire += h.data(1, []) }
        XCTAssertEqual(h.feed(wire), [.connectionError(.enhanceYourCalm, "too many empty frames")])
    }

    func testEmptyContinuationFloodIsEnhanceYourCalm() {
        var l = H2Limits()
        l.emptyFrameBurst = 3
        l.emptyFramesPerSecond = 0
        let h = H2Harness(limits: l)
        var wire = h.headers(1, block: [], endStream: true, endHeaders: false)
        for _ in 0 ..< 3 { wire += h.continuation(1, block: [], endHeaders: false) }
        XCTAssertEqual(h.feed(wire).connectionError, .enhanceYourCalm)
    }

    func testEmptyFramesWithinTheBudgetAreFine() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        XCTAssertEqual(h.feed(h.data(1, []) + h.data(1, [])), [])
        XCTAssertEqual(h.feed(h.data(1, [], endStream: true)), [.data(1, [], flowControlled: 0, endStream: true)])
    }

    // HPACK bomb: tiny references to a big entry decode to far more than the
    // list limit → ENHANCE_YOUR_CALM, nothing kept.
    func testHPACKBombIsEnhanceYourCalm() {
        var l = H2Limits()
        l.maxHeaderListSize = 1000
        let h = H2Harness(limits: l)
        // "x: " + 1000 × "b" with incremental indexing (a 1033-byte entry),
        // then ten one-byte references to it (index 62).
        var block: [UInt8] = [0x40, 0x01, 0x78, 0x7f, 0xe9, 0x06] + Array(repeating: 0x62, count: 1000)
        block += Array(repeating: 0xbe, count: 10)
        let events = h.feed(h.headers(1, block: block))
        XCTAssertEqual(events.connectionError, .enhanceYourCalm)
        XCTAssertLessThan(h.conn.headerList.bytes.capacity, 64 * 1024)
    }

    // Stream-id misuse and oversized frames are covered in the stream and
    // frame-rule tests; here the output stays bounded under a long flood of
    // ignored frames.
    func testIgnoredFramesProduceNoOutput() {
        let h = H2Harness()
        _ = h.drain()
        var wire: [UInt8] = []
        for i in 0 ..< 1000 { wire += h.priority(UInt32(2 * i + 1), dependsOn: 0) + rawFrame(FrameType(rawValue: 0x20), stream: 0, [1]) }
        XCTAssertEqual(h.feed(wire), [])
        XCTAssertEqual(h.conn.output.readableCount, 0)
    }
}

final class H2ConnectionOutputTests: XCTestCase {
    // A partly written output still holds the newest ack: the count stands
    // until the server's write cursor passes it.
    func testControlFramesCountUntilWrittenPastTheNewest() {
        var l = H2Limits()
        l.maxQueuedControlFrames = 5
        let h = H2Harness(limits: l)
        _ = h.drain()
        var wire: [UInt8] = []
        for i in 0 ..< 5 { wire += h.ping(UInt64(i)) }
        XCTAssertEqual(h.feed(wire), [])
        h.conn.output.readerIndex += 17 * 4  // four of five acks written
        XCTAssertEqual(h.feed(h.ping(9)).connectionError, .enhanceYourCalm)
    }

    func testOutputGrowsForLargeWritesAndIsReleasedWhenEmpty() {
        let h = H2Harness()
        _ = h.feed(h.settings([Setting(.initialWindowSize, 1 << 20)]) + h.windowUpdate(0, 1 << 20))
        _ = h.feed(h.headers(1, h.get()))
        h.respond(1, status: 200)
        let body = [UInt8](repeating: 0x61, count: 200_000)
        XCTAssertEqual(h.send(1, body, endStream: true), 200_000)
        XCTAssertGreaterThanOrEqual(h.conn.output.capacity, 200_000)
        let out = h.drain()
        XCTAssertEqual(out.compactMap { if case .data(_, let b, _) = $0 { return b.count } else { return nil } }.reduce(0, +), 200_000)
        _ = h.feed(h.ping(1))
        XCTAssertLessThanOrEqual(h.conn.output.capacity, 4096)
        XCTAssertEqual(h.drain(), [.ping(ack: true, 1)])
    }

    func testPartialWritesKeepFramesIntact() throws {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.get()))
        h.respond(1, status: 200)
        XCTAssertEqual(h.send(1, [UInt8](repeating: 1, count: 5000)), 5000)
        // The server writes a little at a time while more is queued.
        var written: [UInt8] = []
        for round in 0 ..< 50 {
            let n = min(97, h.conn.output.readableCount)
            written += Array(h.conn.output.readable[0 ..< n])
            h.conn.output.readerIndex += n
            if round % 10 == 0 { _ = h.feed(h.ping(UInt64(round))) }
        }
        written += Array(h.conn.output.readable)
        h.conn.output.readerIndex = h.conn.output.writerIndex
        var p = FrameParser(maxFrameSize: 1 << 20, expectPreface: false)
        var at = 0, frames = 0
        while at < written.count {
            guard case .frame(_, let n) = try written[at...].withUnsafeBytes({ try p.nextEvent(in: $0) }) else { return XCTFail() }
            at += n
            frames += 1
        }
        XCTAssertEqual(frames, 1 + 1 + 5)  // HEADERS, DATA, five PING acks
    }

    func testSizesStaySmall() {
        XCTAssertEqual(MemoryLayout<H2Field>.size, 16)
        XCTAssertLessThanOrEqual(MemoryLayout<H2Stream>.size, 96)
    }
}

extension H2ConnectionOutputTests {
    func testLargeFieldBlockBuffersAreNotKept() {
        let h = H2Harness()
        let block = h.block(h.get("/", extra: [("x-big", String(repeating: "q", count: 12_000))]))
        _ = h.feed(h.settings([]))
        let wire = h.headers(1, block: Array(block[..<10_000]), endStream: true, endHeaders: false)
            + h.continuation(1, block: Array(block[10_000...]), endHeaders: true)
        XCTAssertEqual(h.feed(wire).count, 1)
        h.respond(1, status: 200, [("x-big", String(repeating: "r", count: 20_000))], endStream: true)
        XCTAssertLessThanOrEqual(h.conn.blockBuffer.capacity, 16 * 1024)
        XCTAssertLessThanOrEqual(h.conn.sendBlock.capacity, 16 * 1024)
    }
}
