// Reading a request stream consumes its reassembly buffer in place. A read
// used to work on a copy of the stream's receive side, so the buffer's
// storage had two owners while it was consumed: every read that emptied
// the buffer reallocated its storage (Array's copy-on-write), and the
// received ranges were copied too.

import XCTest
import Core
@testable import QUIC

final class StreamReadAllocationTests: XCTestCase {
    func testReadsReuseTheStreamsBufferStorage() throws {
        let h = ConnectionHarness()
        h.ack1RTT(h.completeHandshake())
        let c = try XCTUnwrap(h.connection)
        let piece = [UInt8](repeating: 0x42, count: 1000)
        var offset: UInt64 = 0
        var addresses = Set<UnsafeRawPointer>()
        for _ in 0..<200 {
            h.send1RTT(Frames.stream(0, offset: offset, piece))
            offset += UInt64(piece.count)
            XCTAssertEqual(c.withReadableBytes(stream: 0) { b, _ in (b.count, b.count) }, piece.count)
            if let address = c.streams[0]?.receive?.buffer.storageAddress { addresses.insert(address) }
            _ = h.takeEvents()
        }
        XCTAssertEqual(addresses.count, 1, "the storage was reallocated by reads")
    }
}

final class StreamReadReentrancyTests: XCTestCase {
    /// What the reader does to the stream while it reads stays done: here
    /// it refuses the request (STOP_SENDING, as the HTTP/3 layer does for a
    /// malformed one) and still reports the bytes it looked at as consumed.
    /// The side stays abandoned, nothing is consumed twice, and the stream
    /// sends its STOP_SENDING.
    func testStopSendingFromInsideARead() throws {
        let h = ConnectionHarness()
        h.ack1RTT(h.completeHandshake())
        let c = try XCTUnwrap(h.connection)
        h.send1RTT(Frames.stream(0, [UInt8](repeating: 7, count: 500)))
        _ = h.takeEvents()
        let n = c.withReadableBytes(stream: 0) { b, _ in
            c.stopSending(0, errorCode: 0x10e)
            return (b.count, b.count)
        }
        XCTAssertEqual(n, 500)
        XCTAssertEqual(c.streams[0]?.receive?.abandoned, true)
        XCTAssertNil(c.withReadableBytes(stream: 0) { b, _ in (b.count, b.count) }, "an abandoned side reads nothing")
        let sent = h.exchange()
        XCTAssertTrue(sent.contains { if case .stopSending(let f) = $0 { f.streamID == 0 && f.errorCode == 0x10e } else { false } })
        // Data arriving later is discarded; the connection carries on.
        h.send1RTT(Frames.stream(0, offset: 500, [UInt8](repeating: 8, count: 100), fin: true))
        XCTAssertFalse(h.takeEvents().contains { if case .closed = $0 { true } else { false } })
    }
}
