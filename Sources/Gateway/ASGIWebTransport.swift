import CPython
import CPyShim
import Core
import PyBridge

/// One ASGI WebTransport session (TRANSPORT.md, "The WebTransport ASGI
/// extension"; compatible with aioquic's example server): the state
/// machine behind its `receive` and `send`.
///
///     connect ─▶ accept ─▶ streams and datagrams both ways ─▶ disconnect
///          └───▶ close (403) | reject(status) ─────────────────▶ disconnect
///
/// `receive()` first answers `webtransport.connect`, then what the peer
/// sent (queued up to the gateway's WebSocket queue bounds in messages and
/// bytes; past them the transport stops reading the session's streams, so
/// the client is held by QUIC flow control, not our memory) and finally
/// `webtransport.disconnect`, which it keeps answering — an application
/// that loops on `receive()` ignoring it (aioquic's demo echo does) is
/// stopped with RuntimeError after `maxDisconnectRepeats` answers.
final class ASGIWebTransport: WebTransportDelegate, ASGIConversation {
    unowned(unsafe) let gateway: ASGIGateway
    private var exchange: WebTransportExchange?
    private var keys: ASGIKeys { gateway.keys }
    private var wt: WebTransportKeys { gateway.webTransportKeys }

    private var connectDelivered = false
    private var accepted = false
    private var refused = false
    private var closeSent = false
    private var ended = false
    private var endCode: UInt32 = 0
    private var endReason: PyOwned?
    private var disconnectRepeats = 0
    /// Messages made for the application and not yet received.
    private var inbox = ASGIInbox()
    private var waiters = ASGIWaiters()

    static let maxDisconnectRepeats = 100

    init(gateway: ASGIGateway, exchange: WebTransportExchange) {
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

    private func nextReceive() -> ReceiveStep {
        guard waiters.clearCancelledReceive(gateway) else { return .failed }
        if !connectDelivered {
            connectDelivered = true
            return .message(message(wt.connect))
        }
        if let (m, resume) = inbox.removeFirst(maxCount: gateway.webSocketMaxQueue,
                                               maxBytes: gateway.webSocketMaxQueueBytes) {
            if resume { exchange?.resumeReading() }
            return .message(m)
        }
        if ended || refused {
            disconnectRepeats += 1
            guard disconnectRepeats <= ASGIWebTransport.maxDisconnectRepeats else {
                Py.raise(Py.runtimeError, "receive() called again and again after webtransport.disconnect")
                return .failed
            }
            return .message(disconnectMessage())
        }
        guard let future = waiters.waitForReceive(gateway) else { return .failed }
        return .wait(future)
    }

    private func message(_ type: PyRef) -> PyRef {
        let d = PyDict_New()!
        PyDict_SetItem(d, keys.type, type)
        return d
    }

    private func set(_ d: PyRef, _ key: PyRef, _ value: PyRef?) {
        guard let value = PyOwned(stealing: value) else { PyErr_Clear(); return }
        PyDict_SetItem(d, key, value.ref)
    }

    private func disconnectMessage() -> PyRef {
        let d = message(wt.disconnect)
        set(d, keys.code, Py.int(Int(endCode)))
        PyDict_SetItem(d, keys.reason, endReason.ref ?? keys.emptyString)
        return d
    }

    /// Queues `m` (a new reference) for the application.
    private func deliver(_ m: PyRef, bytes: Int = 0) {
        inbox.append(m, bytes: bytes)
        if let waiter = waiters.takeReceive(gateway) {
            gateway.resolve(waiter.ref, Py.none)
            return
        }
        if inbox.pauseIfFull(maxCount: gateway.webSocketMaxQueue, maxBytes: gateway.webSocketMaxQueueBytes) {
            exchange?.pauseReading()
        }
    }

    // MARK: - send()

    func send(_ message: PyRef) -> PyRef? {
        guard let typeItem = messageType(message, keys) else { return nil }
        let type = typeItem.ref
        let result: PyRef?
        if keys.same(type, wt.streamSend) {
            result = streamSend(message)
        } else if keys.same(type, wt.datagramSend) {
            result = datagramSend(message)
        } else if keys.same(type, wt.accept) {
            result = accept(message)
        } else if keys.same(type, wt.close) {
            result = close(message)
        } else if keys.same(type, wt.reject) {
            result = reject(message)
        } else if keys.same(type, wt.streamReset) || keys.same(type, wt.streamStop) {
            result = resetOrStop(message, reset: keys.same(type, wt.streamReset))
        } else if keys.same(type, wt.streamOpen) {
            result = open(message)
        } else {
            Py.raise(Py.runtimeError, "unexpected ASGI message type \(Py.describe(type)) for a webtransport scope")
            result = nil
        }
        if result == nil { misuse() }
        return result
    }

    /// An exception leaves send(): an accepted session is closed with code 0
    /// and "application error" (the contract's rule for misuse).
    private func misuse() {
        guard accepted, !closeSent, !ended, let exchange else { return }
        closeSent = true
        // The exception stays the application's: kept aside while closing
        // calls back into Python (the disconnect for a waiting receive).
        let raised = pshim_fetch_exception()
        let reason: StaticString = "application error"
        let text = UnsafeRawBufferPointer(start: reason.utf8Start, count: reason.utf8CodeUnitCount)
        sessionEnded(code: 0, reason: text)
        _ = exchange.closeSession(code: 0, reason: text)
        if let raised { pshim_restore_exception(raised) }
    }

    private func answered(_ what: String) -> Bool {
        guard !accepted && !refused && !closeSent else {
            Py.raise(Py.runtimeError, "\(what) sent after the session was answered")
            return true
        }
        return false
    }

    private func accept(_ message: PyRef) -> PyRef? {
        guard !answered("webtransport.accept") else { return nil }
        var subprotocol: UnsafeRawBufferPointer?
        let subprotocolItem = Py.dictItem(message, keys.subprotocol)
        if let s = subprotocolItem.ref, s != Py.none {
            guard pshim_unicode_check(s) != 0 else {
                Py.raise(Py.typeError, "webtransport.accept 'subprotocol' must be a str or None")
                return nil
            }
            let view = latin1View(s)
            guard ResponseFields.isToken(view) else {
                Py.raise(Py.valueError, "webtransport.accept 'subprotocol' must be a token, got \(Py.describe(s))")
                return nil
            }
            subprotocol = view
        } else if PyErr_Occurred() != nil { return nil }
        var store = HeaderStore()
        let headersItem = Py.dictItem(message, keys.headers)
        if let headers = headersItem.ref {
            guard store.load(headers, context: "webtransport.accept") else { return nil }
        } else if PyErr_Occurred() != nil { return nil }
        accepted = true
        guard let exchange, !ended else { return ReadyAwaitable.newNone() }
        return outcome(store.withFields { exchange.acceptSession(subprotocol: subprotocol, fields: $0) })
    }

    private func reject(_ message: PyRef) -> PyRef? {
        guard !answered("webtransport.reject") else { return nil }
        let statusItem = Py.dictItem(message, keys.status)
        guard let statusObj = statusItem.ref, pshim_long_check(statusObj) != 0 else {
            if PyErr_Occurred() == nil { Py.raise(Py.typeError, "webtransport.reject needs an int 'status'") }
            return nil
        }
        let status = PyLong_AsLong(statusObj)
        guard status >= 400 && status <= 599 else {
            Py.raise(Py.valueError, "webtransport.reject status \(status) is not a 4xx or 5xx")
            return nil
        }
        var store = HeaderStore()
        let headersItem = Py.dictItem(message, keys.headers)
        if let headers = headersItem.ref {
            guard store.load(headers, context: "webtransport.reject") else { return nil }
        } else if PyErr_Occurred() != nil { return nil }
        return refuse(status: status, store: store)
    }

    private func refuse(status: Int, store: HeaderStore = HeaderStore()) -> PyRef? {
        refused = true
        guard let exchange, !ended else { return ReadyAwaitable.newNone() }
        let o = store.withFields { exchange.rejectSession(status: status, fields: $0) }
        sessionEnded(code: 0, reason: UnsafeRawBufferPointer(start: nil, count: 0))
        return outcome(o)
    }

    private func close(_ message: PyRef) -> PyRef? {
        guard !closeSent && !refused else { return ReadyAwaitable.newNone() }  // closing twice is harmless
        var code: UInt32 = 0
        let codeItem = Py.dictItem(message, keys.code)
        if let c = codeItem.ref, c != Py.none {
            let v = PyLong_AsLongLong(c)
            if PyErr_Occurred() != nil { return nil }
            guard v >= 0 && v <= Int64(UInt32.max) else {
                Py.raise(Py.valueError, "webtransport.close 'code' must fit in 32 bits, got \(v)")
                return nil
            }
            code = UInt32(v)
        } else if PyErr_Occurred() != nil { return nil }
        var reason = UnsafeRawBufferPointer(start: nil, count: 0)
        var size: Py_ssize_t = 0
        let reasonItem = Py.dictItem(message, keys.reason)
        if let r = reasonItem.ref, r != Py.none {
            guard pshim_unicode_check(r) != 0, let utf8 = PyUnicode_AsUTF8AndSize(r, &size) else {
                if PyErr_Occurred() == nil { Py.raise(Py.typeError, "webtransport.close 'reason' must be a str") }
                return nil
            }
            reason = UnsafeRawBufferPointer(start: utf8, count: size)  // the registry cuts it to 1024 bytes
        } else if PyErr_Occurred() != nil { return nil }
        // Before accept a close refuses the session (aioquic: 403).
        guard accepted else { return refuse(status: 403) }
        closeSent = true
        guard let exchange, !ended else { return ReadyAwaitable.newNone() }
        // Our own close ends the session for the application too, with
        // our code and reason (before the transport reports its end).
        sessionEnded(code: code, reason: reason)
        return outcome(exchange.closeSession(code: code, reason: reason))
    }

    private func sessionOpen(_ what: String) -> Bool {
        guard accepted else {
            Py.raise(Py.runtimeError, "\(what) before webtransport.accept")
            return false
        }
        return true
    }

    private func streamID(_ message: PyRef, _ what: String) -> UInt64? {
        let item = Py.dictItem(message, wt.stream)
        guard let s = item.ref, pshim_long_check(s) != 0 else {
            if PyErr_Occurred() == nil { Py.raise(Py.typeError, "\(what) needs an int 'stream'") }
            return nil
        }
        let v = PyLong_AsLongLong(s)
        if PyErr_Occurred() != nil { return nil }
        guard v >= 0 else {
            Py.raise(Py.valueError, "\(what) 'stream' \(v) is no stream")
            return nil
        }
        return UInt64(v)
    }

    private func streamSend(_ message: PyRef) -> PyRef? {
        guard sessionOpen("webtransport.stream.send"), let id = streamID(message, "webtransport.stream.send") else { return nil }
        let dataItem = Py.dictItem(message, wt.data)
        guard let data = dataItem.ref, pshim_bytes_check(data) != 0 || pshim_bytearray_check(data) != 0 else {
            if PyErr_Occurred() == nil { Py.raise(Py.typeError, "webtransport.stream.send 'data' must be bytes") }
            return nil
        }
        var end = false
        let endItem = Py.dictItem(message, wt.end)
        if let e = endItem.ref { end = PyObject_IsTrue(e) == 1 } else if PyErr_Occurred() != nil { return nil }
        // Late sends after the session ended are dropped (the contract).
        guard let exchange, !ended, !closeSent else { return ReadyAwaitable.newNone() }
        let sent = Py.withBytes(data) { exchange.sendStream(id, $0, end: end) } ?? nil
        guard let sent else {
            if PyErr_Occurred() == nil { Py.raise(Py.valueError, "webtransport.stream.send: stream \(id) is not a stream of this session") }
            return nil
        }
        return outcome(sent)
    }

    private func resetOrStop(_ message: PyRef, reset: Bool) -> PyRef? {
        let what = reset ? "webtransport.stream.reset" : "webtransport.stream.stop"
        guard sessionOpen(what), let id = streamID(message, what) else { return nil }
        let codeItem = Py.dictItem(message, keys.code)
        var code: UInt32 = 0
        if let c = codeItem.ref, c != Py.none {
            let v = PyLong_AsLongLong(c)
            if PyErr_Occurred() != nil { return nil }
            guard v >= 0 && v <= Int64(UInt32.max) else {
                Py.raise(Py.valueError, "\(what) 'code' must fit in 32 bits, got \(v)")
                return nil
            }
            code = UInt32(v)
        } else if PyErr_Occurred() != nil { return nil }
        guard let exchange, !ended, !closeSent else { return ReadyAwaitable.newNone() }
        guard reset ? exchange.resetStream(id, code: code) : exchange.stopStream(id, code: code) else {
            Py.raise(Py.valueError, "\(what): stream \(id) is not a stream of this session")
            return nil
        }
        return ReadyAwaitable.newNone()
    }

    /// Tags of `webtransport.stream.open` messages waiting for their
    /// stream, each a reference of our own (released when answered or at
    /// `taskDone`).
    private var openTags: [Int: PyRef] = [:]
    private var nextToken = 0

    private func open(_ message: PyRef) -> PyRef? {
        guard sessionOpen("webtransport.stream.open") else { return nil }
        let uniItem = Py.dictItem(message, wt.unidirectional)
        let unidirectional = uniItem.ref.map { PyObject_IsTrue($0) == 1 } ?? false
        if PyErr_Occurred() != nil { return nil }
        let tagItem = Py.dictItem(message, wt.tag)
        if PyErr_Occurred() != nil { return nil }
        guard let exchange, !ended, !closeSent else { return ReadyAwaitable.newNone() }
        nextToken += 1
        let tag = tagItem.ref ?? Py.none
        Py.incref(tag)
        openTags[nextToken] = tag
        guard exchange.openStream(unidirectional: unidirectional, token: nextToken) else {
            openTags.removeValue(forKey: nextToken).map { Py.decref($0) }
            Py.raise(Py.runtimeError, "webtransport.stream.open: the session is over")
            return nil
        }
        return ReadyAwaitable.newNone()
    }

    private func datagramSend(_ message: PyRef) -> PyRef? {
        guard sessionOpen("webtransport.datagram.send") else { return nil }
        let dataItem = Py.dictItem(message, wt.data)
        guard let data = dataItem.ref, pshim_bytes_check(data) != 0 || pshim_bytearray_check(data) != 0 else {
            if PyErr_Occurred() == nil { Py.raise(Py.typeError, "webtransport.datagram.send 'data' must be bytes") }
            return nil
        }
        if let exchange, !ended, !closeSent { _ = Py.withBytes(data) { exchange.sendDatagram($0) } }
        return ReadyAwaitable.newNone()
    }

    private func outcome(_ o: SendOutcome) -> PyRef? {
        // A session that ended meanwhile drops what is sent (the contract).
        if case .closed = o { return ReadyAwaitable.newNone() }
        return waiters.awaitable(for: o, gateway)
    }

    // MARK: - Transport events

    func streamReceived(_ id: UInt64, _ bytes: UnsafeRawBufferPointer, end: Bool, unidirectional: Bool, openedByPeer: Bool) {
        guard !ended, let data = PyOwned(stealing: Py.bytes(bytes)) else { PyErr_Clear(); return }
        let m = message(wt.streamReceive)
        set(m, wt.stream, Py.int(Int(id)))
        PyDict_SetItem(m, wt.data, data.ref)
        PyDict_SetItem(m, wt.end, end ? Py.true : Py.false)
        PyDict_SetItem(m, wt.unidirectional, unidirectional ? Py.true : Py.false)
        PyDict_SetItem(m, wt.openedByPeer, openedByPeer ? Py.true : Py.false)
        deliver(m, bytes: bytes.count)
    }

    private func streamEvent(_ type: PyRef, _ id: UInt64, code: UInt32) {
        guard !ended else { return }
        let m = message(type)
        set(m, wt.stream, Py.int(Int(id)))
        set(m, keys.code, Py.int(Int(code)))
        deliver(m)
    }

    func streamReset(_ id: UInt64, code: UInt32) { streamEvent(wt.streamReset, id, code: code) }
    func streamStopped(_ id: UInt64, code: UInt32) { streamEvent(wt.streamStop, id, code: code) }

    func streamOpened(_ id: UInt64, unidirectional: Bool, token: Int) {
        let tag = openTags.removeValue(forKey: token)
        defer { Py.xdecref(tag) }
        guard !ended else { return }
        let m = message(wt.streamOpened)
        set(m, wt.stream, Py.int(Int(id)))
        PyDict_SetItem(m, wt.unidirectional, unidirectional ? Py.true : Py.false)
        PyDict_SetItem(m, wt.tag, tag ?? Py.none)
        deliver(m)
    }

    func datagramReceived(_ bytes: UnsafeRawBufferPointer) -> Bool {
        // The queue is full (reading paused): dropped rather than held.
        guard !ended, !inbox.paused, let data = PyOwned(stealing: Py.bytes(bytes)) else { PyErr_Clear(); return false }
        let m = message(wt.datagramReceive)
        PyDict_SetItem(m, wt.data, data.ref)
        deliver(m, bytes: bytes.count)
        return true
    }

    func sessionDraining() {
        guard !ended else { return }
        deliver(message(wt.drain))
    }

    func outputDrained() {
        waiters.drained(gateway)
    }

    func sessionEnded(code: UInt32, reason: UnsafeRawBufferPointer) {
        guard !ended else { return }
        ended = true
        exchange = nil
        endCode = code
        endReason = PyOwned(stealing: PyUnicode_DecodeUTF8(reason.baseAddress?.assumingMemoryBound(to: CChar.self),
                                                           reason.count, "replace"))
        if endReason == nil { PyErr_Clear() }
        if let waiter = waiters.takeReceive(gateway) { gateway.resolve(waiter.ref, Py.none) }
        // A send waiting for output to drain completes: the session is over
        // and what it sends is dropped.
        waiters.drained(gateway)
    }

    /// The application's task ended. Unanswered: an error or a plain return
    /// refuses with 500. Accepted: the session is closed (code 0).
    func taskDone(_ outcome: PyRef) {
        let failure = gateway.taskException(outcome)
        if let failure {
            Log.error("the ASGI application raised \(failure.exceptionName) in a webtransport session: \(failure.message)\n\(failure.text)")
        }
        if let exchange, !ended {
            if !accepted && !refused {
                _ = exchange.rejectSession(status: 500, fields: UnsafeBufferPointer(start: nil, count: 0))
            } else if accepted && !closeSent {
                closeSent = true
                _ = exchange.closeSession(code: 0, reason: UnsafeRawBufferPointer(start: nil, count: 0))
            }
        }
        exchange = nil
        ended = true
        waiters.releaseAll()
        for tag in openTags.values { Py.decref(tag) }
        openTags.removeAll()
        inbox.releaseAll()
    }
}

/// Interned message types and keys of the WebTransport extension.
struct WebTransportKeys {
    let webtransport = Py.intern("webtransport")
    let connect = Py.intern("webtransport.connect")
    let accept = Py.intern("webtransport.accept")
    let close = Py.intern("webtransport.close")
    let reject = Py.intern("webtransport.reject")
    let disconnect = Py.intern("webtransport.disconnect")
    let drain = Py.intern("webtransport.drain")
    let streamReceive = Py.intern("webtransport.stream.receive")
    let streamSend = Py.intern("webtransport.stream.send")
    let streamReset = Py.intern("webtransport.stream.reset")
    let streamStop = Py.intern("webtransport.stream.stop")
    let streamOpen = Py.intern("webtransport.stream.open")
    let streamOpened = Py.intern("webtransport.stream.opened")
    let datagramReceive = Py.intern("webtransport.datagram.receive")
    let datagramSend = Py.intern("webtransport.datagram.send")
    let stream = Py.intern("stream")
    let data = Py.intern("data")
    let end = Py.intern("end")
    let unidirectional = Py.intern("unidirectional")
    let openedByPeer = Py.intern("opened_by_peer")
    let tag = Py.intern("tag")
    let connectMethod = Py.intern("CONNECT")
}
