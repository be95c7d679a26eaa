/// How many readiness events an ASGI worker takes from its poller in one
/// iteration of the event loop.
///
/// Why: the worker's epoll descriptor is one reader of the asyncio loop, so
/// an iteration reads what is ready and then runs the tasks that reading
/// started. Taking every ready connection at once makes an iteration as long
/// as all their requests together (64 FastAPI requests: about 4.5 ms); the
/// last responses of it, written once its tasks are done (CoalescedOutput),
/// reach their clients after the next reading was taken, so the requests
/// that follow them wait a whole further iteration. Latency then splits in
/// two: FastAPI at 64 connections had p50 3.9 ms but p90 6.5 ms. Taking about
/// a millisecond's worth of events per iteration (the coalescing window)
/// keeps every iteration short and leaves the rest where epoll keeps them:
/// its ready list hands events out in the order they became ready and keeps
/// the others in that order, so connections are served first come, first
/// served.
///
/// The cost of an event is learned from the loop itself: the thread's CPU
/// time between two readings over the events taken between them, as a
/// moving average over about eight readings. CPU time, not the clock, so
/// that time the loop spent waiting for something to do is not counted as
/// work. A reading is a system call (about 0.26 µs here), taken only once at
/// least `minimumSample` events were taken since the last one: under 0.02 µs
/// a request. A small request costs about 10 µs, so for `hello` the budget
/// stays above anything 64 connections can have ready, and nothing changes.
public struct PollBudget: Sendable {
    /// The work one iteration should hold, in nanoseconds of CPU time.
    public static let window: Int64 = 1_000_000
    /// Never fewer events than this per iteration: an iteration's fixed cost
    /// (two `epoll_wait` calls, the deferred flush) stays shared.
    public static let floor = 8
    /// Fewer events than this between two readings say too little about
    /// their cost, and would make the readings' system calls a cost of
    /// their own (a cheap application can take only a few events an
    /// iteration).
    static let minimumSample = 16

    /// The events to ask the poller for next.
    public private(set) var maxEvents: Int
    /// The poller's own batch.
    public let ceiling: Int
    /// The estimate of what one event costs, in nanoseconds (0: none yet).
    public private(set) var nanosecondsPerEvent: Int64 = 0
    private var lastReading: Int64?
    /// Events taken since `lastReading`: their work is what the next
    /// reading adds.
    private var eventsSinceReading = 0

    public init(ceiling: Int) {
        self.ceiling = ceiling
        maxEvents = ceiling
    }

    /// The loop should read the thread's CPU time and pass it to `reading`
    /// before it polls.
    public var wantsReading: Bool {
        lastReading == nil || eventsSinceReading >= PollBudget.minimumSample
    }

    /// The thread's CPU time, in nanoseconds, before a poll.
    public mutating func reading(_ cpuNanoseconds: Int64) {
        defer {
            lastReading = cpuNanoseconds
            eventsSinceReading = 0
        }
        guard let lastReading, eventsSinceReading >= PollBudget.minimumSample else { return }
        let spent = cpuNanoseconds &- lastReading
        guard spent > 0 else { return }
        let sample = spent / Int64(eventsSinceReading)
        nanosecondsPerEvent = nanosecondsPerEvent == 0 ? sample : nanosecondsPerEvent + (sample - nanosecondsPerEvent) / 8
        let fit = nanosecondsPerEvent > 0 ? PollBudget.window / nanosecondsPerEvent : Int64(ceiling)
        maxEvents = Int(min(Int64(ceiling), max(Int64(PollBudget.floor), fit)))
    }

    /// The poll took `events` events.
    public mutating func took(_ events: Int) {
        eventsSinceReading += events
    }
}
