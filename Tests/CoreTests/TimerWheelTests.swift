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

    func testFarDeadlinesAfterManyRebasesStillFireOnTime() {
        var wheel = TimerWheel(capacity: 4, tickMilliseconds: 10, slotCount: 16, now: t0, rebaseAfter: 32)
        var now = 0
        for _ in 0..<100 {
            wheel.arm(1, at: t0.adding(milliseconds: now + 250))
            XCTAssertEqual(fired(&wheel, at: now + 249), [])
            XCTAssertEqual(fired(&wheel, at: now + 250), [1])
            now += 250
        }
    }

    func testNextTickHintIsNilWhenNothingArmed() {
        var wheel = TimerWheel(capacity: 2, tickMilliseconds: 10, slotCount: 16, now: t0)
        XCTAssertNil(wheel.millisecondsUntilNextTick(now: t0))
        wheel.arm(0, at: t0.adding(milliseconds: 100))
        XCTAssertNotNil(wheel.millisecondsUntilNextTick(now: t0))
    }

    func testLazyRearmLaterStillFiresAtTheLaterDeadlineOnly() {
        var wheel = TimerWheel(capacity: 8, tickMilliseconds: 10, slotCount: 16, now: t0)
        wheel.arm(1, at: t0.adding(milliseconds: 50))
        wheel.arm(1, at: t0.adding(milliseconds: 300))  // stays linked at 50 ms, moves when visited
        XCTAssertEqual(fired(&wheel, at: 60), [])
        XCTAssertTrue(wheel.isArmed(1))
        XCTAssertEqual(fired(&wheel, at: 290), [])
        XCTAssertEqual(fired(&wheel, at: 300), [1])
        XCTAssertEqual(wheel.armedCount, 0)
    }

    func testRearmEarlierThanTheLinkedSlotsVisitMovesAtOnce() {
        var wheel = TimerWheel(capacity: 8, tickMilliseconds: 10, slotCount: 16, now: t0)
        wheel.arm(2, at: t0.adding(milliseconds: 150))
        wheel.arm(2, at: t0.adding(milliseconds: 30))
        XCTAssertEqual(fired(&wheel, at: 29), [])
        XCTAssertEqual(fired(&wheel, at: 40), [2])
        XCTAssertEqual(fired(&wheel, at: 200), [])
    }

    func testCancelThenRearmLikeAKeepAliveConnection() {
        // Each request: armed for the request at its first byte, cancelled
        // when served, armed for keep-alive when idle again.
        var wheel = TimerWheel(capacity: 8, tickMilliseconds: 10, slotCount: 16, now: t0)
        var now = 0
        wheel.arm(4, at: t0.adding(milliseconds: now + 100))
        for _ in 0..<50 {
            now += 7
            XCTAssertEqual(fired(&wheel, at: now), [])
            wheel.arm(4, at: t0.adding(milliseconds: now + 1000))
            wheel.cancel(4)
            XCTAssertEqual(wheel.armedCount, 0)
            wheel.arm(4, at: t0.adding(milliseconds: now + 100))
            XCTAssertEqual(wheel.armedCount, 1)
        }
        XCTAssertEqual(fired(&wheel, at: now + 99), [])
        XCTAssertEqual(fired(&wheel, at: now + 110), [4])
    }

    func testCancelledOwnerLeftLinkedNeverFires() {
        var wheel = TimerWheel(capacity: 8, tickMilliseconds: 10, slotCount: 16, now: t0)
        wheel.arm(6, at: t0.adding(milliseconds: 20))
        wheel.cancel(6)
        XCTAssertEqual(wheel.armedCount, 0)
        XCTAssertNil(wheel.millisecondsUntilNextTick(now: t0))
        XCTAssertEqual(fired(&wheel, at: 1000), [])
        wheel.arm(6, at: t0.adding(milliseconds: 1200))
        XCTAssertEqual(fired(&wheel, at: 1210), [6])
    }

    /// Random arms, cancels and clock steps against a model of the
    /// contract: an owner fires in the first expiry whose tick reaches its
    /// deadline's tick (rounded up), never before, exactly once. The second
    /// half moves the wheel's origin every 64 ticks (normally every 2^30),
    /// which must not be seen from outside.
    func testRandomOperationsMatchTheModel() {
        var rng = SplitMix(seed: 0x5EED)
        for round in 0..<80 {
            let tickMs = 10, slots = 8, owners = 12
            var wheel = TimerWheel(
                capacity: owners, tickMilliseconds: tickMs, slotCount: slots, now: t0,
                rebaseAfter: round < 40 ? 1 << 30 : 64)
            var due = [Int64?](repeating: nil, count: owners)
            var processed: Int64 = 0
            var now = 0
            for step in 0..<400 {
                let owner = Int(rng.next() % UInt64(owners))
                switch rng.next() % 4 {
                case 0, 1:
                    let delay = Int(rng.next() % 400)
                    wheel.arm(owner, at: t0.adding(milliseconds: now + delay))
                    let ticks = (Int64(now + delay) + Int64(tickMs) - 1) / Int64(tickMs)
                    due[owner] = max(ticks, processed + 1)
                case 2:
                    wheel.cancel(owner)
                    due[owner] = nil
                default:
                    now += Int(rng.next() % 60)
                    let current = Int64(now / tickMs)
                    var expected: [Int] = []
                    if current > processed {
                        for o in 0..<owners where due[o].map({ $0 <= current }) ?? false {
                            expected.append(o)
                            due[o] = nil
                        }
                        processed = current
                    }
                    XCTAssertEqual(fired(&wheel, at: now), expected, "round \(round) step \(step)")
                }
                XCTAssertEqual(wheel.armedCount, due.filter { $0 != nil }.count)
            }
        }
    }
}

/// A small deterministic generator for the model test.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
