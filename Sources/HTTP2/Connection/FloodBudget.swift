// Abuse budgets (RFC 9113 §10.5: "An endpoint MAY treat activity that is
// suspicious as a connection error of type ENHANCE_YOUR_CALM").
//
// `TokenBucket` meters events that are legal one at a time but an attack in
// bulk — stream resets (CVE-2023-44487), empty frames: a burst, refilled at
// a rate, with time passed in as an `Instant` (no clock here).
// `ControlQueue` counts the frames we queue in answer to the peer (SETTINGS
// and PING acks, RST_STREAM) that the server has not yet written: it
// remembers where the newest one ends in the output stream, and once the
// server's write cursor has passed that point every one of them has gone and
// the count starts again.

import Core

/// A token bucket refilled per whole millisecond.
struct TokenBucket {
    private let burst: Int
    private let perSecond: Int
    /// Tokens times 1000, so refill needs no fractions.
    private var milliTokens: Int
    /// Up to where time has been counted: refill advances it by whole
    /// milliseconds only, so the fraction left over counts next time (else
    /// takes less than a millisecond apart would never refill).
    private var counted: Instant?

    init(burst: Int, perSecond: Int) {
        self.burst = max(0, burst)
        self.perSecond = max(0, perSecond)
        milliTokens = self.burst * 1000
    }

    /// Takes one token at `now`; false when the bucket is empty.
    mutating func take(now: Instant) -> Bool {
        if let counted {
            if now > counted {
                let elapsed = now.milliseconds(since: counted)
                // Clamp the elapsed time so the product cannot overflow.
                milliTokens = min(burst * 1000, milliTokens + min(elapsed, 1 << 32) * perSecond)
                self.counted = counted.adding(milliseconds: elapsed)
            }
        } else {
            counted = now
        }
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
