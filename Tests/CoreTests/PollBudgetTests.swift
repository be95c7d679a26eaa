import XCTest
@testable import Core

/// The events an ASGI loop iteration takes (Sources/Core/PollBudget.swift):
/// about a millisecond's worth of CPU time, learned from the thread's CPU
/// time between readings.
final class PollBudgetTests: XCTestCase {
    /// A loop whose events each cost `cost` ns of CPU time and of which
    /// `ready` are always waiting, run for `iterations`; `cpu` carries on.
    private func run(_ b: inout PollBudget, ready: Int, cost: Int64, cpu: inout Int64, iterations: Int = 60) {
        for _ in 0..<iterations {
            if b.wantsReading { b.reading(cpu) }
            let n = min(ready, b.maxEvents)
            b.took(n)
            cpu += Int64(n) * cost
        }
    }

    func testTheWholeBatchUntilThereIsAnythingToLearnFrom() {
        var b = PollBudget(ceiling: 256)
        XCTAssertTrue(b.wantsReading)
        XCTAssertEqual(b.maxEvents, 256)
        b.reading(1_000)
        b.took(64)
        XCTAssertEqual(b.maxEvents, 256)
        XCTAssertEqual(b.nanosecondsPerEvent, 0)
    }

    func testExpensiveRequestsAreTakenAMillisecondsWorthAtATime() {
        // FastAPI: about 75 µs a request; 64 connections always ready.
        var b = PollBudget(ceiling: 256)
        var cpu: Int64 = 7_000_000
        run(&b, ready: 64, cost: 75_000, cpu: &cpu)
        XCTAssertEqual(b.nanosecondsPerEvent, 75_000)
        XCTAssertEqual(b.maxEvents, 13)
    }

    func testCheapRequestsKeepMoreThanSixtyFourConnectionsCanHaveReady() {
        // hello: about 10 µs a request.
        var b = PollBudget(ceiling: 256)
        var cpu: Int64 = 0
        run(&b, ready: 64, cost: 10_000, cpu: &cpu)
        XCTAssertEqual(b.maxEvents, 100)
    }

    func testNeverFewerThanTheFloorNorMoreThanTheCeiling() {
        // A request of 5 ms: an iteration of eight of them is 40 ms, and
        // still learned (CPU time has no idle gaps to tell from work).
        var slow = PollBudget(ceiling: 256)
        var cpu: Int64 = 0
        run(&slow, ready: 64, cost: 5_000_000, cpu: &cpu)
        XCTAssertEqual(slow.maxEvents, PollBudget.floor)

        var fast = PollBudget(ceiling: 32)
        run(&fast, ready: 300, cost: 1_000, cpu: &cpu)
        XCTAssertEqual(fast.maxEvents, 32)
    }

    func testTheEstimateFollowsTheApplicationWithinAFewDozenIterations() {
        var b = PollBudget(ceiling: 256)
        var cpu: Int64 = 0
        run(&b, ready: 64, cost: 10_000, cpu: &cpu)
        XCTAssertEqual(b.maxEvents, 100)
        // The application turns slow (a heavier route under load)...
        run(&b, ready: 64, cost: 100_000, cpu: &cpu, iterations: 40)
        XCTAssertEqual(b.maxEvents, 10, accuracy: 1)
        // ...and fast again.
        run(&b, ready: 64, cost: 10_000, cpu: &cpu, iterations: 80)
        XCTAssertEqual(b.maxEvents, 100, accuracy: 2)
    }

    func testFewEventsAPollAreReadTogether() {
        // One event a poll (a lightly loaded server): the CPU time is read
        // once every `minimumSample` events, and covers all of them.
        var b = PollBudget(ceiling: 256)
        var cpu: Int64 = 0
        var readings = 0
        for _ in 0..<48 {
            if b.wantsReading {
                readings += 1
                b.reading(cpu)
            }
            b.took(1)
            cpu += 200_000
        }
        XCTAssertEqual(readings, 3)
        XCTAssertEqual(b.nanosecondsPerEvent, 200_000)
        XCTAssertEqual(b.maxEvents, 8)
    }

    func testTimeSpentWaitingIsNotWork() {
        // The thread's CPU time does not move while the loop sleeps, so a
        // pause between bursts changes nothing.
        var b = PollBudget(ceiling: 256)
        var cpu: Int64 = 0
        run(&b, ready: 64, cost: 10_000, cpu: &cpu)
        let learned = b.nanosecondsPerEvent
        b.reading(cpu)   // after a second of sleep: the same CPU time
        XCTAssertEqual(b.nanosecondsPerEvent, learned)
        XCTAssertEqual(b.maxEvents, 100)
    }

    func testACPUClockThatDidNotMoveIsNotASample() {
        var b = PollBudget(ceiling: 256)
        b.reading(5_000)
        b.took(64)
        b.reading(5_000)
        XCTAssertEqual(b.nanosecondsPerEvent, 0)
        XCTAssertEqual(b.maxEvents, 256)
        XCTAssertFalse(b.wantsReading)
    }
}
