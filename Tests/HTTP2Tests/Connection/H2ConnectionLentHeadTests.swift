// The request head `.request` and `.trailers` events lend (H2Event): the
// connection's own arrays, rebuilt in place for the next head. A caller that
// keeps a head past the next call still reads its own request (copy-on-write
// gives the next head new arrays); one that lets go costs nothing
// (H2AllocationTests).

import XCTest
import Core
@testable import HTTP2

final class H2ConnectionLentHeadTests: XCTestCase {
    /// Takes the raw event (H2Harness.feed copies heads into strings).
    private func nextRaw(_ h: H2Harness, _ bytes: [UInt8]) -> H2Event? {
        bytes.withUnsafeBytes { h.conn.nextEvent(in: $0, now: h.now).event }
    }

    func testAHeadKeptPastTheNextRequestIsNotOverwritten() {
        let h = H2Harness()
        guard case .request(1, let first, false)? = nextRaw(h, h.headers(1, h.post("/first", extra: [("x-a", "1")]), endStream: false)) else {
            return XCTFail("no request on stream 1")
        }
        guard case .request(3, let second, true)? = nextRaw(h, h.headers(3, h.get("/second-and-longer", extra: [("x-b", "22")]))) else {
            return XCTFail("no request on stream 3")
        }
        // Trailers on stream 1 (§8.1) are lent from the same arrays too.
        guard case .trailers(1, let trailers)? = nextRaw(h, h.headers(1, [("x-checksum", "abc")])) else {
            return XCTFail("no trailers on stream 1")
        }
        XCTAssertEqual(Head(first), { var x = getHead("/first", fields: [["x-a", "1"]]); x.method = "POST"; return x }())
        XCTAssertEqual(Head(second), getHead("/second-and-longer", fields: [["x-b", "22"]]))
        XCTAssertEqual(Head(trailers).fields, [["x-checksum", "abc"]])
        XCTAssertEqual(Head(trailers).path, "")
    }

    /// A head over the scratch size the connection keeps is lent once and
    /// then let go; the next (small) one is whole, with nothing of the big one.
    func testALargeHeadDoesNotStayWithTheConnectionNorLeakIntoTheNext() {
        var limits = H2Limits()
        limits.maxHeaderListSize = 64 * 1024
        let h = H2Harness(limits: limits)
        let big = String(repeating: "v", count: H2Connection.scratchKeepCapacity + 100)
        // Over SETTINGS_MAX_FRAME_SIZE: HEADERS and a CONTINUATION (§6.10).
        let block = h.block(h.get("/big", extra: [("x-big", big)]))
        let half = block.count / 2
        let frames = h.headers(1, block: Array(block[..<half]), endHeaders: false)
            + h.continuation(1, block: Array(block[half...]), endHeaders: true)
        guard case .request(1, let large, true)? = nextRaw(h, frames) else {
            return XCTFail("no request on stream 1")
        }
        XCTAssertEqual(Head(large).fields, [["x-big", big]])
        h.respond(1, status: 200, endStream: true)
        guard case .request(3, let small, true)? = nextRaw(h, h.headers(3, h.get("/small"))) else {
            return XCTFail("no request on stream 3")
        }
        XCTAssertEqual(Head(small), getHead("/small"))
        XCTAssertLessThanOrEqual(h.conn.lentHead.storage.capacity, H2Connection.scratchKeepCapacity)
    }
}
