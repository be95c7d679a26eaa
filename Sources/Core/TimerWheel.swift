/// Deadlines for up to `capacity` owners (connection slots), one deadline
/// each, in a hashed timing wheel.
///
/// Theory of operation: time is cut into ticks of `tickMilliseconds`; a
/// deadline lands in slot `tick % slotCount` and carries its absolute tick,
/// so a deadline further away than one revolution simply stays in its slot
/// until the wheel comes round to the right revolution. Each owner is linked
/// into at most one slot through intrusive `next`/`prev` arrays indexed by
/// owner id, so arming, re-arming and cancelling are O(1) and allocate
/// nothing. Expiry walks the slots between the last processed tick and now.
/// Deadlines fire at most one tick late, never early.
public struct TimerWheel: ~Copyable {
    public let capacity: Int
    public let tickMilliseconds: Int
    private let slotCount: Int
    private let heads: UnsafeMutablePointer<Int32>   // first owner in each slot, -1 if empty
    private let next: UnsafeMutablePointer<Int32>
    private let prev: UnsafeMutablePointer<Int32>
    private let tickOf: UnsafeMutablePointer<Int64>  // absolute tick, -1 when not armed
    private var origin: Instant
    private var processedTick: Int64 = 0
    public private(set) var armedCount = 0

    public init(capacity: Int, tickMilliseconds: Int = 50, slotCount: Int = 1024, now: Instant) {
        precondition(capacity > 0 && slotCount > 0 && tickMilliseconds > 0)
        self.capacity = capacity
        self.tickMilliseconds = tickMilliseconds
        self.slotCount = slotCount
        heads = .allocate(capacity: slotCount)
        heads.initialize(repeating: -1, count: slotCount)
        next = .allocate(capacity: capacity)
        next.initialize(repeating: -1, count: capacity)
        prev = .allocate(capacity: capacity)
        prev.initialize(repeating: -1, count: capacity)
        tickOf = .allocate(capacity: capacity)
        tickOf.initialize(repeating: -1, count: capacity)
        origin = now
    }

    deinit {
        heads.deallocate(); next.deallocate(); prev.deallocate(); tickOf.deallocate()
    }

    private func tick(for instant: Instant) -> Int64 {
        let ms = (instant.nanoseconds - origin.nanoseconds) / 1_000_000
        return ms <= 0 ? 0 : ms / Int64(tickMilliseconds)
    }

    public func isArmed(_ owner: Int) -> Bool { tickOf[owner] >= 0 }

    /// Arms (or re-arms) `owner` to expire at `deadline`.
    public mutating func arm(_ owner: Int, at deadline: Instant) {
        cancel(owner)
        // Round up so a deadline never fires early.
        let ms = (deadline.nanoseconds - origin.nanoseconds + 999_999) / 1_000_000
        var t = ms <= 0 ? 0 : (ms + Int64(tickMilliseconds) - 1) / Int64(tickMilliseconds)
        if t <= processedTick { t = processedTick + 1 }
        tickOf[owner] = t
        let slot = Int(t % Int64(slotCount))
        let head = heads[slot]
        next[owner] = head
        prev[owner] = -1
        if head >= 0 { prev[Int(head)] = Int32(owner) }
        heads[slot] = Int32(owner)
        armedCount += 1
    }

    public mutating func cancel(_ owner: Int) {
        let t = tickOf[owner]
        guard t >= 0 else { return }
        let slot = Int(t % Int64(slotCount))
        let n = next[owner], p = prev[owner]
        if p >= 0 { next[Int(p)] = n } else { heads[slot] = n }
        if n >= 0 { prev[Int(n)] = p }
        next[owner] = -1
        prev[owner] = -1
        tickOf[owner] = -1
        armedCount -= 1
    }

    /// Milliseconds until the next tick that may hold an expiry, for the
    /// poller's timeout; nil when nothing is armed.
    public func millisecondsUntilNextTick(now: Instant) -> Int? {
        guard armedCount > 0 else { return nil }
        let nextTickStart = origin.adding(milliseconds: Int(processedTick + 1) * tickMilliseconds)
        let ms = nextTickStart.milliseconds(since: now)
        return ms < 0 ? 0 : ms + 1
    }

    /// Calls `fire` for every owner whose deadline has passed, after
    /// disarming it (so `fire` may re-arm it).
    public mutating func expire(now: Instant, _ fire: (Int) -> Void) {
        let current = tick(for: now)
        guard current > processedTick else { return }
        var t = processedTick + 1
        // Past one revolution every slot has been visited; revisiting is harmless.
        let last = min(current, processedTick + Int64(slotCount))
        while t <= last {
            let slot = Int(t % Int64(slotCount))
            var owner = heads[slot]
            while owner >= 0 {
                let o = Int(owner)
                owner = next[o]
                if tickOf[o] <= current {
                    cancel(o)
                    fire(o)
                }
            }
            t += 1
        }
        processedTick = current
    }
}
