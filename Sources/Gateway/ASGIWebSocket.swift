import CPython
import CPyShim
import Core
import PyBridge

/// One ASGI WebSocket connection (ASGI WebSocket spec 2.4): the state
/// machine behind its `receive` and `send`.
///
///     connect ─▶ (accept ─▶ messages both ways ─▶ close) | deny ─▶ disconnect
///
/// `receive()` first answers `websocket.connect`; after `websocket.accept`
/// it answers each message the peer sent (queued up to `maxQueue`
/// messages / `maxQueueBytes`; past that the transport stops reading, so a
/// fast sender meets TCP backpressure rather than our memory) and finally
/// `websocket.disconnect` with the close code. `send()` of a close before
/// accept denies the handshake with 403; the denial extension
/// (`websocket.http.response.*`) sends a response of the application's own.
final class ASGIWebSocket: WebSocketDelegate, ASGIConversation {
    unowned(unsafe) let gateway: ASGIGateway
    private var exchange: WebSocketExchange?
    private var keys: ASGIKeys { gateway.keys }

    private var connectDelivered = false
    private var accepted = false
    private var denied = false
    private var denyStarted = false
    private var closeSent = false
    private var ended = false
    private var endCode = 1006
    private var endReason: PyOwned?
    /// Messages made for the application and not yet received.
    private var inbox = ASGIInbox()
    private var waiters = ASGIWaiters()


    init(gateway: ASGIGateway, exchange: WebSocketExchange) {
        self.gateway = gateway
        self.exchange = exchange
    }

    // MARK: - receive()

    func receive() -> PyRef? {
        ASGIPendingReceive.awaitable(for: nextReceive(), of: self)
    }

    func receiveResumed() -> ReceiveStep {
        nextReceive()
    }

    /// The message a `receive()` gets now, or the future it waits on. A
    /// message leaves the queue only here, as the caller takes it (see
    /// `ASGIPendingReceive`).
    private func nextReceive() -> ReceiveStep {
        guard waiters.clearCancelledReceive(gateway) else { return .failed }
        if !connectDelivered {
            connectDelivered = true
            return .message(message(keys.wsConnect))
        }
        if let next = dequeue() { return .message(next) }
        if ended || denied { return disconnectMessage().map { .message($0) } ?? .failed }
        guard let future = waiters.waitForReceive(gateway) else { return .failed }
        return .wait(future)
    }

    private func dequeue() -> PyRef? {
        guard let (m, resume) = inbox.removeFirst(maxCount: gateway.webSocketMaxQueue,
                                                  maxBytes: gateway.webSocketMaxQueueBytes) else { return nil }
        if resume { exchange?.resumeReading() }
        return m
    }

    private func message(_ type: PyRef) -> PyRef {
        let d = PyDict_New()!
        PyDict_SetItem(d, keys.type, type)
        return d
    }

    private func disconnectMessage() -> PyRef? {
        let d = message(keys.wsDisconnect)
        let code = PyOwned(stealing: Py.int(endCode))
        PyDict_SetItem(d, keys.code, code.ref)
        PyDict_SetItem(d, keys.reason, endReason.ref ?? keys.emptyString)
        return d
    }

    // MARK: - send()

    func send(_ message: PyRef) -> PyRef? {
        guard let typeItem = messageType(message, keys) else { return nil }
        let type = typeItem.ref  // typeItem holds it to the end of send()
        if keys.same(type, keys.wsSend) { return sendData(message) }
        if keys.same(type, keys.wsAccept) { return accept(message) }
        if keys.same(type, keys.wsClose) { return close(message) }
        if keys.same(type, keys.wsResponseStart) { return denyStart(message) }
        if keys.same(type, keys.wsResponseBody) { return denyBody(message) }
        Py.raise(Py.runtimeError, "unexpected ASGI message type \(Py.describe(type)) for a websocket scope")
        return nil
    }

    private func accept(_ message: PyRef) -> PyRef? {
        guard !accepted && !denied && !closeSent else {
            Py.raise(Py.runtimeError, "websocket.accept sent after the handshake was answered")
            return nil
        }
        var subprotocol: UnsafeRawBufferPointer?
        let subprotocolItem = Py.dictItem(message, keys.subprotocol)
        if let s = subprotocolItem.ref, s != Py.none {
            guard pshim_unicode_check(s) != 0 else {
                Py.raise(Py.typeError, "websocket.accept 'subprotocol' must be a str or None")
                return nil
            }
            let view = latin1View(s)
            guard ResponseFields.isToken(view) else {
                Py.raise(Py.valueError, "websocket.accept 'subprotocol' must be a token, got \(Py.describe(s))")
                return nil
            }
            subprotocol = view
        } else if PyErr_Occurred() != nil { return nil }
        var store = HeaderStore()
        let headersItem = Py.dictItem(message, keys.headers)
        if let headers = headersItem.ref {
            guard store.load(headers, context: "websocket.accept") else { return nil }
        } else if PyErr_Occurred() != nil { return nil }
        accepted = true
        guard let exchange, !ended else { return ReadyAwaitable.newNone() }
        return outcome(store.withFields { exchange.acceptWebSocket(subprotocol: subprotocol, fields: $0) })
    }

    private func sendData(_ message: PyRef) -> PyRef? {
        guard accepted else {
            Py.raise(Py.runtimeError, "websocket.send before websocket.accept")
            return nil
        }
        guard !closeSent else {
            Py.raise(Py.runtimeError, "websocket.send after websocket.close")
            return nil
        }
        let bytesItem = Py.dictItem(message, keys.bytes)
        let b = bytesItem.ref.flatMap { $0 == Py.none ? nil : $0 }
        let textItem = Py.dictItem(message, keys.text)
        let t = textItem.ref.flatMap { $0 == Py.none ? nil : $0 }
        if PyErr_Occurred() != nil { return nil }
        guard (b == nil) != (t == nil) else {
            Py.raise(Py.valueError, "websocket.send needs exactly one of 'bytes' and 'text'")
            return nil
        }
        guard let exchange, !ended else { return clientGone() }
        if let b {
            guard pshim_bytes_check(b) != 0 || pshim_bytearray_check(b) != 0 else {
                Py.raise(Py.typeError, "websocket.send 'bytes' must be bytes")
                return nil
            }
            return Py.withBytes(b) { outcome(exchange.sendMessage($0, text: false)) } ?? nil
        }
        guard pshim_unicode_check(t!) != 0 else {
            Py.raise(Py.typeError, "websocket.send 'text' must be a str")
            return nil
        }
        var size: Py_ssize_t = 0
        guard let utf8 = PyUnicode_AsUTF8AndSize(t!, &size) else { return nil }
        return outcome(exchange.sendMessage(UnsafeRawBufferPointer(start: utf8, count: size), text: true))
    }

    private func close(_ message: PyRef) -> PyRef? {
        guard !closeSent && !denied else { return ReadyAwaitable.newNone() }  // closing twice is harmless
        var code = 1000
        let codeItem = Py.dictItem(message, keys.code)
        if let c = codeItem.ref, c != Py.none {
            code = PyLong_AsLong(c)
            if PyErr_Occurred() != nil { return nil }
        }
        var reason = UnsafeRawBufferPointer(start: nil, count: 0)
        var size: Py_ssize_t = 0
        let reasonItem = Py.dictItem(message, keys.reason)
        if let r = reasonItem.ref, r != Py.none {
            guard pshim_unicode_check(r) != 0, let utf8 = PyUnicode_AsUTF8AndSize(r, &size) else {
                if PyErr_Occurred() == nil { Py.raise(Py.typeError, "websocket.close 'reason' must be a str") }
                return nil
            }
            // A close frame holds at most 123 bytes of reason, and they must
            // stay valid UTF-8 (RFC 6455 §5.5.1): cut at a character boundary.
            var n = min(size, 123)
            let bytes = UnsafeRawBufferPointer(start: utf8, count: size)
            while n < size && n > 0 && bytes[n] & 0xC0 == 0x80 { n -= 1 }
            reason = UnsafeRawBufferPointer(start: utf8, count: n)
        }
        if !accepted {
            // A close before accept refuses the handshake (ASGI: 403).
            return deny(status: 403)
        }
        closeSent = true
        guard let exchange, !ended else { return ReadyAwaitable.newNone() }
        return outcome(exchange.sendClose(code: code, reason: reason))
    }

    private func deny(status: Int) -> PyRef? {
        denied = true
        guard let exchange, !ended else { return ReadyAwaitable.newNone() }
        let head = ResponseHead(status: status, reason: UnsafeRawBufferPointer(start: nil, count: 0),
                                fields: UnsafeBufferPointer(start: nil, count: 0), contentLength: 0, close: true)
        _ = exchange.denyWebSocket(head)
        return outcome(exchange.denyBody(UnsafeRawBufferPointer(start: nil, count: 0), final: true))
    }

    private func denyStart(_ message: PyRef) -> PyRef? {
        guard !accepted && !denyStarted && !denied else {
            Py.raise(Py.runtimeError, "websocket.http.response.start after the handshake was answered")
            return nil
        }
        let statusItem = Py.dictItem(message, keys.status)
        guard let statusObj = statusItem.ref, pshim_long_check(statusObj) != 0 else {
            if PyErr_Occurred() == nil { Py.raise(Py.typeError, "websocket.http.response.start needs an int 'status'") }
            return nil
        }
        let status = PyLong_AsLong(statusObj)
        guard status >= 200 && status <= 999 else {
            Py.raise(Py.valueError, "websocket.http.response.start status \(status) is not a final status")
            return nil
        }
        var store = HeaderStore()
        let headersItem = Py.dictItem(message, keys.headers)
        if let headers = headersItem.ref {
            guard store.load(headers, context: "websocket.http.response.start") else { return nil }
        } else if PyErr_Occurred() != nil { return nil }
        denyStarted = true
        denied = true
        guard let exchange, !ended else { return ReadyAwaitable.newNone() }
        let length = store.contentLength
        return outcome(store.withFields { fields in
            exchange.denyWebSocket(ResponseHead(status: status, reason: UnsafeRawBufferPointer(start: nil, count: 0),
                                                fields: fields, contentLength: length, close: true))
        })
    }

    private func denyBody(_ message: PyRef) -> PyRef? {
        guard denyStarted else {
            Py.raise(Py.runtimeError, "websocket.http.response.body before websocket.http.response.start")
            return nil
        }
        var body = UnsafeRawBufferPointer(start: nil, count: 0)
        let bodyItem = Py.dictItem(message, keys.body)
        if let b = bodyItem.ref {
            guard pshim_bytes_check(b) != 0 else {
                Py.raise(Py.typeError, "websocket.http.response.body 'body' must be bytes")
                return nil
            }
            body = UnsafeRawBufferPointer(start: pshim_bytes_data(b), count: pshim_bytes_size(b))
        } else if PyErr_Occurred() != nil { return nil }
        var more = false
        let moreBodyItem = Py.dictItem(message, keys.moreBody)
        if let m = moreBodyItem.ref { more = PyObject_IsTrue(m) == 1 }
        guard let exchange, !ended else { return ReadyAwaitable.newNone() }
        return outcome(exchange.denyBody(body, final: !more))
    }

    private func outcome(_ o: SendOutcome) -> PyRef? {
        waiters.awaitable(for: o, gateway)
    }

    private func clientGone() -> PyRef? {
        Py.raise(gateway.clientDisconnected, "the client disconnected")
        return nil
    }

    // MARK: - Transport events

    func messageReceived(_ bytes: UnsafeRawBufferPointer, text: Bool) {
        let m = PyOwned(stealing: message(keys.wsReceive))
        guard let data = PyOwned(stealing: text
            ? PyUnicode_DecodeUTF8(bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count, "strict")
            : Py.bytes(bytes)) else { PyErr_Clear(); return }
        PyDict_SetItem(m.ref, text ? keys.text : keys.bytes, data.ref)
        inbox.append(m.take(), bytes: bytes.count)
        // A waiting receive() takes the message when it resumes (one
        // cancelled meanwhile leaves it queued for the next); it is on its
        // way out, so it does not count towards pausing.
        if let waiter = waiters.takeReceive(gateway) {
            gateway.resolve(waiter.ref, Py.none)
            return
        }
        if inbox.pauseIfFull(maxCount: gateway.webSocketMaxQueue, maxBytes: gateway.webSocketMaxQueueBytes) {
            exchange?.pauseReading()
        }
    }

    func outputDrained() {
        waiters.drained(gateway)
    }

    func webSocketEnded(code: Int, reason: UnsafeRawBufferPointer) {
        guard !ended else { return }
        ended = true
        exchange = nil
        endCode = code
        endReason = PyOwned(stealing: PyUnicode_DecodeUTF8(reason.baseAddress?.assumingMemoryBound(to: CChar.self),
                                                           reason.count, "replace"))
        if endReason == nil { PyErr_Clear() }
        // The waiting receive() resumes to what is queued, then websocket.disconnect.
        if let waiter = waiters.takeReceive(gateway) { gateway.resolve(waiter.ref, Py.none) }
        waiters.failSend(gateway)
    }

    /// The application's task ended. Before an answer to the handshake: an
    /// error is a 500, a plain return a 403. After accept: an error closes
    /// with 1011, a return without closing with 1000.
    func taskDone(_ outcome: PyRef) {
        let failure = gateway.taskException(outcome)
        if let failure {
            Log.error("the ASGI application raised \(failure.exceptionName) in a websocket: \(failure.message)\n\(failure.text)")
        }
        if let exchange, !ended {
            if !accepted && !denied {
                _ = deny(status: failure == nil ? 403 : 500)
            } else if accepted && !closeSent {
                closeSent = true
                _ = exchange.sendClose(code: failure == nil ? 1000 : 1011, reason: UnsafeRawBufferPointer(start: nil, count: 0))
            } else if denyStarted && exchange === self.exchange {
                _ = exchange.denyBody(UnsafeRawBufferPointer(start: nil, count: 0), final: true)
            }
        }
        waiters.releaseAll()
        inbox.releaseAll()
    }
}
