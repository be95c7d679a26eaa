import CPython
import CPyShim
import Core
import PyBridge

/// One ASGI HTTP request: the state machine behind its `receive` and `send`.
///
/// Theory of operation. The application's task calls `receive()` and
/// `send()`; each returns an awaitable that is already complete when the
/// answer is known now (the usual case), or an asyncio future the transport
/// resolves later through `AsyncExchangeDelegate` (body arrived, output
/// drained, exchange ended). Response messages must come in order:
///
///     start ──▶ body* (more_body) ──▶ body (final) ──▶ [trailers*] ──▶ complete
///               └──▶ pathsend ───────────────────────┘
///
/// The head is held until the first body, pathsend or trailers message, so
/// it leaves with the first bytes (and a single final body gets an exact
/// Content-Length). Once the exchange has ended the request never touches
/// the transport again: `receive()` answers `http.disconnect`, `send()`
/// after a disconnect raises `OSError`.
final class ASGIRequest: AsyncExchangeDelegate, ASGIConversation {
    unowned(unsafe) let gateway: ASGIGateway
    private var exchange: AsyncExchange?
    private var isHead: Bool

    private var started = false
    private var headSent = false
    private var complete = false
    private var disconnected = false
    private var bodyDelivered = false
    private var taskFinished = false

    private var status = 0
    private var declaredLength: Int64?
    private var closeRequested = false
    private var trailers = false
    private var head = HeaderStore()
    private var trailerStore = HeaderStore()

    private var waiters = ASGIWaiters()

    init(gateway: ASGIGateway, exchange: AsyncExchange, isHead: Bool) {
        self.gateway = gateway
        self.exchange = exchange
        self.isHead = isHead
    }

    /// Readies a finished request for the next one (`ASGIRequestPool`):
    /// every field back to its initial value, the header stores keeping
    /// their capacity. Only for a request nothing else references.
    func reuse(exchange: AsyncExchange, isHead: Bool) {
        precondition(taskFinished && self.exchange == nil, "reusing a request still in use")
        self.exchange = exchange
        self.isHead = isHead
        started = false; headSent = false; complete = false; disconnected = false
        bodyDelivered = false; taskFinished = false
        status = 0; declaredLength = nil; closeRequested = false; trailers = false
        head.reset(); trailerStore.reset()
        waiters = ASGIWaiters()
    }

    /// The task ended and the transport let go: the pool may take it back
    /// once no Python object refers to it either.
    var isFinished: Bool { taskFinished && exchange == nil }

    private var keys: ASGIKeys { gateway.keys }

    // MARK: - receive()

    func receive() -> PyRef? {
        ASGIPendingReceive.awaitable(for: nextReceive(), of: self)
    }

    func receiveResumed() -> ReceiveStep {
        nextReceive()
    }

    /// The message a `receive()` gets now, or the future it waits on: for
    /// body bytes, or (body done) for the disconnect. Body bytes leave the
    /// transport only here, as the caller takes them (see
    /// `ASGIPendingReceive`).
    private func nextReceive() -> ReceiveStep {
        if disconnected || complete || exchange == nil {
            return step(disconnectMessage())
        }
        guard waiters.clearCancelledReceive(gateway) else { return .failed }
        if !bodyDelivered, let message = nextBodyMessage() {
            return .message(message)
        }
        if PyErr_Occurred() != nil { return .failed }
        guard let future = waiters.waitForReceive(gateway) else { return .failed }
        if !bodyDelivered { exchange?.wantBody() }
        return .wait(future)
    }

    /// The next `http.request` message if one can be made now; nil if the
    /// caller must wait (or with an exception set).
    private func nextBodyMessage() -> PyRef? {
        guard let exchange else { return disconnectMessage() }
        let size = min(max(exchange.bufferedBodyBytes, 1), 64 * 1024)
        guard let bytes = PyOwned(stealing: PyBytes_FromStringAndSize(nil, size)) else { return nil }
        let buffer = UnsafeMutableRawBufferPointer(start: pshim_bytes_data(bytes.ref), count: size)
        switch exchange.pollBody(into: buffer) {
        case .data(let n):
            let body: PyOwned
            if n != size {
                guard let shrunk = resizedBytes(bytes, n) else { return nil }
                body = shrunk
            } else {
                body = bytes
            }
            let more = !exchange.bodyComplete
            if !more { bodyDelivered = true }
            return requestMessage(body.ref, more: more)
        case .end:
            bodyDelivered = true
            return requestMessage(keys.emptyBytes, more: false)
        case .wait:
            return nil
        case .failed(let code):
            bodyDelivered = true
            // The client broke the body (400), stalled (408) or sent too much
            // (413): it gets that answer if nothing has been sent yet, and
            // the application sees the request end.
            if code != 0 && !headSent { respondWithError(code) }
            disconnected = true
            return disconnectMessage()
        }
    }

    private func requestMessage(_ body: PyRef, more: Bool) -> PyRef? {
        guard let d = PyDict_New() else { return nil }
        PyDict_SetItem(d, keys.type, keys.httpRequest)
        PyDict_SetItem(d, keys.body, body)
        PyDict_SetItem(d, keys.moreBody, more ? Py.true : Py.false)
        return d
    }

    private func disconnectMessage() -> PyRef? {
        guard let d = PyDict_New() else { return nil }
        PyDict_SetItem(d, keys.type, keys.httpDisconnect)
        return d
    }

    private func step(_ message: PyRef?) -> ReceiveStep {
        guard let message else { return .failed }
        return .message(message)
    }

    // MARK: - send()

    func send(_ message: PyRef) -> PyRef? {
        guard let typeItem = messageType(message, keys) else { return nil }
        let type = typeItem.ref  // typeItem holds it to the end of send()
        let ok: Bool
        if keys.same(type, keys.responseBody) {
            return sendBody(message)
        } else if keys.same(type, keys.responseStart) {
            ok = start(message)
        } else if keys.same(type, keys.responseTrailers) {
            return sendTrailers(message)
        } else if keys.same(type, keys.responsePathsend) {
            return sendPath(message)
        } else if keys.same(type, keys.responseEarlyHint) {
            ok = earlyHint(message)
        } else {
            Py.raise(Py.runtimeError, "unexpected ASGI message type \(Py.describe(type)) for an http scope")
            ok = false
        }
        return ok ? ReadyAwaitable.newNone() : nil
    }

    private func start(_ message: PyRef) -> Bool {
        guard !started else {
            Py.raise(Py.runtimeError, "http.response.start sent twice")
            return false
        }
        let statusItem = Py.dictItem(message, keys.status)
        guard let statusObj = statusItem.ref, pshim_long_check(statusObj) != 0,
              pshim_bool_check(statusObj) == 0 else {
            if PyErr_Occurred() == nil { Py.raise(Py.typeError, "http.response.start needs an int 'status'") }
            return false
        }
        let code = PyLong_AsLong(statusObj)
        guard code >= 200 && code <= 999 else {
            Py.raise(Py.valueError, "status \(code) is not a final status (200-999); use http.response.early_hint for 103")
            return false
        }
        // Loaded apart and kept only on success, in the storage of the
        // request's own store, which a reused request brings with its
        // capacity (ASGIRequestPool).
        var store = HeaderStore()
        swap(&store, &head)
        store.reset()
        let headersItem = Py.dictItem(message, keys.headers)
        if let headers = headersItem.ref {
            guard store.load(headers, context: "http.response.start") else { return false }
        } else if PyErr_Occurred() != nil {
            return false
        }
        let trailersItem = Py.dictItem(message, keys.trailers)
        if let t = trailersItem.ref {
            trailers = PyObject_IsTrue(t) == 1
        }
        if disconnected || exchange == nil {
            // Nothing to start; the application learns on its next body send.
        }
        status = code
        head = store
        declaredLength = store.contentLength
        closeRequested = store.close
        started = true
        return true
    }

    private func sendBody(_ message: PyRef) -> PyRef? {
        guard started else {
            Py.raise(Py.runtimeError, "http.response.body sent before http.response.start")
            return nil
        }
        guard !complete else {
            Py.raise(Py.runtimeError, "http.response.body sent after the response was complete")
            return nil
        }
        let bodyItem = Py.dictItem(message, keys.body)
        let b = bodyItem.ref
        if b == nil && PyErr_Occurred() != nil { return nil }
        if let b, pshim_bytes_check(b) == 0 && pshim_bytearray_check(b) == 0 {
            Py.raise(Py.typeError, "http.response.body 'body' must be bytes, not \(Py.typeName(b))")
            return nil
        }
        var more = false
        let moreBodyItem = Py.dictItem(message, keys.moreBody)
        if let m = moreBodyItem.ref { more = PyObject_IsTrue(m) == 1 }
        guard let b else { return sendBody(UnsafeRawBufferPointer(start: nil, count: 0), more: more) }
        return Py.withBytes(b) { sendBody($0, more: more) } ?? nil
    }

    private func sendBody(_ body: UnsafeRawBufferPointer, more: Bool) -> PyRef? {
        guard let exchange, !disconnected else { return clientGone() }
        if !headSent {
            guard emitHead(knownLength: more ? nil : Int64(body.count)) else { return clientGone() }
        }
        // The exchange holds the body to its declared Content-Length.
        if !more && !trailers { complete = true }
        return outcome(exchange.sendBody(body, final: !more))
    }

    private func sendTrailers(_ message: PyRef) -> PyRef? {
        guard started, trailers else {
            Py.raise(Py.runtimeError, "http.response.trailers sent without 'trailers': True in http.response.start")
            return nil
        }
        guard !complete else {
            Py.raise(Py.runtimeError, "http.response.trailers sent after the response was complete")
            return nil
        }
        let headersItem = Py.dictItem(message, keys.headers)
        if let headers = headersItem.ref {
            guard trailerStore.load(headers, context: "http.response.trailers", append: true) else { return nil }
        } else if PyErr_Occurred() != nil { return nil }
        var more = false
        let moreTrailersItem = Py.dictItem(message, keys.moreTrailers)
        if let m = moreTrailersItem.ref { more = PyObject_IsTrue(m) == 1 }
        if more { return ReadyAwaitable.newNone() }
        guard let exchange, !disconnected else { return clientGone() }
        if !headSent {
            guard emitHead(knownLength: nil) else { return clientGone() }
            _ = exchange.sendBody(UnsafeRawBufferPointer(start: nil, count: 0), final: false)
        }
        complete = true
        return trailerStore.withFields { outcome(exchange.sendTrailers($0)) }
    }

    private func sendPath(_ message: PyRef) -> PyRef? {
        guard started, !complete, !headSent else {
            Py.raise(Py.runtimeError, "http.response.pathsend must follow http.response.start and be the whole body")
            return nil
        }
        let pathItem = Py.dictItem(message, keys.path)
        guard let pathObj = pathItem.ref, pshim_unicode_check(pathObj) != 0,
              let path = Py.string(pathObj) else {
            if PyErr_Occurred() == nil { Py.raise(Py.typeError, "http.response.pathsend needs a str 'path'") }
            return nil
        }
        let fd = Files.openForReading(path)
        guard fd >= 0 else {
            Py.raise(Py.osError, "cannot open \(path) for http.response.pathsend")
            return nil
        }
        let size = Files.regularFileSize(fd)
        guard size >= 0 else {
            Files.close(fd)
            Py.raise(Py.valueError, "http.response.pathsend: \(path) is not a regular file")
            return nil
        }
        guard let exchange, !disconnected else { Files.close(fd); return clientGone() }
        guard emitHead(knownLength: size) else { Files.close(fd); return clientGone() }
        complete = !trailers
        // The exchange holds the file to a declared Content-Length.
        return outcome(exchange.sendFile(fd: fd, offset: 0, count: size))
    }

    private func earlyHint(_ message: PyRef) -> Bool {
        guard !headSent else { return true }  // too late to hint; harmless to drop
        let linksItem = Py.dictItem(message, keys.links)
        guard let links = linksItem.ref else {
            if PyErr_Occurred() == nil { Py.raise(Py.typeError, "http.response.early_hint needs 'links'") }
            return false
        }
        var store = HeaderStore()
        guard store.loadLinks(links) else { return false }
        guard let exchange, !disconnected else { return true }
        _ = store.withFields { exchange.sendInformational(status: 103, fields: $0) }
        return true
    }

    /// Hands the held head to the transport; false if the client is gone.
    private func emitHead(knownLength: Int64?) -> Bool {
        guard let exchange else { return false }
        headSent = true
        let reason = UnsafeRawBufferPointer(start: nil, count: 0)
        let outcome = head.withFields { fields in
            exchange.sendHead(ResponseHead(status: status, reason: reason, fields: fields,
                                           contentLength: declaredLength ?? knownLength, close: closeRequested),
                              trailers: trailers)
        }
        if case .closed = outcome { return false }
        return true
    }

    private func outcome(_ o: SendOutcome) -> PyRef? {
        if case .closed = o { disconnected = true }
        return waiters.awaitable(for: o, gateway)
    }

    private func clientGone() -> PyRef? {
        disconnected = true
        Py.raise(gateway.clientDisconnected, "the client disconnected")
        return nil
    }

    /// A response the server makes itself (500 after an application error,
    /// or the status owed for a broken body).
    private func respondWithError(_ code: Int) {
        guard let exchange, !headSent else { return }
        headSent = true
        started = true
        status = code
        complete = true
        let text = ReasonPhrase.reason(code)
        let contentType: StaticString = "content-type", plain: StaticString = "text/plain; charset=utf-8"
        var field = ResponseField(name: UnsafeRawBufferPointer(start: contentType.utf8Start, count: contentType.utf8CodeUnitCount),
                                  value: UnsafeRawBufferPointer(start: plain.utf8Start, count: plain.utf8CodeUnitCount))
        let body = UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        _ = withUnsafeMutablePointer(to: &field) { f in
            exchange.sendHead(ResponseHead(status: code, reason: body, fields: UnsafeBufferPointer(start: f, count: 1),
                                           contentLength: Int64(body.count), close: code != 500),
                              trailers: false)
        }
        _ = exchange.sendBody(body, final: true)
    }

    // MARK: - Transport events

    func bodyReady() {
        // The waiting receive() takes the body when it resumes; one
        // cancelled meanwhile leaves it for the next receive().
        guard !bodyDelivered, let waiter = waiters.takeReceive(gateway) else { return }
        gateway.resolve(waiter.ref, Py.none)
    }

    func outputDrained() {
        waiters.drained(gateway)
    }

    func exchangeEnded(disconnected gone: Bool) {
        exchange = nil
        if gone && !complete { disconnected = true }
        // The waiting receive() resumes to http.disconnect.
        if let waiter = waiters.takeReceive(gateway) { gateway.resolve(waiter.ref, Py.none) }
        if disconnected { waiters.failSend(gateway) } else { waiters.drained(gateway) }
    }

    /// The application's task finished: log its failure, and make sure the
    /// response is finished one way or another.
    func taskDone(_ outcome: PyRef) {
        taskFinished = true
        let failure = gateway.taskException(outcome)
        if let failure {
            if complete {
                // The whole response is with the transport (perhaps still
                // held for this loop iteration's write): it goes out.
                Log.error("the ASGI application raised \(failure.exceptionName) after its response: \(failure.message)\n\(failure.text)")
            } else if let exchange, headSent {
                Log.error("the ASGI application raised \(failure.exceptionName) after the response began; connection aborted\n\(failure.text)")
                exchange.abort()
            } else if exchange != nil {
                Log.error("the ASGI application raised \(failure.exceptionName): \(failure.message)\n\(failure.text)")
                respondWithError(500)
            } else if !disconnected {
                Log.error("the ASGI application raised \(failure.exceptionName): \(failure.message)\n\(failure.text)")
            }
        } else if let exchange, !complete {
            if headSent {
                Log.error("the ASGI application returned before finishing its response; connection aborted")
                exchange.abort()
            } else {
                Log.error("the ASGI application returned without sending a response")
                respondWithError(500)
            }
        }
        waiters.releaseAll()
        gateway.requests.giveBack(self)
    }
}

/// `bytes` made `count` long (`_PyBytes_Resize` frees or moves the object,
/// so the reference goes in and a new one comes out); nil with MemoryError
/// set, the object freed.
@inline(__always) private func resizedBytes(_ bytes: consuming PyOwned, _ count: Int) -> PyOwned? {
    var o: PyRef? = bytes.take()
    guard _PyBytes_Resize(&o, count) == 0, let resized = o else { return nil }
    return PyOwned(stealing: resized)
}
