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
    private var createTask: PyRef?
    private(set) var lifespanState: PyRef?
    private let doneName = Py.intern("add_done_callback")
    private let setResultName = Py.intern("set_result")
    private let setExceptionName = Py.intern("set_exception")
    private let doneQuery = Py.intern("done")
    /// Finished requests for reuse.
    var requests = ASGIRequestPool()
    private let cancelledQuery = Py.intern("cancelled")
    private let exceptionQuery = Py.intern("exception")
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
    }

    /// The lifespan state this gateway copies into each scope (nil: none),
    /// held for the gateway's life: what worker 0 shares with the other
    /// worker threads under `--lifespan-scope process`.
    public var state: PyRef? { lifespanState }

    /// Called once the loop runs: the loop's factories, and the lifespan
    /// state (None when lifespan is off or unsupported).
    public func attach(loop: PyRef, state: PyRef?) {
        createFuture = PyObject_GetAttrString(loop, "create_future")
        createTask = PyObject_GetAttrString(loop, "create_task")
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

    /// Calls the application and runs the coroutine as a task whose end
    /// goes to `conversation.taskDone`.
    func run(_ conversation: ASGIConversation, scope scopeDict: consuming PyOwned,
                     receive: consuming PyOwned, send: consuming PyOwned) {
        let called = PyOwned(stealing: pshim_call3(app, scopeDict.ref, receive.ref, send.ref))
        // The application keeps what it needs of them.
        _ = consume scopeDict; _ = consume receive; _ = consume send
        guard let coroutine = called else {
            // The call itself raised (a synchronous callable, wrong arity).
            let tb = takeTraceback()
            Log.error("the ASGI application raised \(tb.exceptionName): \(tb.message)\n\(tb.text)")
            conversation.taskDone(Py.none)
            return
        }
        let created = PyOwned(stealing: pshim_call1(createTask!, coroutine.ref))
        _ = consume coroutine  // the task holds it
        guard let task = created else {
            let tb = takeTraceback()
            Log.error("the ASGI application did not return an awaitable: \(tb.message)")
            conversation.taskDone(Py.none)
            return
        }
        if let done = ASGICallables.make(.done, for: conversation),
           PyOwned(stealing: PyObject_CallMethodOneArg(task.ref, doneName, done.ref)) == nil {
            PyErr_Clear()
        }
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

    /// The exception a finished task ended with, formatted; nil if it
    /// returned normally or was cancelled.
    func taskException(_ task: PyRef) -> PythonTraceback? {
        guard task != Py.none else { return nil }
        if let cancelled = PyOwned(stealing: PyObject_CallMethodNoArgs(task, cancelledQuery)) {
            if cancelled.ref == Py.true { return nil }
        } else {
            PyErr_Clear()
        }
        guard let exc = PyOwned(stealing: PyObject_CallMethodNoArgs(task, exceptionQuery)) else { PyErr_Clear(); return nil }
        if exc.ref == Py.none { return nil }
        pshim_restore_exception(exc.take())  // steals it
        return takeTraceback()
    }
}
