/// Deadlines for up to `capacity` owners (connection slots), one deadline
/// each, in a hashed timing wheel.
///
/// Theory of operation: time is cut into ticks of `tickMilliseconds`; a
/// deadline is due at an absolute tick and its owner is linked into one of
/// `slotCount` slots (tick modulo `slotCount`), so a deadline further away
/// than one revolution simply stays linked until the wheel comes round to
/// the right revolution. Each owner is linked into at most one slot through
/// intrusive `next`/`prev` arrays indexed by owner id, so nothing allocates.
/// Expiry walks the slots between the last processed tick and now.
/// Deadlines fire at most one tick late, never early.
///
/// Re-arming is lazy, because a connection re-arms twice per request
/// (request timeout at its first byte, keep-alive when it goes idle) and
/// cancels once, and moving it between slots each time was the wheel's
/// whole cost: an owner stays linked where it is as long as the wheel will
/// visit that slot no later than the new due tick, and the visit then moves
/// it on (or unlinks it, if it was cancelled meanwhile). Only a deadline
/// earlier than that visit moves the owner at once. A busy keep-alive
/// connection changes slot about once per keep-alive period, not three
/// times per request.
///
/// Ticks are stored in 32 bits (16 bytes per owner in all). Every 2^30
/// ticks (about 620 days of 50 ms) the wheel moves its origin forward and
/// the stored ticks back by a multiple of `slotCount`, so slots keep their
/// meaning; a deadline more than 2^30 ticks away is brought in to that
/// horizon (the options cap every timeout at a day).
public struct TimerWheel: ~Copyable {
    public let capacity: Int
    public let tickMilliseconds: Int
    private let slotCount: Int
    private let slotMask: Int32
    private let tickNanoseconds: Int64
    private let horizon: Int64
    private let heads: UnsafeMutablePointer<Int32>   // first owner in each slot, -1 if empty
    private let next: UnsafeMutablePointer<Int32>
    private let prev: UnsafeMutablePointer<Int32>
    /// The tick the owner's deadline falls in, -1 when not armed.
    private let dueTick: UnsafeMutablePointer<Int32>
    /// -1 when the owner is in no slot; else a tick of its slot (modulo
    /// `slotCount`) no earlier than the wheel's next visit of that slot.
    private let linkedTick: UnsafeMutablePointer<Int32>
    private var origin: Instant
    private var processedTick: Int64 = 0
    /// Owners with a deadline (a linked owner whose deadline was cancelled
    /// is not counted: nothing needs to wake up for it).
    public private(set) var armedCount = 0

    /// `slotCount` is a power of two. `rebaseAfter` is for tests: the tick
    /// count at which the stored ticks are moved back.
    public init(
        capacity: Int, tickMilliseconds: Int = 50, slotCount: Int = 1024, now: Instant,
        rebaseAfter: Int64 = 1 << 30
    ) {
        precondition(capacity > 0 && capacity < Int(Int32.max) && tickMilliseconds > 0)
        precondition(slotCount > 0 && slotCount & (slotCount - 1) == 0 && Int64(slotCount) < rebaseAfter)
        precondition(rebaseAfter <= 1 << 30)
        self.capacity = capacity
        self.tickMilliseconds = tickMilliseconds
        self.slotCount = slotCount
        slotMask = Int32(slotCount - 1)
        tickNanoseconds = Int64(tickMilliseconds) * 1_000_000
        horizon = rebaseAfter
        heads = .allocate(capacity: slotCount)
        heads.initialize(repeating: -1, count: slotCount)
        next = .allocate(capacity: capacity)
        next.initialize(repeating: -1, count: capacity)
        prev = .allocate(capacity: capacity)
        prev.initialize(repeating: -1, count: capacity)
        dueTick = .allocate(capacity: capacity)
        dueTick.initialize(repeating: -1, count: capacity)
        linkedTick = .allocate(capacity: capacity)
        linkedTick.initialize(repeating: -1, count: capacity)
        origin = now
    }

    deinit {
        heads.deallocate(); next.deallocate(); prev.deallocate()
        dueTick.deallocate(); linkedTick.deallocate()
    }

    private func tick(for instant: Instant) -> Int64 {
        let ns = instant.nanoseconds &- origin.nanoseconds
        return ns <= 0 ? 0 : ns / tickNanoseconds
    }

    public func isArmed(_ owner: Int) -> Bool { dueTick[owner] >= 0 }

    /// Arms (or re-arms) `owner` to expire at `deadline`.
    public mutating func arm(_ owner: Int, at deadline: Instant) {
        // Rounded up, so a deadline never fires early.
        let ns = deadline.nanoseconds &- origin.nanoseconds
        var t = ns <= 0 ? 0 : (ns &+ tickNanoseconds &- 1) / tickNanoseconds
        if t <= processedTick { t = processedTick &+ 1 }
        if t > processedTick &+ horizon { t = processedTick &+ horizon }
        let due = Int32(truncatingIfNeeded: t)
        if dueTick[owner] < 0 { armedCount &+= 1 }
        dueTick[owner] = due
        let linked = linkedTick[owner]
        if linked >= 0 {
            if linked <= due { return }  // its slot is visited first: the visit moves it
            unlink(owner, from: linked)
        }
        link(owner, at: due)
    }

    public mutating func cancel(_ owner: Int) {
        guard dueTick[owner] >= 0 else { return }
        dueTick[owner] = -1
        armedCount &-= 1
    }

    private mutating func link(_ owner: Int, at tick: Int32) {
        let slot = Int(tick & slotMask)
        let head = heads[slot]
        next[owner] = head
        prev[owner] = -1
        if head >= 0 { prev[Int(head)] = Int32(truncatingIfNeeded: owner) }
        heads[slot] = Int32(truncatingIfNeeded: owner)
        linkedTick[owner] = tick
    }

    private mutating func unlink(_ owner: Int, from tick: Int32) {
        let n = next[owner], p = prev[owner]
        if p >= 0 { next[Int(p)] = n } else { heads[Int(tick & slotMask)] = n }
        if n >= 0 { prev[Int(n)] = p }
        next[owner] = -1
        prev[owner] = -1
        linkedTick[owner] = -1
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
    /// disarming it (so `fire` may re-arm it). Owners met on the way whose
    /// deadline was cancelled are unlinked; those due later are linked at
    /// their due tick (or stay, if that is a later round of the same slot).
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
                let due = dueTick[o]
                if due < 0 {
                    unlink(o, from: linkedTick[o])
                } else if Int64(due) <= current {
                    unlink(o, from: linkedTick[o])
                    dueTick[o] = -1
                    armedCount -= 1
                    fire(o)
                } else if Int(due & slotMask) == slot {
                    linkedTick[o] = due  // a later round of this slot
                } else {
                    // Beyond every tick walked in this call, so if the walk
                    // reaches the new slot it passes the owner by.
                    unlink(o, from: linkedTick[o])
                    link(o, at: due)
                }
            }
            t += 1
        }
        processedTick = current
        if processedTick >= horizon { rebase() }
    }

    /// Moves the origin forward by whole revolutions and every stored tick
    /// back by as many, keeping them far from the 32-bit limit. Every stored
    /// tick is above `processedTick`, so none goes negative.
    private mutating func rebase() {
        let shift = processedTick & ~Int64(slotCount - 1)
        processedTick -= shift
        origin = Instant(nanoseconds: origin.nanoseconds + shift * tickNanoseconds)
        let by = Int32(truncatingIfNeeded: shift)
        for o in 0..<capacity {
            if dueTick[o] >= 0 { dueTick[o] -= by }
            if linkedTick[o] >= 0 { linkedTick[o] -= by }
        }
    }
}
