import CSys
import Core
import PyBridge

/// The worker threads of one process (`--free-threaded`, or the internal
/// `PEREGRINE_WORKER_CONTEXTS`): what they share besides the interpreter
/// and the application. Worker 0, on the main thread, is the one the
/// supervisor knows (signals, status pipe); the group lets it speak for
/// all of them:
///
/// - **stop**: worker 0 passes a stop or drain on to every other worker
///   through a pipe each polls (`stopOthers`), and waits for them to finish
///   before the process exits (`waitForOthers`; with `--lifespan-scope
///   process`, its loop runs on while `othersBusy`, so that the one
///   lifespan shutdown comes after every thread drained);
/// - **ready**: worker 0 reports the process ready only once every worker
///   serves (`waitUntilServing`); a worker that cannot start fails the
///   process's start;
/// - **alive**: each worker stamps the time on every loop round and at
///   least once a second (`stamp`); worker 0 sends its heartbeat only while
///   every other worker's stamp is recent (`othersAlive`), so a wedged
///   thread gets the process replaced after --worker-timeout, as a wedged
///   worker process does; a thread that ends on its own has it replaced
///   at once (`someoneEnded`);
/// - **recycle**: the first worker to reach --max-requests asks for the
///   process to be replaced (`requestRecycle`).
///
/// Every field is written by one thread and read by others through relaxed
/// atomic loads and stores on plain memory (`csys_board_*`): each value is
/// a whole word that only moves forward, and none orders other memory.
/// Immutable after `init`, which runs before any thread starts.
final class WorkerGroup: @unchecked Sendable {
    enum State: Int64 {
        case starting = 0, serving = 1, ended = 2, failed = 3
    }

    /// Stamps older than this mean a worker is not running its loop.
    static let staleMilliseconds = 3000

    let count: Int
    /// Per worker: `State`, then the last stamp (ms), then one recycle word.
    private let words: UnsafeMutablePointer<Int64>
    /// Per worker but 0: the pipe its stop arrives on.
    private let stopReads: [Int32]
    private let stopWrites: [Int32]

    init(count: Int) {
        self.count = count
        words = .allocate(capacity: 2 * count + 1)
        words.initialize(repeating: 0, count: 2 * count + 1)
        var reads: [Int32] = [-1]
        var writes: [Int32] = [-1]
        for _ in 1..<max(count, 1) {
            var fds: [Int32] = [-1, -1]
            _ = csys_pipe(&fds)
            reads.append(fds[0])
            writes.append(fds[1])
        }
        stopReads = reads
        stopWrites = writes
    }

    /// The descriptor worker `index` polls for its stop (-1 for worker 0).
    func stopDescriptor(_ index: Int) -> Int32 { stopReads[index] }

    // MARK: - States

    func set(_ index: Int, _ state: State) {
        csys_board_store(words, Int32(index), state.rawValue)
    }

    func state(_ index: Int) -> State {
        State(rawValue: csys_board_load(words, Int32(index))) ?? .failed
    }

    /// Worker 0, before it reports ready: waits (GIL released) until every
    /// other worker serves. False if one failed to start or `milliseconds`
    /// passed.
    func waitUntilServing(milliseconds: Int) -> Bool {
        // Counted in naps rather than read from the clock: the worker is
        // the only reader of the clock (issue #13), and this wait is not
        // one of its rounds.
        var naps = milliseconds / 5
        while true {
            var waiting = false
            for i in 1..<count {
                switch state(i) {
                case .serving: continue
                case .starting: waiting = true
                case .ended, .failed: return false
                }
            }
            if !waiting { return true }
            if naps <= 0 { return false }
            naps -= 1
            GIL.released { csys_sleep_milliseconds(5) }
        }
    }

    /// Some worker other than 0 has not ended yet (it starts, or serves,
    /// or drains what it holds).
    var othersBusy: Bool {
        (1..<count).contains { state($0) == .serving || state($0) == .starting }
    }

    /// Worker 0, stopped: waits (GIL released) up to `milliseconds` for the
    /// others to finish what they hold.
    func waitForOthers(milliseconds: Int) {
        var naps = milliseconds / 10
        while othersBusy {
            naps -= 1
            if naps < 0 {
                Log.warning("worker threads still busy after the graceful timeout: exiting")
                return
            }
            GIL.released { csys_sleep_milliseconds(10) }
        }
    }

    /// A worker other than 0 ended while the process was not stopping.
    var someoneEnded: Bool {
        (1..<count).contains { state($0) == .ended || state($0) == .failed }
    }

    // MARK: - Stop

    /// Worker 0 began a stop (`closeIdle`) or a drain: so does every other.
    func stopOthers(closeIdle: Bool) {
        var b: UInt8 = closeIdle ? UInt8(ascii: "T") : UInt8(ascii: "D")
        for fd in stopWrites.dropFirst() { _ = csys_write_plain(fd, &b, 1) }
    }

    /// Worker 0 got a stop signal under --drain-delay: every other worker
    /// drains for the same delay, then stops on its own.
    func delayOthers() {
        var b = UInt8(ascii: "W")
        for fd in stopWrites.dropFirst() { _ = csys_write_plain(fd, &b, 1) }
    }

    /// Worker 0 got SIGUSR2: every other worker logs its stats line too.
    func askOthersForStats() {
        var b = UInt8(ascii: "S")
        for fd in stopWrites.dropFirst() { _ = csys_write_plain(fd, &b, 1) }
    }

    /// What worker `index` was told: `closeIdle` of the stop (nil: none),
    /// whether a drain delay began, and whether stats were asked for.
    func takeStop(_ index: Int) -> (stop: Bool?, delay: Bool, stats: Bool) {
        var b: UInt8 = 0
        var stop: Bool?
        var delay = false
        var stats = false
        while csys_read(stopReads[index], &b, 1) > 0 {
            if b == UInt8(ascii: "W") { delay = true; continue }
            if b == UInt8(ascii: "S") { stats = true; continue }
            stop = (stop ?? false) || b == UInt8(ascii: "T")
        }
        return (stop, delay, stats)
    }

    // MARK: - Alive

    func stamp(_ index: Int, now: Instant) {
        csys_board_store(words, Int32(count + index), now.nanoseconds / 1_000_000)
    }

    /// Every other worker still serving stamped within `staleMilliseconds`
    /// of `now` (one that ended is `someoneEnded`'s business, or the stop's).
    func othersAlive(now: Instant) -> Bool {
        let nowMs = now.nanoseconds / 1_000_000
        return (1..<count).allSatisfy {
            state($0) != .serving || nowMs - csys_board_load(words, Int32(count + $0)) < Int64(WorkerGroup.staleMilliseconds)
        }
    }

    // MARK: - Recycle

    func requestRecycle() {
        csys_board_store(words, Int32(2 * count), 1)
    }

    var recycleRequested: Bool { csys_board_load(words, Int32(2 * count)) != 0 }
}
