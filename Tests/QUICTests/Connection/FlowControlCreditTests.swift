// Credit over a full window (RFC 9000 §4.1, §4.2): the client fills the
// whole stream window before the application reads; reading it returns
// credit in MAX_STREAM_DATA, and the client can go on.

import XCTest
import Core
@testable import QUIC

final class FlowControlCreditTests: XCTestCase {
    func testFullWindowThenReadInTwoChunks() throws {
        let h = ConnectionHarness()
        let answer = h.completeHandshake()
        _ = h.takeEvents()
        h.ack1RTT(answer)
        let c = try XCTUnwrap(h.connection)
        let window = 1 << 20
        var offset = 0
        while offset < window {
            let n = min(1100, window - offset)
            h.send1RTT(Frames.stream(0, offset: UInt64(offset), [UInt8](repeating: 0x42, count: n)))
            offset += n
            if offset % 110_000 == 0 { _ = h.exchange() }
        }
        _ = h.exchange()
        _ = h.takeEvents()
        XCTAssertEqual(c.withReadableBytes(stream: 0) { b, _ in (443_000, b.count) }, window)
        XCTAssertFalse(h.exchange().contains { if case .maxStreamData = $0 { true } else { false } })
        XCTAssertEqual(c.withReadableBytes(stream: 0) { b, _ in (b.count, b.count) }, window - 443_000)
        let after = h.exchange()
        XCTAssertTrue(after.contains { $0 == .maxStreamData(MaxStreamDataFrame(streamID: 0, maximum: UInt64(2 * window))) },
                      "\(after.allFrames)")
        // And the client may send past the old limit.
        h.send1RTT(Frames.stream(0, offset: UInt64(window), [1, 2, 3]))
        XCTAssertEqual(h.takeEvents(), [.streamReadable(0)])
    }

    /// A stream its application parked (stopped reading, StreamReceiveSide)
    /// gives the connection window back as its bytes arrive, so another
    /// stream can use it; its own window stays held until it is read, and
    /// reading it later credits the connection nothing twice (§4.1, §4.2).
    func testParkedStreamGivesTheConnectionWindowBack() throws {
        var configuration = QUICConfiguration()
        configuration.initialMaxData = 100_000
        configuration.initialMaxStreamDataBidiRemote = 60_000
        let h = ConnectionHarness(configuration: configuration)
        let answer = h.completeHandshake()
        _ = h.takeEvents()
        h.ack1RTT(answer)
        let c = try XCTUnwrap(h.connection)
        func fill(_ stream: UInt64, _ count: Int) {
            var offset = 0
            while offset < count {
                let n = min(1100, count - offset)
                h.send1RTT(Frames.stream(stream, offset: UInt64(offset), [UInt8](repeating: 0x42, count: n)))
                offset += n
                if offset % 11_000 == 0 { _ = h.exchange() }
            }
        }
        fill(0, 60_000)  // stream 0's whole window, unread
        XCTAssertFalse(h.exchange().contains { if case .maxData = $0 { true } else { false } })
        // Parked from inside a read, as the HTTP/3 glue does when its body buffer fills.
        XCTAssertEqual(c.withReadableBytes(stream: 0) { _, _ in
            c.setReadingParked(stream: 0, true)
            return (0, 1)
        }, 1)
        let parked = h.exchange()
        XCTAssertTrue(parked.contains { $0 == .maxData(160_000) }, "\(parked.allFrames)")
        XCTAssertFalse(parked.contains { if case .maxStreamData = $0 { true } else { false } })
        // Stream 4 takes 100 000 bytes: past the old connection limit, within the new one.
        _ = h.takeEvents()
        fill(4, 60_000)
        fill(8, 40_000)
        XCTAssertTrue(c.isOpen)
        XCTAssertTrue(h.takeEvents().contains(.streamReadable(8)))
        // Stream 0 read later: its window comes back, the connection's credit was already given.
        c.setReadingParked(stream: 0, false)
        XCTAssertEqual(c.withReadableBytes(stream: 0) { b, _ in (b.count, b.count) }, 60_000)
        XCTAssertEqual(c.consumedTotal, 60_000)
        let read = h.exchange()
        XCTAssertTrue(read.contains { $0 == .maxStreamData(MaxStreamDataFrame(streamID: 0, maximum: 120_000)) },
                      "\(read.allFrames)")
    }
}
