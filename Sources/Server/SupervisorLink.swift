import CSys
import Core
import Options

/// What this worker shows its supervisor and its siblings: the status pipe
/// (`R` ready, `H` heartbeat, `Q` replace me) and its slot on the load
/// board, which it also reads to let a less loaded sibling take a new
/// connection.
///
/// Separate from Worker because both channels are the supervisor's shared
/// memory and pipe, with their own pacing (a heartbeat a second, a 2 ms
/// grace for a sibling), and nothing in them depends on the connections
/// beyond the open-connection count the worker passes in.
///
/// The load board: with several workers on one socket, every one of them is
/// woken for a new connection, and the one that runs first would take most
/// of them. Each worker publishes its open-connection count (`Int64.max`:
/// not accepting, as while stopping) and, inside an inline WSGI call, since
/// when; a worker holding more than one connection above the least loaded
/// sibling lets that sibling take the connection — for at most 2 ms, so a
/// sibling stuck in a long WSGI call cannot strand it. A sibling that has
/// been inside a call for 2 ms or more does not count as the least loaded:
/// it would only cost each new connection the 2 ms. One in a short call
/// does, for it is back in its loop soon; counting it out (as the board
/// once did for any call) gave the new connections to whichever worker was
/// between calls, and under quick WSGI requests one worker of two accepted
/// up to 2.2x the other's connections.
struct SupervisorLink {
    /// The status pipe (-1: no supervisor, as for worker contexts past 0).
    private let statusFD: Int32
    private var lastBeat = Instant(nanoseconds: 0)
    /// The supervisor's load board (nil: this worker has no siblings).
    private let board: UnsafeMutablePointer<Int64>?
    private let boardSlot: Int32
    private let boardSlots: Int
    /// Since when a new connection has been left to a less loaded sibling.
    private var deferringSince: Instant?

    init(config: Config) {
        statusFD = config.statusFD
        board = config.boardFD >= 0 ? csys_board_map(config.boardFD, Int32(config.boardSlots)) : nil
        boardSlot = Int32(config.boardSlot)
        boardSlots = config.boardSlots
    }

    /// A supervisor reads the status pipe (and expects a heartbeat a second).
    var reportsStatus: Bool { statusFD >= 0 }

    func writeStatus(_ byte: UInt8) {
        var b = byte
        _ = csys_write_plain(statusFD, &b, 1)
    }

    /// An `H` if the last one is a second old.
    mutating func beatIfDue(now: Instant) {
        guard now.milliseconds(since: lastBeat) >= 1000 else { return }
        lastBeat = now
        writeStatus(UInt8(ascii: "H"))
    }

    /// A board entry: the open-connection count in the low bits, and above
    /// them since when the worker is inside a WSGI call, in 100 µs units of
    /// the monotonic clock (0: not in a call; 43 bits last 27 years).
    private static let countBits: Int64 = 20
    private static let countMask: Int64 = (1 << countBits) - 1
    /// How long a sibling may have been inside a call and still count.
    private static let shortCall: Int64 = 20  // 2 ms

    private static func entry(_ openCount: Int, inCallSince: Instant?) -> Int64 {
        let count = min(Int64(openCount), countMask)
        guard let since = inCallSince else { return count }
        return (max(since.nanoseconds / 100_000, 1) << countBits) | count
    }

    /// This worker's open-connection count on the board; while stopping,
    /// "not accepting".
    func publishLoad(openCount: Int, stopping: Bool) {
        guard let board else { return }
        csys_board_store(board, boardSlot, stopping ? Int64.max : SupervisorLink.entry(openCount, inCallSince: nil))
    }

    /// "Not accepting" on the board, whatever the count (the worker's
    /// --wsgi-threads pool and wait list are full).
    func publishNotAccepting() {
        guard let board else { return }
        csys_board_store(board, boardSlot, Int64.max)
    }

    /// An inline WSGI call begins at `now` (see the type's comment).
    func publishBusy(openCount: Int, stopping: Bool, now: Instant) {
        guard let board else { return }
        csys_board_store(board, boardSlot, stopping ? Int64.max : SupervisorLink.entry(openCount, inCallSince: now))
    }

    /// True: leave the next connection to a less loaded sibling (see the
    /// type's comment).
    mutating func siblingShouldTake(openCount: Int, stopping: Bool, now: Instant) -> Bool {
        guard let board, !stopping else { return false }
        var least = Int64.max
        let ticks = now.nanoseconds / 100_000
        for i in 0..<boardSlots where i != Int(boardSlot) {
            let entry = csys_board_load(board, Int32(i))
            guard entry != Int64.max else { continue }
            let since = entry >> SupervisorLink.countBits
            if since != 0 && ticks - since >= SupervisorLink.shortCall { continue }
            least = min(least, entry & SupervisorLink.countMask)
        }
        guard least != Int64.max, Int64(openCount) > least + 1 else {
            deferringSince = nil
            return false
        }
        if let since = deferringSince {
            if now.milliseconds(since: since) >= 2 {
                deferringSince = nil
                return false
            }
        } else {
            deferringSince = now
        }
        return true
    }
}
