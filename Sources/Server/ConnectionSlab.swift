/// The worker's open connections of every kind, one entry each. An entry's
/// index is the connection's timer-wheel owner and, with the entry's
/// generation, its poller token (`WorkerConnection.token`); the generation
/// moves on each time the entry is freed, so an event still queued for a
/// closed connection finds no match and is dropped.
///
/// Freed entries are reused last-freed-first, and the slab never holds
/// more entries than were open at once, which is what the timer wheel's
/// capacity is sized for.
struct ConnectionSlab {
    private var entries: [(any WorkerConnection)?] = []
    private var generations: [UInt32] = []
    private var free: [Int] = []

    /// Places `c` in a free entry: the index and generation it is to keep
    /// (`WorkerConnection.index`, `.generation`).
    mutating func insert(_ c: any WorkerConnection) -> (index: Int, generation: UInt32) {
        let index: Int
        if let reused = free.popLast() {
            index = reused
            entries[index] = c
        } else {
            index = entries.count
            entries.append(c)
            generations.append(0)
        }
        generations[index] &+= 1
        return (index, generations[index])
    }

    /// The connection closed: its entry is free and its token stale.
    mutating func release(_ index: Int) {
        entries[index] = nil
        generations[index] &+= 1
        free.append(index)
    }

    /// The open connection a poller token names, if it is still the one the
    /// token was made for.
    func connection(for token: UInt64) -> (any WorkerConnection)? {
        let index = Int(token & 0xFFFF_FFFF)
        guard index < entries.count, UInt64(generations[index]) == token >> 32 else { return nil }
        return entries[index]
    }

    /// The open connection in entry `index` (a timer owner), if any.
    subscript(index: Int) -> (any WorkerConnection)? { entries[index] }

    /// Every open connection, for stopping.
    var openConnections: [any WorkerConnection] { entries.compactMap { $0 } }
}
