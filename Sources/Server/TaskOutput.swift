import Core

/// Output the ASGI tasks of one event-loop iteration produced, written
/// once after those tasks (see EventLoopDriver.requestDeferred): HTTP/2
/// sessions whose streams queued frames, instead of one write per
/// `send()`, and small complete HTTP/1.1 responses (see CoalescedOutput).
///
/// Separate from Worker because it is ASGI-only and lives for one loop
/// iteration. The worker asks the loop for the deferred call; writing
/// calls back into the worker (timers, interest), never into this.
struct TaskOutput: ~Copyable {
    private var sessions: [H2Session] = []
    private var spare: [H2Session] = []
    private var held = CoalescedOutput()

    /// What the worker does after `hold`.
    enum AfterHold {
        /// The held responses are old enough: write them now.
        case flushNow
        /// The first held response of the iteration: ask for the deferred call.
        case first
        /// Waiting with the others for the deferred call.
        case waiting
    }

    mutating func hold(_ c: H1Connection, _ staged: UnsafeRawBufferPointer, _ extra: UnsafeRawBufferPointer,
                       now: Instant) -> AfterHold {
        let first = held.isEmpty
        if held.hold(c, staged, extra, now: now) { return .flushNow }
        return first ? .first : .waiting
    }

    mutating func flushHeld() {
        held.flush()
    }

    mutating func flushAfterTasks(_ session: H2Session) {
        sessions.append(session)
    }

    /// The sessions to flush, taken off the list (flushing one may add it
    /// again for the next iteration); hand the list back with `giveBack`.
    /// Two lists trade places, so neither is copied or allocated again
    /// (a copy kept while the other was emptied cost a malloc per
    /// iteration; tests/e2e/test_allocations.py).
    mutating func takeSessions() -> [H2Session] {
        var taken: [H2Session] = []
        swap(&taken, &spare)     // the empty list, with its capacity
        swap(&taken, &sessions)  // the sessions; the empty list collects the next ones
        return taken
    }

    /// The list `takeSessions` returned, flushed: kept for the next swap.
    mutating func giveBack(_ flushed: consuming [H2Session]) {
        var list = flushed
        list.removeAll(keepingCapacity: true)
        spare = list
    }
}
