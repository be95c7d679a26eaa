import XCTest
@testable import Core

final class TimerWheelTests: XCTestCase {
    let t0 = Instant(nanoseconds: 1_000_000_000)

    func fired(_ wheel: inout TimerWheel, at ms: Int) -> [Int] {
        var out: [Int] = []
        wheel.expire(now: t0.adding(milliseconds: ms)) { out.append($0) }
        return out.sorted()
    }

    func testDeadlineNeverFiresEarlyAndFiresWithinOneTick() {
        var wheel = TimerWheel(capacity: 8, tickMilliseconds: 10, slotCount: 16, now: t0)
        wheel.arm(3, at: t0.adding(milliseconds: 95))
        XCTAssertEqual(fired(&wheel, at: 94), [])
        XCTAssertEqual(fired(&wheel, at: 110), [3])
        XCTAssertFalse(wheel.isArmed(3))
        XCTAssertEqual(wheel.armedCount, 0)
    }

    func testCancelledDeadlineDoesNotFire() {
        var wheel = TimerWheel(capacity: 8, tickMilliseconds: 10, slotCount: 16, now: t0)
        wheel.arm(1, at: t0.adding(milliseconds: 20))
        wheel.arm(2, at: t0.adding(milliseconds: 20))
        wheel.cancel(1)
        XCTAssertEqual(fired(&wheel, at: 40), [2])
    }

    func testRearmingMovesTheDeadline() {
        var wheel = TimerWheel(capacity: 8, tickMilliseconds: 10, slotCount: 16, now: t0)
        wheel.arm(1, at: t0.adding(milliseconds: 20))
        wheel.arm(1, at: t0.adding(milliseconds: 500))
        XCTAssertEqual(fired(&wheel, at: 100), [])
        XCTAssertEqual(fired(&wheel, at: 520), [1])
    }

    func testDeadlinesBeyondOneRevolutionWaitForTheirRound() {
        // 16 slots of 10 ms: one revolution is 160 ms.
        var wheel = TimerWheel(capacity: 8, tickMilliseconds: 10, slotCount: 16, now: t0)
        wheel.arm(5, at: t0.adding(milliseconds: 1000))
        for ms in stride(from: 10, through: 990, by: 10) {
            XCTAssertEqual(fired(&wheel, at: ms), [], "at \(ms) ms")
        }
        XCTAssertEqual(fired(&wheel, at: 1010), [5])
    }

    func testLongPauseFiresEverythingDue() {
        var wheel = TimerWheel(capacity: 8, tickMilliseconds: 10, slotCount: 16, now: t0)
        for i in 0..<8 { wheel.arm(i, at: t0.adding(milliseconds: 10 + i * 37)) }
        XCTAssertEqual(fired(&wheel, at: 10_000), Array(0..<8))
    }

    func testNextTickHintIsNilWhenNothingArmed() {
        var wheel = TimerWheel(capacity: 2, tickMilliseconds: 10, slotCount: 16, now: t0)
        XCTAssertNil(wheel.millisecondsUntilNextTick(now: t0))
        wheel.arm(0, at: t0.adding(milliseconds: 100))
        XCTAssertNotNil(wheel.millisecondsUntilNextTick(now: t0))
    }
}
