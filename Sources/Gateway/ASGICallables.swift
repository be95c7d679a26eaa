import CPython
import CPyShim
import PyBridge

/// One ASGI connection scope's state machine (an HTTP request, a
/// WebSocket): what `receive`, `send` and the task's end do.
protocol ASGIConversation: AnyObject {
    func receive() -> PyRef?
    /// A waiting `receive()` resumes (the future it waited on completed):
    /// the message it takes now, or a new future to wait on.
    func receiveResumed() -> ReceiveStep
    func send(_ message: PyRef) -> PyRef?
    /// The application's task ended: `outcome` is None or the exception it
    /// raised (see `run_asgi`, `ASGIGateway.taskException`).
    func taskDone(_ outcome: PyRef)
}

/// The C-level `receive` and `send` callables handed to an ASGI application,
/// and the `done` its task (`run_asgi`) calls at its end. Each holds a strong reference to its
/// conversation (`ASGIRequest`, `ASGIWebSocket`); that, not a connection, is
/// what they reach, and a conversation whose exchange has ended never
/// touches a connection again.
enum ASGICallables {
    enum Kind: Int { case receive, send, done }
    /// Lives in the Python object's memory (zeroed by tp_alloc, set up by
    /// `make`, torn down by `dealloc`). The conversation is kept as the
    /// protocol existential itself: casting an AnyObject back to the
    /// protocol on every call was a run-time conformance lookup, some 600
    /// instructions per receive/send.
    struct Payload {
        var conversation: ASGIConversation?
        var kind: Int
    }

    /// Once per process (see `ProcessObject`); each instance carries its
    /// own conversation, so nothing here is shared between workers.
    static let type = ProcessObject({
        var b = NativeTypeBuilder(name: "peregrine.ASGICallable", payload: MemoryLayout<Payload>.stride)
        b.slot(Py_tp_call, unsafeBitCast(call, to: UnsafeMutableRawPointer.self))
        b.slot(Py_tp_dealloc, unsafeBitCast(dealloc, to: UnsafeMutableRawPointer.self))
        return b.build()
    }())

    static func make(_ kind: Kind, for request: ASGIConversation) -> PyOwned? {
        guard let o = nativeAllocate(type.ref) else { return nil }
        nativePayload(o, as: Payload.self).initialize(to: Payload(conversation: request, kind: kind.rawValue))
        return PyOwned(stealing: o)
    }

    private static let call: @convention(c) (PyRef?, PyRef?, PyRef?) -> PyRef? = { me, args, kwargs in
        let p = nativePayload(me!, as: Payload.self)
        guard let request = p.pointee.conversation else {
            Py.raise(Py.runtimeError, "ASGI callable used after release")
            return nil
        }
        let n = args.map { pshim_tuple_size($0) } ?? 0
        if let kwargs, PyDict_Size(kwargs) > 0 {
            Py.raise(Py.typeError, "ASGI callables take positional arguments only")
            return nil
        }
        switch Kind(rawValue: p.pointee.kind)! {
        case .receive:
            guard n == 0 else { Py.raise(Py.typeError, "receive() takes no arguments"); return nil }
            return request.receive()
        case .send:
            guard n == 1 else { Py.raise(Py.typeError, "send(message) takes exactly one argument"); return nil }
            return request.send(pshim_tuple_item(args, 0)!)
        case .done:
            guard n == 1 else { Py.raise(Py.typeError, "done(outcome) takes None or the exception"); return nil }
            request.taskDone(pshim_tuple_item(args, 0)!)
            return Py.newNone()
        }
    }

    private static let dealloc: @convention(c) (PyRef?) -> Void = { me in
        nativePayload(me!, as: Payload.self).deinitialize(count: 1)
        pshim_heap_dealloc(me!)
    }
}
