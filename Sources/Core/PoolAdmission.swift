/// Admission to a worker's pool of application threads (--wsgi-threads):
/// which threads are free, which connections wait for one, and whether the
/// worker should go on accepting.
///
/// Theory of operation. A request runs when a thread is free (`takeThread`)
/// and waits otherwise: its connection joins the wait list (`wait`), with
/// its request left where it is (an HTTP/1.1 head in the connection's input,
/// HTTP/2 streams in their session), so waiting costs one entry here and no
/// copy. A connection is on the list at most once (its owner makes sure), so
/// the list is bounded by the connections a worker may hold
/// (--max-connections). When a thread is given back (`release`) the oldest
/// waiter is offered it (`nextWaiter`) before any new request can take it,
/// so the list is served in arrival order.
///
/// Backpressure: with every thread busy and `waitListLimit` connections
/// waiting, `holdsAccepting` is true and the worker stops accepting: further
/// clients wait in the kernel's accept queue, not in memory. Requests that
/// arrive meanwhile on connections already open still join the list (each
/// connection holds at most its own protocol's bound of requests: one
/// HTTP/1.1 head, SETTINGS_MAX_CONCURRENT_STREAMS HTTP/2 streams).
public struct PoolAdmission: ~Copyable {
    public let threads: Int
    /// Waiting connections beyond which accepting stops.
    public let waitListLimit: Int
    /// Free thread numbers, the most recently freed on top (its caches are warm).
    private var free: [Int]
    private var waiters: FixedRing

    /// `maxWaiters`: the most connections that can ever wait at once
    /// (the worker's --max-connections).
    public init(threads: Int, waitListLimit: Int, maxWaiters: Int) {
        precondition(threads > 0 && waitListLimit >= 0 && maxWaiters > 0)
        self.threads = threads
        self.waitListLimit = waitListLimit
        free = Array((0..<threads).reversed())
        waiters = FixedRing(capacity: maxWaiters)
    }

    /// Requests running on a thread.
    public var inFlight: Int { threads - free.count }
    /// Connections waiting for a thread.
    public var waiting: Int { waiters.count }

    /// A free thread for a new request, or nil: every thread is busy, or
    /// connections already wait (they go first).
    public mutating func takeThread() -> Int? {
        guard waiters.isEmpty else { return nil }
        return free.popLast()
    }

    /// A thread for the waiter `nextWaiter` just returned.
    public mutating func takeThreadForWaiter() -> Int? {
        free.popLast()
    }

    /// `thread` finished its request.
    public mutating func release(_ thread: Int) {
        precondition(free.count < threads && !free.contains(thread), "pool thread \(thread) released twice")
        free.append(thread)
    }

    /// A connection's request waits for a thread. False if the list is at
    /// its hard capacity (a connection was added twice: its owner's bug).
    public mutating func wait(_ token: UInt64) -> Bool {
        waiters.push(token)
    }

    /// The oldest waiting connection, if a thread is free for it. The
    /// caller gives it `takeThreadForWaiter()`; a waiter that no longer
    /// wants one (closed meanwhile) is simply skipped.
    public mutating func nextWaiter() -> UInt64? {
        guard !free.isEmpty else { return nil }
        return waiters.pop()
    }

    /// Every thread is busy and the wait list is full: stop accepting.
    public var holdsAccepting: Bool { free.isEmpty && waiters.count >= waitListLimit }
}
