// The Initial and Handshake spaces' storage (PacketSpaces.swift): on the
// handshake heap while the handshake runs, given back once both are
// discarded (RFC 9001 §4.9.1, §4.9.2), read afterwards as discarded states.

import CTLS
import XCTest
import Core
@testable import QUIC

final class PacketSpacesTests: XCTestCase {
    private func heapBlocks() -> Int {
        var s = ctls_handshake_heap_stats()
        ctls_handshake_heap_get_stats(&s)
        return s.live_blocks
    }

    override func setUp() {
        // libcrypto's first use of a cipher creates what lives on (its
        // provider's caches), on whichever heap is current then.
        let warm = ConnectionHarness()
        warm.ack1RTT(warm.completeHandshake())
    }

    func testTheEarlySpacesGoWhenBothAreDiscarded() throws {
        let h = ConnectionHarness()
        let flight = h.sendClientHello()
        let c = try XCTUnwrap(h.endpoint.context.connections.values.first)
        XCTAssertTrue(c.spaces.holdsEarlySpaces)
        XCTAssertNotNil(c.spaces[0].readKeys)
        h.ack1RTT(h.sendClientFinished(acking: flight))
        XCTAssertTrue(c.isHandshakeComplete)
        XCTAssertFalse(c.spaces.holdsEarlySpaces)
        for space in [PacketNumberSpace.initial, .handshake] {
            let state = c.spaces[space.rawValue]
            XCTAssertTrue(state.discarded)
            XCTAssertNil(state.readKeys)
            XCTAssertNil(state.writeKeys)
            XCTAssertFalse(state.canSend)
            XCTAssertNil(state.received.largest)
        }
        // The connection still works: a request and its response.
        h.send1RTT(Frames.stream(0, Array("GET /".utf8), fin: true))
        let request = c.withReadableBytes(stream: 0) { b, fin in (b.count, (b.count, fin)) }
        XCTAssertEqual(request?.0, 5)
        XCTAssertEqual([UInt8]("ok".utf8).withUnsafeBytes { c.write(stream: 0, $0, fin: true) }, 2)
        XCTAssertFalse(h.exchange().isEmpty)
    }

    /// A write to a discarded space whose storage is gone lands in a fresh
    /// discarded pair (nothing reads it as anything but discarded), given
    /// back by the next drop.
    func testAWriteAfterTheStorageIsGoneIsHarmless() throws {
        let h = ConnectionHarness()
        h.ack1RTT(h.completeHandshake())
        let c = try XCTUnwrap(h.connection)
        XCTAssertFalse(c.spaces.holdsEarlySpaces)
        let before = heapBlocks()
        c.spaces[1].probesOwed = 0
        XCTAssertTrue(c.spaces.holdsEarlySpaces)
        XCTAssertTrue(c.spaces[1].discarded)
        XCTAssertTrue(c.spaces[0].discarded)
        XCTAssertEqual(heapBlocks(), before + 1)
        c.spaces.dropDiscardedEarlySpaces()
        XCTAssertFalse(c.spaces.holdsEarlySpaces)
        XCTAssertEqual(heapBlocks(), before)
    }

    /// Spaces dropped before both early ones are discarded (a connection
    /// that never completes its handshake) give their block back with them.
    func testSpacesDroppedEarlyGiveTheirBlockBack() {
        let before = heapBlocks()
        var spaces: PacketSpaces? = PacketSpaces()
        XCTAssertEqual(heapBlocks(), before + 1)
        spaces![0].discard()
        spaces!.dropDiscardedEarlySpaces()
        XCTAssertTrue(spaces!.holdsEarlySpaces, "the Handshake space is still there")
        spaces = nil
        XCTAssertEqual(heapBlocks(), before)
    }
}
