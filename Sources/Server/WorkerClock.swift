import Core

/// The worker's reading of the monotonic clock, and the rule for when that
/// reading is still the present moment (see Worker's class comment).
///
/// Separate from Worker because the rule needs three pieces of state that
/// nothing else touches: the reading, whether it belongs to this loop
/// wake-up, and whether application code may run between two uses (inline
/// WSGI calls, ASGI tasks), in which case every use reads the clock. Held
/// inline in the worker, so `Worker.now` costs what it did.
struct WorkerClock {
    private var reading: Instant
    /// `reading` is the present moment for this loop wake-up.
    private var readingIsCurrent: Bool
    /// Application code may run between uses of `now`: a reading taken then
    /// is not kept.
    private var applicationMayRun: Bool

    /// `reading` is the worker's first reading. `applicationRunsFirst`: the
    /// application may run before the loop first wakes (ASGI: the asyncio
    /// loop runs the thread and calls in).
    init(reading: Instant, applicationRunsFirst: Bool) {
        self.reading = reading
        readingIsCurrent = !applicationRunsFirst
        applicationMayRun = applicationRunsFirst
    }

    /// The present moment: the wake-up's reading, or a new one if that is
    /// stale (and kept only while no application code may run).
    var now: Instant {
        mutating get {
            if !readingIsCurrent {
                reading = Instant.now()
                readingIsCurrent = !applicationMayRun
            }
            return reading
        }
    }

    /// The loop woke: one reading serves everything until it sleeps again
    /// or hands control to application code.
    mutating func takeReading() {
        reading = Instant.now()
        readingIsCurrent = true
        applicationMayRun = false
    }

    /// The next use of `now` reads the clock (a blocking wait, or the loop
    /// called in and may not need the time at all); with `applicationMayRun`
    /// every use does.
    mutating func forgetReading(applicationMayRun: Bool) {
        readingIsCurrent = false
        self.applicationMayRun = applicationMayRun
    }

    /// Time passed outside the loop (a blocking wait for one descriptor):
    /// the next use of `now` reads the clock.
    mutating func timePassed() {
        readingIsCurrent = false
    }
}
