import CPython
import CPyShim
import PyBridge

/// What a conversation answers a `receive()` with: a message now, or a
/// future to wait on first. Each reference is new (the caller's); `failed`
/// means a Python exception is set.
enum ReceiveStep {
    case message(PyRef)
    case wait(PyRef)
    case failed
}

/// The awaitable a `receive()` that must wait returns. The message is made
/// (body bytes taken from the transport, a WebSocket message dequeued) when
/// the awaiting coroutine resumes and takes it, not when the transport
/// resolves the future it waits on.
///
/// Why: the ASGI spec says no message may be lost, and a coroutine can be
/// cancelled after its future completed but before it resumed. Since
/// Python 3.12, `asyncio.wait_for` is `asyncio.timeout()` around the await:
/// its deadline falling between the transport's `set_result` and the task's
/// wake-up makes `Task.cancel` find the future done, so the task resumes
/// with CancelledError thrown in and the future's result dropped. anyio
/// cancel scopes and `task.cancel()` meet the same window. The future
/// therefore carries no message, only "something is ready" (None): a
/// cancelled waiter leaves the body or message where it was, for the next
/// `receive()`.
///
/// It delegates to the future's own iterator (so a task waits on the
/// future as for `await future`), and when that returns asks the
/// conversation for the message; if nothing is ready after all (the
/// readiness was spurious, or a second caller took it), it waits on the new
/// future the conversation gives instead. It has no `throw`: an exception
/// thrown into the coroutine (the cancellation) is raised at its `await`,
/// and nothing is taken.
enum ASGIPendingReceive {
    /// Lives in the Python object's memory (zeroed by tp_alloc, set up by
    /// `make`, torn down by `dealloc`).
    struct Payload {
        var conversation: ASGIConversation?
        /// The iterator of the future waited on (`future.__await__()`).
        var iterator: PyRef?
    }

    /// Once per process (see `ProcessObject`); each instance carries its
    /// own conversation.
    static let type = ProcessObject({
        var b = NativeTypeBuilder(name: "peregrine.PendingReceive", payload: MemoryLayout<Payload>.stride)
        b.slot(Py_am_await, unsafeBitCast(selfFunction, to: UnsafeMutableRawPointer.self))
        b.slot(Py_tp_iter, unsafeBitCast(selfFunction, to: UnsafeMutableRawPointer.self))
        b.slot(Py_tp_iternext, unsafeBitCast(next, to: UnsafeMutableRawPointer.self))
        b.slot(Py_am_send, unsafeBitCast(send, to: UnsafeMutableRawPointer.self))
        b.slot(Py_tp_dealloc, unsafeBitCast(dealloc, to: UnsafeMutableRawPointer.self))
        return b.build()
    }())

    /// What `receive()` returns for `step`: a ready awaitable for a message,
    /// a pending receive for a future (both references consumed); nil with
    /// the exception set.
    static func awaitable(for step: ReceiveStep, of conversation: ASGIConversation) -> PyRef? {
        switch step {
        case .message(let message):
            return ReadyAwaitable.make(stealing: message)
        case .wait(let future):
            let iterator = PyObject_GetIter(future)
            Py.decref(future)
            guard let iterator else { return nil }
            guard let o = nativeAllocate(type.ref) else { Py.decref(iterator); return nil }
            nativePayload(o, as: Payload.self).initialize(to: Payload(conversation: conversation, iterator: iterator))
            return o
        case .failed:
            return nil
        }
    }

    private static let selfFunction: @convention(c) (PyRef?) -> PyRef? = { me in
        Py.incref(me!)
        return me
    }

    /// One step of the await: forwards `value` to the future's iterator;
    /// when the future completes, takes the message from the conversation.
    private static let send: @convention(c) (PyRef?, PyRef?, UnsafeMutablePointer<PyRef?>?) -> PySendResult = { me, value, result in
        let p = nativePayload(me!, as: Payload.self)
        var value = value ?? Py.none
        while true {
            guard let iterator = p.pointee.iterator, let conversation = p.pointee.conversation else {
                Py.raise(Py.runtimeError, "receive() awaited again after it completed")
                return error
            }
            var out: PyRef?
            let sent = PyIter_Send(iterator, value, &out)
            if sent.rawValue != returned.rawValue {
                // Still waiting (the future goes to the task), or the
                // future was cancelled: either way as `await future` does.
                if sent.rawValue == error.rawValue { finish(p) }
                result!.pointee = out
                return sent
            }
            // The future completed and the coroutine resumes now: the
            // message is taken at this point, not before.
            Py.xdecref(out)
            Py.decref(iterator)
            p.pointee.iterator = nil
            switch conversation.receiveResumed() {
            case .message(let message):
                finish(p)
                result!.pointee = message
                return returned
            case .wait(let future):
                p.pointee.iterator = PyObject_GetIter(future)
                Py.decref(future)
                if p.pointee.iterator == nil { finish(p); result!.pointee = nil; return error }
                value = Py.none
            case .failed:
                finish(p)
                result!.pointee = nil
                return error
            }
        }
    }

    /// The old iteration protocol (`yield from` over `__iter__`): a step
    /// sending None, the message carried by StopIteration.
    private static let next: @convention(c) (PyRef?) -> PyRef? = { me in
        var out: PyRef?
        let sent = send(me, Py.none, &out)
        guard sent.rawValue == returned.rawValue else { return out }
        pshim_stop_iteration(out!)
        Py.decref(out!)
        return nil
    }

    /// Done: the conversation and the iterator are let go at once (the
    /// object itself may live on in a frame or a traceback).
    private static func finish(_ p: UnsafeMutablePointer<Payload>) {
        Py.xdecref(p.pointee.iterator)
        p.pointee.iterator = nil
        p.pointee.conversation = nil
    }

    private static let returned = PySendResult(rawValue: PySendResult.RawValue(pshim_gen_return()))
    private static let error = PySendResult(rawValue: PySendResult.RawValue(pshim_gen_error()))

    private static let dealloc: @convention(c) (PyRef?) -> Void = { me in
        let p = nativePayload(me!, as: Payload.self)
        Py.xdecref(p.pointee.iterator)
        p.deinitialize(count: 1)
        pshim_heap_dealloc(me!)
    }
}
