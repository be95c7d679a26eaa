import CPython
import CPyShim
import Core
import PyBridge

/// The ASGI 3 adapter for one worker: starts each request's application as
/// a task on the worker's event loop, and resolves the futures its
/// `receive`/`send` return when the transport reports progress.
///
/// The loop is the worker's own: the server's epoll descriptor is one of
/// the loop's readers (see the runtime module's `serve_asgi`), so the
/// server and the application share one thread with no hand-off.
public final class ASGIGateway {
    let app: PyRef
    let keys = ASGIKeys()
    let methods = WSGIKeys()
    var scope: ASGIScopeBuilder
    /// The WebTransport extension's keys (ASGIWebTransport), made on first use.
    lazy var webTransportKeys = WebTransportKeys()
    private var createFuture: PyRef?
    private var loop: PyRef?
    /// `asyncio.Task`, and `{"loop": loop, "name": taskName}` for it.
    private var taskType: PyRef?
    private var taskArguments: PyRef?
    /// `_peregrine.run_asgi`: the coroutine each task runs (see `run`).
    private let runASGI: PyRef
    private let getTaskFactoryName = Py.intern("get_task_factory")
    private let createTaskName = Py.intern("create_task")
    private(set) var lifespanState: PyRef?
    private let setResultName = Py.intern("set_result")
    private let setExceptionName = Py.intern("set_exception")
    private let doneQuery = Py.intern("done")
    /// Finished requests for reuse.
    var requests = ASGIRequestPool()
    /// `peregrine.ClientDisconnected` (an OSError): raised by `send()` once
    /// the client has gone.
    let clientDisconnected: PyRef
    /// Messages / bytes queued per WebSocket before its reading pauses.
    public var webSocketMaxQueue = 32
    public var webSocketMaxQueueBytes = 4 << 20

    /// `schemeForced`: `scheme` came from `--scheme` and holds whatever a
    /// proxy says.
    public init(app: PyRef, rootPath: String, scheme: String, schemeForced: Bool = false) {
        self.app = app
        scope = ASGIScopeBuilder(keys: keys, rootPath: rootPath, scheme: scheme, schemeForced: schemeForced)
        // The process's native types exist before any worker thread does
        // (see ProcessObject).
        _ = ASGICallables.type
        _ = ASGIPendingReceive.type
        ReadyAwaitable.prepare()
        clientDisconnected = Runtime.attribute("ClientDisconnected").take()  // kept for the gateway's life
        runASGI = Runtime.attribute("run_asgi").take()  // likewise
    }

    /// The lifespan state this gateway copies into each scope (nil: none),
    /// held for the gateway's life: what worker 0 shares with the other
    /// worker threads under `--lifespan-scope process`.
    public var state: PyRef? { lifespanState }

    /// Called once the loop runs: the loop's factories, and the lifespan
    /// state (None when lifespan is off or unsupported).
    public func attach(loop: PyRef, state: PyRef?) {
        createFuture = PyObject_GetAttrString(loop, "create_future")
        Py.incref(loop)
        self.loop = loop
        // Every task gets the same name: without one, Task.__init__ formats
        // "Task-<n>" per request (1,450 instructions of 40k for hello).
        if let asyncio = PyOwned(stealing: PyImport_ImportModule("asyncio")),
           let task = PyObject_GetAttrString(asyncio.ref, "Task"), let arguments = PyDict_New() {
            let name = PyOwned(stealing: Py.str("peregrine-asgi"))
            PyDict_SetItemString(arguments, "loop", loop)
            PyDict_SetItemString(arguments, "name", name.ref)
            taskType = task
            taskArguments = arguments
        }
        PyErr_Clear()
        if let state, state != Py.none {
            Py.incref(state)
            lifespanState = state
        }
    }

    /// Starts the application for one request as a task. Failures to start
    /// are answered like application errors (500).
    public func start(_ request: GatewayRequest, exchange: AsyncExchange) {
        let r = requests.take(gateway: self, exchange: exchange, isHead: request.isHead)
        exchange.attach(r)
        guard let scopeDict = scope.build(request, methodKeys: methods, state: lifespanState),
              let receive = ASGICallables.make(.receive, for: r),
              let send = ASGICallables.make(.send, for: r) else {
            logFailure("cannot build the ASGI scope")
            r.taskDone(Py.none)
            return
        }
        run(r, scope: scopeDict, receive: receive, send: send)
    }

    /// Runs the application as a task: `run_asgi(app, scope, receive, send,
    /// done)`, which calls and awaits it and hands how it ended to
    /// `conversation.taskDone` from inside the task. The application is
    /// called in the task (a call that raises, or returns no awaitable, is
    /// a failure of the task like any other).
    ///
    /// The task is made as `asyncio.Task(coro, loop=loop, name=...)`, what
    /// `loop.create_task` does, minus the per-request name; a task factory
    /// the application installed (`loop.set_task_factory`) is honoured
    /// through `create_task`.
    func run(_ conversation: ASGIConversation, scope scopeDict: consuming PyOwned,
                     receive: consuming PyOwned, send: consuming PyOwned) {
        guard let done = ASGICallables.make(.done, for: conversation),
              let coroutine = PyOwned(stealing: pshim_call5(runASGI, app, scopeDict.ref, receive.ref, send.ref, done.ref)) else {
            logFailure("cannot start the ASGI application")
            conversation.taskDone(Py.none)
            return
        }
        // The coroutine keeps what it needs of them.
        _ = consume scopeDict; _ = consume receive; _ = consume send; _ = consume done
        guard PyOwned(stealing: newTask(coroutine.ref)) != nil else {
            // Only if the loop refused it (closed) or memory ran out: the
            // coroutine never ran, so nobody else finishes the request.
            logFailure("cannot start the ASGI application's task")
            conversation.taskDone(Py.none)
            return
        }
    }

    /// A task running `coroutine` on the loop (new reference), or nil with
    /// the exception set.
    private func newTask(_ coroutine: PyRef) -> PyRef? {
        guard let loop, let taskType, let taskArguments else { return nil }
        guard let factory = PyOwned(stealing: PyObject_CallMethodNoArgs(loop, getTaskFactoryName)) else { return nil }
        if factory.ref != Py.none {
            return PyObject_CallMethodOneArg(loop, createTaskName, coroutine)
        }
        guard let args = PyOwned(stealing: PyTuple_New(1)) else { return nil }
        pshim_tuple_set_item(args.ref, 0, PyOwned(borrowing: coroutine).take())
        return PyObject_Call(taskType, args.ref, taskArguments)
    }

    /// Starts the application for a WebSocket opening handshake the
    /// transport found valid; `subprotocols` are the client's offers in order.
    public func startWebSocket(_ request: GatewayRequest, subprotocols: [UnsafeRawBufferPointer],
                               exchange: WebSocketExchange) {
        let ws = ASGIWebSocket(gateway: self, exchange: exchange)
        exchange.attachWebSocket(ws)
        guard let scopeDict = scope.build(request, methodKeys: methods, state: lifespanState),
              let receive = ASGICallables.make(.receive, for: ws),
              let send = ASGICallables.make(.send, for: ws) else {
            logFailure("cannot build the ASGI scope")
            ws.taskDone(Py.none)
            return
        }
        let d = scopeDict.ref
        PyDict_SetItem(d, keys.type, keys.websocket)
        PyDict_SetItem(d, keys.scheme, scope.reportsHTTPS(request) ? keys.wss : keys.ws)
        PyDict_DelItem(d, keys.method)
        let offered = PyOwned(stealing: PyList_New(0)!)
        for p in subprotocols {
            if let s = PyOwned(stealing: Py.latin1(p)) { PyList_Append(offered.ref, s.ref) }
        }
        PyDict_SetItem(d, keys.subprotocols, offered.ref)
        PyDict_SetItem(d, keys.extensions, webSocketExtensions)
        if let tls = request.peer.tls { scope.setTLSExtension(d, tls) }
        run(ws, scope: scopeDict, receive: receive, send: send)
    }

    private lazy var webSocketExtensions: PyRef = {
        let ext = PyDict_New()!
        let empty = PyOwned(stealing: PyDict_New()!)
        PyDict_SetItemString(ext, "websocket.http.response", empty.ref)
        return ext
    }()

    func logFailure(_ what: String) {
        let tb = takeTraceback()
        Log.error("\(what): \(tb.exceptionName): \(tb.message)\n\(tb.text)")
    }

    // MARK: - Futures

    func newFuture() -> PyRef? {
        pshim_call0(createFuture!)
    }

    func isDone(_ future: PyRef) -> Bool {
        guard let r = PyOwned(stealing: PyObject_CallMethodNoArgs(future, doneQuery)) else { PyErr_Clear(); return true }
        return r.ref == Py.true
    }

    /// Completes `future` with `value` unless it was cancelled meanwhile.
    func resolve(_ future: PyRef, _ value: PyRef) {
        guard !isDone(future) else { return }
        if PyOwned(stealing: PyObject_CallMethodOneArg(future, setResultName, value)) == nil { logFailure("set_result") }
    }

    func reject(_ future: PyRef, with type: PyRef, _ message: String) {
        guard !isDone(future) else { return }
        let text = PyOwned(stealing: Py.str(message))
        guard let exc = PyOwned(stealing: pshim_call1(type, text.ref)) else { PyErr_Clear(); return }
        if PyOwned(stealing: PyObject_CallMethodOneArg(future, setExceptionName, exc.ref)) == nil { PyErr_Clear() }
    }

    /// What the application's task ended with (`run_asgi`'s report: None
    /// or the exception), formatted; nil if it returned normally or was
    /// cancelled (a BaseException that is not an Exception).
    func taskException(_ outcome: PyRef) -> PythonTraceback? {
        guard outcome != Py.none else { return nil }
        guard PyObject_IsInstance(outcome, pshim_exc_exception()) == 1 else { PyErr_Clear(); return nil }
        pshim_restore_exception(PyOwned(borrowing: outcome).take())  // steals it
        return takeTraceback()
    }
}
