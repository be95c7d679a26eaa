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
    private let methods = WSGIKeys()
    private var scope: ASGIScopeBuilder
    private var createFuture: PyRef?
    private var createTask: PyRef?
    private var lifespanState: PyRef?
    private let doneName = Py.intern("add_done_callback")
    private let setResultName = Py.intern("set_result")
    private let setExceptionName = Py.intern("set_exception")
    private let doneQuery = Py.intern("done")
    /// `peregrine.ClientDisconnected` (an OSError): raised by `send()` once
    /// the client has gone.
    let clientDisconnected: PyRef
    /// Messages / bytes queued per WebSocket before its reading pauses.
    public var webSocketMaxQueue = 32
    public var webSocketMaxQueueBytes = 4 << 20

    public init(app: PyRef, rootPath: String, scheme: String) {
        self.app = app
        scope = ASGIScopeBuilder(keys: keys, rootPath: rootPath, scheme: scheme)
        // The process's native types exist before any worker thread does
        // (see ProcessObject).
        _ = ASGICallables.type
        ReadyAwaitable.prepare()
        clientDisconnected = Runtime.attribute("ClientDisconnected").take()  // kept for the gateway's life
    }

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
        let r = ASGIRequest(gateway: self, exchange: exchange, isHead: request.isHead)
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
    /// goes to `conversation.taskDone`. Consumes the three references.
    private func run(_ conversation: ASGIConversation, scope scopeDict: PyRef, receive: PyRef, send: PyRef) {
        let coroutine = pshim_call3(app, scopeDict, receive, send)
        Py.decref(scopeDict); Py.decref(receive); Py.decref(send)
        guard let coroutine else {
            // The call itself raised (a synchronous callable, wrong arity).
            let tb = takeTraceback()
            Log.error("the ASGI application raised \(tb.exceptionName): \(tb.message)\n\(tb.text)")
            conversation.taskDone(Py.none)
            return
        }
        guard let task = pshim_call1(createTask!, coroutine) else {
            Py.decref(coroutine)
            let tb = takeTraceback()
            Log.error("the ASGI application did not return an awaitable: \(tb.message)")
            conversation.taskDone(Py.none)
            return
        }
        Py.decref(coroutine)
        if let done = ASGICallables.make(.done, for: conversation) {
            if let result = PyObject_CallMethodOneArg(task, doneName, done) { Py.decref(result) } else { PyErr_Clear() }
            Py.decref(done)
        }
        Py.decref(task)
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
        PyDict_SetItem(scopeDict, keys.type, keys.websocket)
        PyDict_SetItem(scopeDict, keys.scheme, keys.ws)
        PyDict_DelItem(scopeDict, keys.method)
        let offered = PyList_New(0)!
        for p in subprotocols {
            if let s = Py.latin1(p) { PyList_Append(offered, s); Py.decref(s) }
        }
        PyDict_SetItem(scopeDict, keys.subprotocols, offered)
        Py.decref(offered)
        PyDict_SetItem(scopeDict, keys.extensions, webSocketExtensions)
        if let tls = request.peer.tls {
            let wss = Py.str("wss")
            PyDict_SetItem(scopeDict, keys.scheme, wss)
            Py.decref(wss)
            scope.setTLSExtension(scopeDict, tls)
        }
        run(ws, scope: scopeDict, receive: receive, send: send)
    }

    private lazy var webSocketExtensions: PyRef = {
        let ext = PyDict_New()!
        let empty = PyDict_New()!
        PyDict_SetItemString(ext, "websocket.http.response", empty)
        Py.decref(empty)
        return ext
    }()

    private func logFailure(_ what: String) {
        let tb = takeTraceback()
        Log.error("\(what): \(tb.exceptionName): \(tb.message)\n\(tb.text)")
    }

    // MARK: - Futures

    func newFuture() -> PyRef? {
        pshim_call0(createFuture!)
    }

    func isDone(_ future: PyRef) -> Bool {
        guard let r = PyObject_CallMethodNoArgs(future, doneQuery) else { PyErr_Clear(); return true }
        defer { Py.decref(r) }
        return r == Py.true
    }

    /// Completes `future` with `value` unless it was cancelled meanwhile.
    func resolve(_ future: PyRef, _ value: PyRef) {
        guard !isDone(future) else { return }
        if let r = PyObject_CallMethodOneArg(future, setResultName, value) { Py.decref(r) } else { logFailure("set_result") }
    }

    func reject(_ future: PyRef, with type: PyRef, _ message: String) {
        guard !isDone(future) else { return }
        let text = Py.str(message)
        defer { Py.decref(text) }
        guard let exc = pshim_call1(type, text) else { PyErr_Clear(); return }
        defer { Py.decref(exc) }
        if let r = PyObject_CallMethodOneArg(future, setExceptionName, exc) { Py.decref(r) } else { PyErr_Clear() }
    }

    /// Completes `future` with the pending Python exception.
    func fail(_ future: PyRef) {
        guard let exc = pshim_fetch_exception() else { return }
        defer { Py.decref(exc) }
        guard !isDone(future) else { return }
        if let r = PyObject_CallMethodOneArg(future, setExceptionName, exc) { Py.decref(r) } else { PyErr_Clear() }
    }

    /// The exception a finished task ended with, formatted; nil if it
    /// returned normally or was cancelled.
    func taskException(_ task: PyRef) -> PythonTraceback? {
        guard task != Py.none else { return nil }
        if let cancelled = pshim_call_method0(task, "cancelled") {
            defer { Py.decref(cancelled) }
            if cancelled == Py.true { return nil }
        } else {
            PyErr_Clear()
        }
        guard let exc = pshim_call_method0(task, "exception") else { PyErr_Clear(); return nil }
        if exc == Py.none { Py.decref(exc); return nil }
        pshim_restore_exception(exc)
        return takeTraceback()
    }
}
