// The same input fed whole, a byte at a time, and in odd chunks gives the
// same events and the same output (STYLE §7).

import XCTest
import Core
@testable import HTTP2

final class H2ConnectionFeedingTests: XCTestCase {
    /// A client conversation touching most frame types.
    private func conversation(_ h: H2Harness) -> [UInt8] {
        var w = ConnectionPreface.bytes + h.settings([Setting(.initialWindowSize, 100_000), Setting(.maxFrameSize, 20_000)])
        w += h.settingsAck() + h.windowUpdate(0, 1000) + h.ping(42)
        w += h.headers(1, h.post(extra: [("cookie", "a=1"), ("cookie", "b=2")]), endStream: false, padLength: 3,
                       priority: PrioritySpec(exclusive: false, dependency: 0, weight: 10))
        w += h.data(1, bytes("hello "), padLength: 4) + h.data(1, []) + h.data(1, bytes("world"))
        let block = h.block(h.get("/split", extra: [("x-long", String(repeating: "z", count: 50))]))
        w += h.headers(3, block: Array(block[..<7]), endStream: true, endHeaders: false)
        w += h.continuation(3, block: Array(block[7...]), endHeaders: true)
        w += rawFrame(FrameType(rawValue: 0x77), stream: 1, [9, 9]) + h.priority(5, dependsOn: 1)
        w += h.headers(1, [("x-trailer", "t")], endStream: true)
        w += h.rst(3, .cancel) + h.goAway(3, .noError)
        return w
    }

    private func run(chunk: Int?) -> ([Ev], [Out]) {
        let h = H2Harness(handshake: false)
        let wire = conversation(h)
        let events = chunk.map { h.feed(wire, chunk: $0) } ?? h.feed(wire)
        XCTAssertEqual(h.unconsumedInput, 0)
        return (events, h.drain())
    }

    func testWholeByteAtATimeAndChunksAgree() {
        let whole = run(chunk: nil)
        XCTAssertEqual(whole.0.count, 8, "\(whole.0)")
        XCTAssertNil(whole.0.connectionError)
        XCTAssertEqual(run(chunk: 1).0, whole.0)
        XCTAssertEqual(run(chunk: 1).1, whole.1)
        XCTAssertEqual(run(chunk: 7).0, whole.0)
        XCTAssertEqual(run(chunk: 100).1, whole.1)
    }

    func testTrailingPartialFrameIsLeftUnconsumed() {
        let h = H2Harness()
        let ping = h.ping(7)
        XCTAssertEqual(h.feed(h.headers(1, h.get()) + Array(ping[0 ..< 5])).count, 1)
        XCTAssertEqual(h.unconsumedInput, 5)
        XCTAssertEqual(h.feed(Array(ping[5...])), [])
        XCTAssertEqual(h.unconsumedInput, 0)
    }

    func testEachEventReportsOnlyTheBytesUpToIt() {
        let h = H2Harness()
        let a = h.headers(1, h.get("/a")), b = h.headers(3, h.get("/b"))
        let input = a + b
        let (event, n) = input.withUnsafeBytes { h.conn.nextEvent(in: $0, now: ms(0)) }
        XCTAssertNotNil(event)
        XCTAssertEqual(n, a.count)
    }

    // Data bytes point into the caller's input, not a copy.
    func testDataEventPointsIntoTheInput() {
        let h = H2Harness()
        _ = h.feed(h.headers(1, h.post(), endStream: false))
        let frame = h.data(1, [5, 6, 7])
        frame.withUnsafeBytes { raw in
            guard case .data(_, let b, _, _)? = h.conn.nextEvent(in: raw, now: ms(0)).event else { return XCTFail() }
            XCTAssertEqual(b.baseAddress, raw.baseAddress! + 9)
        }
    }
}
