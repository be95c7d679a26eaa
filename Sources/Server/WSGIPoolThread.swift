import CPython
import CSys
import Core
import Gateway
import PyBridge

/// What a pool thread asks its worker's loop thread to do for the request
/// it runs (see WSGIPool). Pointers are the pool thread's: it waits, and
/// keeps them valid, until the answer comes.
enum PoolOperation {
    /// Body bytes into this buffer (the gateway's look-ahead).
    case readBody(UnsafeMutableRawBufferPointer)
    /// Body bytes of the response (with the head first, if it waits).
    case sendBody(UnsafeRawBufferPointer)
    /// A regular file as the rest of the body; the thread keeps `fd`.
    case sendFile(fd: Int32, offset: Int64, count: Int64)
    /// The body is complete.
    case finish
    /// Cut the response off.
    case abort
    /// The request's Python work is over: the thread is free (no answer).
    case done
}

/// The loop thread's answer to a `PoolOperation`.
enum PoolAnswer {
    case body(BodyRead)
    case sent(Bool)
    case fileSent(Int64)
}

/// One application thread of a worker's WSGI pool. Python runs here and
/// nothing else: the thread calls the application through its own
/// `WSGIGateway` (per-request state is the gateway's, so each thread has
/// one), and the gateway's `Exchange` is this object, which hands every
/// transport operation to the loop thread and waits (GIL released) for
/// the answer. The thread never touches a connection, a socket, a buffer
/// of the worker's or a timer.
///
/// Shared between the two threads, each field is written by one side while
/// the other waits, with the hand-off's mutexes ordering the accesses
/// (csys_handoff.h): `job` (loop writes, then posts), `operation` and
/// `pendingHead` (thread writes, then pushes), `answer` (loop writes, then
/// posts, as is `responseEnded`). `request`, `startedAt` and the copied
/// request belong to the loop thread.
final class WSGIPoolThread: Exchange, @unchecked Sendable {
    enum Job {
        case serve(GatewayRequest, token: UInt64)
        case exit
    }

    let number: Int
    let gateway: WSGIGateway
    /// Posted by the loop: a job, or the answer to an operation.
    let signal: OpaquePointer
    private let queue: OpaquePointer
    /// Set to 1 (relaxed) when the thread has left Python for good.
    private let exitedWord: UnsafeMutablePointer<Int64>

    var job: Job = .exit
    var operation: PoolOperation = .done
    /// The response head given by `sendHead`, sent with the next operation
    /// (as ASGI holds `http.response.start` for the first body).
    var pendingHead: ResponseHead?
    var answer: PoolAnswer = .sent(false)
    /// Set by the loop with an answer: the response's end is framed (its
    /// declared length was reached), so `finish` has nothing to hand over.
    var responseEnded = false

    // The loop thread's.
    /// The request running here, while its Python work lasts.
    var request: PooledRequest?
    var startedAt = Instant(nanoseconds: 0)
    /// Reported once when the request runs past --worker-timeout.
    var reportedStuck = false
    /// The request's field spans and bytes, copied: the worker's spans are
    /// reused by the next head it parses while this request builds its
    /// environ, and the transport's bytes go with the connection or the
    /// stream, which may end (the client gone) meanwhile.
    private var fields: UnsafeMutablePointer<FieldSpans>
    private var fieldCapacity: Int
    private var bytes: UnsafeMutableRawPointer
    private var byteCapacity: Int

    // The pool thread's.
    private var headGiven = false

    init(number: Int, gateway: WSGIGateway, queue: OpaquePointer, fieldCapacity: Int) {
        self.number = number
        self.gateway = gateway
        self.queue = queue
        signal = csys_slot_signal_create()!
        exitedWord = .allocate(capacity: 1)
        exitedWord.initialize(to: 0)
        self.fieldCapacity = max(fieldCapacity, 8)
        fields = .allocate(capacity: self.fieldCapacity)
        byteCapacity = 4096
        bytes = .allocate(byteCount: byteCapacity, alignment: 16)
    }

    deinit {
        csys_slot_signal_destroy(signal)
        exitedWord.deallocate()
        fields.deallocate()
        bytes.deallocate()
    }

    var exited: Bool { csys_board_load(exitedWord, 0) != 0 }

    /// Loop thread, while the thread is idle: `request` with its field
    /// spans and the bytes they point into in this thread's own storage
    /// (a head is at most --max-header-size; an HTTP/2 request's decoded
    /// fields are bounded by the header list size we advertise).
    func adopt(_ request: GatewayRequest) -> GatewayRequest {
        if request.fieldCount > fieldCapacity {
            fields.deallocate()
            fieldCapacity = request.fieldCount * 2
            fields = .allocate(capacity: fieldCapacity)
        }
        var extent = max(request.method.end, request.target.end, request.path.end, request.query.end)
        for i in 0..<request.fieldCount {
            let f = request.fields[i]
            fields[i] = f
            extent = max(extent, f.name.end, f.value.end)
        }
        if extent > byteCapacity {
            bytes.deallocate()
            byteCapacity = max(extent, byteCapacity * 2)
            bytes = .allocate(byteCount: byteCapacity, alignment: 16)
        }
        bytes.copyMemory(from: request.base, byteCount: extent)
        var own = request
        own.base = UnsafeRawPointer(bytes)
        own.fields = UnsafePointer(fields)
        own.rebaseForwarded(from: request.base, to: own.base)
        return own
    }

    // MARK: - The thread

    func start() -> Bool {
        let me = Unmanaged.passRetained(self)
        if PyThread_start_new_thread(poolThreadMain, me.toOpaque()) == UInt.max {
            me.release()
            return false
        }
        return true
    }

    /// Attached to the interpreter for its whole life; the GIL (or, free
    /// threaded, the attached state) is given up while it waits.
    fileprivate func main() {
        let gil = PyGILState_Ensure()
        while true {
            GIL.released { csys_slot_signal_wait(signal) }
            guard case .serve(let request, let token) = job else { break }
            headGiven = false
            pendingHead = nil
            responseEnded = false
            gateway.serve(request, exchange: self, token: token)
            operation = .done
            _ = csys_handoff_push(queue, Int32(number))
        }
        PyGILState_Release(gil)
        csys_board_store(exitedWord, 0, 1)
    }

    /// Hands `op` to the loop thread and waits for its answer.
    private func hand(_ op: PoolOperation) -> PoolAnswer {
        operation = op
        _ = csys_handoff_push(queue, Int32(number))
        GIL.released { csys_slot_signal_wait(signal) }
        return answer
    }

    // MARK: - Exchange (called by the gateway on this thread)

    func readBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyRead {
        if case .body(let read) = hand(.readBody(buffer)) { return read }
        return .failed("the connection failed", status: 0)
    }

    /// Held until the next operation, which carries it (the gateway keeps
    /// what it points to until the request ends).
    func sendHead(_ head: ResponseHead) -> Bool {
        pendingHead = head
        headGiven = true
        return true
    }

    func sendBody(_ bytes: UnsafeRawBufferPointer, flush: Bool) -> Bool {
        if bytes.isEmpty && pendingHead == nil { return true }
        if case .sent(let ok) = hand(.sendBody(bytes)) { return ok }
        return false
    }

    func sendFile(fd: Int32, offset: Int64, count: Int64) -> Int64? {
        if case .fileSent(let n) = hand(.sendFile(fd: fd, offset: offset, count: count)) { return n }
        return 0
    }

    func finish() -> Bool {
        if responseEnded { return true }
        if case .sent(let ok) = hand(.finish) { return ok }
        return false
    }

    func abort() {
        _ = hand(.abort)
    }

    var headSent: Bool { headGiven }
}

private let poolThreadMain: @convention(c) (UnsafeMutableRawPointer?) -> Void = { arg in
    let thread = Unmanaged<WSGIPoolThread>.fromOpaque(arg!).takeRetainedValue()
    thread.main()
}
