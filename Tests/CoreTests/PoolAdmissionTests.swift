import XCTest
@testable import Core

/// The WSGI pool's admission (--wsgi-threads): at most N in flight, then a
/// wait list served in arrival order, and accepting held while both are full.
final class PoolAdmissionTests: XCTestCase {
    func testAtMostNRequestsRunAtOnce() {
        var admission = PoolAdmission(threads: 3, waitListLimit: 3, maxWaiters: 16)
        var taken: Set<Int> = []
        for _ in 0..<3 { taken.insert(admission.takeThread()!) }
        XCTAssertEqual(taken, [0, 1, 2])
        XCTAssertEqual(admission.inFlight, 3)
        XCTAssertNil(admission.takeThread())
    }

    func testAReleasedThreadIsTakenAgain() {
        var admission = PoolAdmission(threads: 2, waitListLimit: 2, maxWaiters: 16)
        let a = admission.takeThread()!
        _ = admission.takeThread()!
        admission.release(a)
        XCTAssertEqual(admission.inFlight, 1)
        XCTAssertEqual(admission.takeThread(), a)
    }

    func testWaitersAreServedInArrivalOrderBeforeNewRequests() {
        var admission = PoolAdmission(threads: 1, waitListLimit: 4, maxWaiters: 16)
        let only = admission.takeThread()!
        XCTAssertTrue(admission.wait(10))
        XCTAssertTrue(admission.wait(11))
        // No thread is free: nobody is offered one.
        XCTAssertNil(admission.nextWaiter())
        admission.release(only)
        // A new request may not jump the list...
        XCTAssertNil(admission.takeThread())
        // ...the oldest waiter gets the thread.
        XCTAssertEqual(admission.nextWaiter(), 10)
        XCTAssertEqual(admission.takeThreadForWaiter(), only)
        XCTAssertNil(admission.nextWaiter())
        admission.release(only)
        XCTAssertEqual(admission.nextWaiter(), 11)
        XCTAssertEqual(admission.takeThreadForWaiter(), only)
        XCTAssertEqual(admission.waiting, 0)
        admission.release(only)
        XCTAssertEqual(admission.takeThread(), only)
    }

    func testAcceptingIsHeldOnlyWithEveryThreadBusyAndTheWaitListFull() {
        var admission = PoolAdmission(threads: 2, waitListLimit: 2, maxWaiters: 16)
        XCTAssertFalse(admission.holdsAccepting)
        let a = admission.takeThread()!
        _ = admission.takeThread()!
        XCTAssertFalse(admission.holdsAccepting)
        _ = admission.wait(1)
        XCTAssertFalse(admission.holdsAccepting)
        _ = admission.wait(2)
        XCTAssertTrue(admission.holdsAccepting)
        // Requests of connections already open may still wait (bounded by
        // the connections), and accepting stays held.
        _ = admission.wait(3)
        XCTAssertTrue(admission.holdsAccepting)
        admission.release(a)
        XCTAssertFalse(admission.holdsAccepting)  // a thread is free (for the oldest waiter)
        XCTAssertEqual(admission.nextWaiter(), 1)
        _ = admission.takeThreadForWaiter()
        XCTAssertTrue(admission.holdsAccepting)  // busy again, two still waiting
    }

    func testTheWaitListRefusesPastItsHardCapacity() {
        var admission = PoolAdmission(threads: 1, waitListLimit: 1, maxWaiters: 2)
        _ = admission.takeThread()
        XCTAssertTrue(admission.wait(1))
        XCTAssertTrue(admission.wait(2))
        XCTAssertFalse(admission.wait(3))
        XCTAssertEqual(admission.waiting, 2)
    }

    func testAWaitListOfZeroHoldsAcceptingAsSoonAsEveryThreadIsBusy() {
        var admission = PoolAdmission(threads: 1, waitListLimit: 0, maxWaiters: 4)
        XCTAssertFalse(admission.holdsAccepting)
        _ = admission.takeThread()
        XCTAssertTrue(admission.holdsAccepting)
    }
}
