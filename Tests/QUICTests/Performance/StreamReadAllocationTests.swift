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
