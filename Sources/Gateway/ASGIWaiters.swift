import CPython
import CPyShim
import PyBridge

/// The futures an ASGI conversation hands out when `receive()` or `send()`
/// must wait, shared by `ASGIRequest` and `ASGIWebSocket`. Each is held
/// with a reference of our own (the application holds the one it awaits)
/// until the transport resolves it or the conversation ends.
struct ASGIWaiters: ~Copyable {
    private var receive: PyOwned?
    private var send: PyOwned?

    /// Before a new `receive()`: a previous one the application cancelled
    /// (asyncio.wait_for, a framework polling for disconnect) left a
    /// finished future, which is forgotten (it carried no message: see
    /// `ASGIPendingReceive`); one still pending is an error (false, with
    /// RuntimeError set).
    mutating func clearCancelledReceive(_ gateway: ASGIGateway) -> Bool {
        guard let waiter = receive.ref else { return true }
        guard gateway.isDone(waiter) else {
            Py.raise(Py.runtimeError, "receive() called again while a previous receive() is still pending")
            return false
        }
        receive = nil
        return true
    }

    /// A new future for a waiting `receive()` (a new reference, returned to
    /// the caller; the waiter keeps its own).
    mutating func waitForReceive(_ gateway: ASGIGateway) -> PyRef? {
        guard let future = gateway.newFuture() else { return nil }
        receive = PyOwned(borrowing: future)
        return future
    }

    /// Takes the pending receive waiter if it is still wanted, to be
    /// resolved with None ("ready": the message is made when the waiting
    /// coroutine resumes); one that was cancelled meanwhile is dropped (nil).
    mutating func takeReceive(_ gateway: ASGIGateway) -> PyOwned? {
        guard let waiter = receive.take() else { return nil }
        if gateway.isDone(waiter.ref) { return nil }
        return waiter
    }

    /// What `send()` returns for the transport's verdict: at once, a future
    /// resolved when output drains, or ClientDisconnected raised.
    mutating func awaitable(for outcome: SendOutcome, _ gateway: ASGIGateway) -> PyRef? {
        switch outcome {
        case .done:
            return ReadyAwaitable.newNone()
        case .closed:
            Py.raise(gateway.clientDisconnected, "the client disconnected")
            return nil
        case .backpressure:
            guard let future = gateway.newFuture() else { return nil }
            send = PyOwned(borrowing: future)
            return future
        }
    }

    /// Output drained: the waiting `send()` completes.
    mutating func drained(_ gateway: ASGIGateway) {
        guard let waiter = send.take() else { return }
        gateway.resolve(waiter.ref, Py.none)
    }

    /// The connection is gone: a waiting `send()` raises ClientDisconnected.
    mutating func failSend(_ gateway: ASGIGateway) {
        guard let waiter = send.take() else { return }
        gateway.reject(waiter.ref, with: gateway.clientDisconnected, "the client disconnected")
    }

    mutating func releaseAll() {
        receive = nil
        send = nil
    }
}

/// The `type` of an ASGI message dict (a strong reference: the dict is the
/// application's); nil with TypeError set otherwise.
func messageType(_ message: PyRef, _ keys: ASGIKeys) -> PyOwned? {
    guard pshim_dict_check(message) != 0 else {
        Py.raise(Py.typeError, "send() takes a dict message, not \(Py.typeName(message))")
        return nil
    }
    guard let type = Py.dictItem(message, keys.type), pshim_unicode_check(type.ref) != 0 else {
        if PyErr_Occurred() == nil { Py.raise(Py.typeError, "the message has no 'type' str") }
        return nil
    }
    return type
}
