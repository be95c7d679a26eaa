import Core
import HTTP1

/// Memory the worker hands its connections and takes back: read-buffer
/// blocks, HTTP/1.1 parsing and per-request state, and the scratch buffer for reading a file
/// on transports that cannot sendfile.
///
/// Separate from Worker because it is pure reuse bookkeeping (how many are
/// kept, when the idle blocks are returned to the kernel), with no part in
/// dispatching events. Held inline in the worker, so taking and giving
/// cost what they did.
struct WorkerPools: ~Copyable {
    private var buffers = BufferPool()
    /// Parsing state for connections with a request under way; connections
    /// idle at the worker's pass, and closed ones, return theirs (a bounded
    /// number is kept for reuse).
    private var parsing: [H1RequestParsing] = []
    /// Per-request state (H1RequestState) likewise.
    private var requestStates: [H1RequestState] = []
    /// The limits parsing state (and a chunked decoder) is made with.
    let limits: H1Limits
    private var scratch: UnsafeMutableRawBufferPointer?
    private var lastTrim = Instant(nanoseconds: 0)

    init(limits: H1Limits) {
        self.limits = limits
    }

    var blockSize: Int { buffers.blockSize }
    var bufferUsage: BufferPool.Usage { buffers.usage }

    mutating func takeBlock() -> UnsafeMutableRawPointer { buffers.take() }
    mutating func giveBlock(_ b: UnsafeMutableRawPointer) { buffers.give(b) }

    mutating func takeParsing() -> H1RequestParsing {
        parsing.popLast() ?? H1RequestParsing(limits: limits)
    }

    mutating func giveParsing(_ p: H1RequestParsing) {
        guard parsing.count < 256 else { return }
        p.head.reset()
        parsing.append(p)
    }

    mutating func takeRequestState() -> H1RequestState {
        requestStates.popLast() ?? H1RequestState()
    }

    mutating func giveRequestState(_ s: H1RequestState) {
        guard requestStates.count < 256 else { return }
        requestStates.append(s)
    }

    /// Reading a file for a transport that cannot sendfile (HTTP/2, TLS);
    /// made on first use.
    var fileScratch: UnsafeMutableRawBufferPointer {
        mutating get {
            if let scratch { return scratch }
            let s = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
            scratch = s
            return s
        }
    }

    /// Once a second (the worker then runs its idle pass, then `trim`).
    mutating func trimDue(now: Instant) -> Bool {
        guard now.milliseconds(since: lastTrim) >= 1000 else { return false }
        lastTrim = now
        return true
    }

    /// The idle blocks' pages go back to the kernel, and of the parsing and
    /// request states the idle pass gave back, a few are kept: a busy
    /// connection keeps its own, so takers are new connections and those
    /// waking after a second or more idle, and the states of many
    /// connections gone idle at once are freed rather than held.
    mutating func trim() {
        buffers.trim()
        if parsing.count > WorkerPools.keptAfterPass { parsing.removeLast(parsing.count - WorkerPools.keptAfterPass) }
        if requestStates.count > WorkerPools.keptAfterPass {
            requestStates.removeLast(requestStates.count - WorkerPools.keptAfterPass)
        }
    }

    static let keptAfterPass = 4
}
