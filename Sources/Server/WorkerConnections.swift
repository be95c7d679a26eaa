import Core

/// Every open connection of the worker, of any kind (the ConnectionSlab),
/// the two lists of them the loop visits after a round's events: those
/// whose timer expired and those with decrypted input the poller will not
/// report (see H1Connection+TLS), and the list its once-a-second pass
/// visits: those that went idle since the previous pass (`wentIdle`).
///
/// Separate from Worker because both lists name slab entries (indices,
/// tokens) and are kept between rounds only to reuse their storage; the
/// worker visits what they return, so no connection runs while this is
/// being changed.
struct WorkerConnections {
    private var slab = ConnectionSlab()
    private var expired: [Int] = []
    private var deferredReads: [UInt64] = []
    /// Tokens, so a connection closed meanwhile (its entry reused or not)
    /// is not visited.
    private var wentIdle: [UInt64] = []

    mutating func insert(_ c: any WorkerConnection) -> (index: Int, generation: UInt32) { slab.insert(c) }
    mutating func release(_ index: Int) { slab.release(index) }
    func connection(for token: UInt64) -> (any WorkerConnection)? { slab.connection(for: token) }
    subscript(index: Int) -> (any WorkerConnection)? { slab[index] }
    var openConnections: [any WorkerConnection] { slab.openConnections }

    /// The owners (slab indices) of the timers that expired at `now`.
    /// Collected first: a timeout handler re-arms or cancels timers, which
    /// must not happen while the wheel is being walked.
    mutating func expire(_ timers: inout TimerWheel, now: Instant) -> [Int] {
        expired.removeAll(keepingCapacity: true)
        timers.expire(now: now) { expired.append($0) }
        return expired
    }

    var hasDeferredReads: Bool { !deferredReads.isEmpty }

    mutating func deferRead(_ token: UInt64) { deferredReads.append(token) }

    /// The connections (tokens) to read after this round, taken off the list.
    mutating func takeDeferredReads() -> [UInt64] {
        let due = deferredReads
        deferredReads.removeAll(keepingCapacity: true)
        return due
    }

    /// `token` went idle holding what it needs only while busy; the
    /// connection lists itself once until the next pass.
    mutating func noteWentIdle(_ token: UInt64) { wentIdle.append(token) }

    /// The connections (tokens) that went idle since the last pass, taken
    /// off the list. Its storage is not kept: a quiet worker holds none.
    mutating func takeWentIdle() -> [UInt64] {
        let listed = wentIdle
        wentIdle = []
        return listed
    }
}
