// Abuse budgets (RFC 9113 §10.5: "An endpoint MAY treat activity that is
// suspicious as a connection error of type ENHANCE_YOUR_CALM").
//
// `TokenBucket` meters events that are legal one at a time but an attack in
// bulk — stream resets (CVE-2023-44487), empty frames: a burst, refilled at
// a rate, with time passed in (no clock here). `ControlQueue` counts the
// frames we queue in answer to the peer (SETTINGS and PING acks, RST_STREAM)
// that the server has not yet written: it remembers where the newest one
// ends in the output stream, and once the server's write cursor has passed
// that point every one of them has gone and the count starts again.

/// A token bucket over milliseconds.
struct TokenBucket {
    private let burst: Int
    private let perSecond: Int
    /// Tokens times 1000, so refill needs no fractions.
    private var milliTokens: Int
    private var last: UInt64?

    init(burst: Int, perSecond: Int) {
        self.burst = max(0, burst)
        self.perSecond = max(0, perSecond)
        milliTokens = self.burst * 1000
    }

    /// Takes one token at `now`; false when the bucket is empty.
    mutating func take(now: UInt64) -> Bool {
        if let last, now > last {
            // Clamp the elapsed time so the product cannot overflow.
            let elapsed = Int(min(now - last, 1 << 32))
            milliTokens = min(burst * 1000, milliTokens + elapsed * perSecond)
        }
        if last == nil || now > last! { last = now }
        guard milliTokens >= 1000 else { return false }
        milliTokens -= 1000
        return true
    }
}

/// Control frames queued in `output` and not yet written by the server.
struct ControlQueue {
    private let limit: Int
    private(set) var count = 0
    /// Absolute output offset just past the newest counted frame.
    private var end = 0

    init(limit: Int) { self.limit = limit }

    /// Forgets the frames the server has written (`flushed`: absolute
    /// offset of its write cursor).
    mutating func update(flushed: Int) {
        if flushed >= end { count = 0 }
    }

    /// Counts a frame ending at absolute offset `end`; false when over limit.
    mutating func add(endingAt end: Int, flushed: Int) -> Bool {
        update(flushed: flushed)
        count += 1
        self.end = end
        return count <= limit
    }
}
