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
}
