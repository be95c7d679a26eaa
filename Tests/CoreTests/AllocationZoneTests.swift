// The zone hint (Core's AllocationZone over CSys's per-thread value): what
// the worker's malloc reads to put a connection's blocks in a zone of their
// own (Sources/CAllocator). Here, without that malloc, only the hint itself.

import CSys
import Dispatch
import XCTest
@testable import Core

final class AllocationZoneTests: XCTestCase {
    func testHintsNestAndRestoreTheOuterOne() {
        XCTAssertEqual(csys_allocation_zone(), CSYS_ZONE_NONE)
        let outer = AllocationZone.connection.enter()
        XCTAssertEqual(csys_allocation_zone(), CSYS_ZONE_CONNECTION)
        let inner = AllocationZone.handshake.enter()
        XCTAssertEqual(csys_allocation_zone(), CSYS_ZONE_HANDSHAKE)
        // A hint not taken leaves the one in force.
        let skipped = AllocationZone.connection.enter(if: false)
        XCTAssertEqual(csys_allocation_zone(), CSYS_ZONE_HANDSHAKE)
        AllocationZone.restore(skipped)
        XCTAssertEqual(csys_allocation_zone(), CSYS_ZONE_HANDSHAKE)
        AllocationZone.restore(inner)
        XCTAssertEqual(csys_allocation_zone(), CSYS_ZONE_CONNECTION)
        AllocationZone.restore(outer)
        XCTAssertEqual(csys_allocation_zone(), CSYS_ZONE_NONE)
    }

    /// Per thread: one thread's hint is not another's.
    func testTheHintIsTheThreadsOwn() {
        let saved = AllocationZone.connection.enter()
        defer { AllocationZone.restore(saved) }
        let seen = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        defer { seen.deallocate() }
        seen.pointee = 99
        let address = UInt(bitPattern: seen)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            UnsafeMutablePointer<Int32>(bitPattern: address)!.pointee = csys_allocation_zone()
            done.signal()
        }
        done.wait()
        XCTAssertEqual(seen.pointee, CSYS_ZONE_NONE)
        XCTAssertEqual(csys_allocation_zone(), CSYS_ZONE_CONNECTION)
    }
}
