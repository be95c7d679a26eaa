import CPython
import CPyShim
import PyBridge

/// One ASGI connection scope's state machine (an HTTP request, a
/// WebSocket): what `receive`, `send` and the task's end do.
protocol ASGIConversation: AnyObject {
    func receive() -> PyRef?
    func send(_ message: PyRef) -> PyRef?
    func taskDone(_ task: PyRef)
}

/// The C-level `receive` and `send` callables handed to an ASGI application,
/// and the done-callback of its task. Each holds a strong reference to its
/// conversation (`ASGIRequest`, `ASGIWebSocket`); that, not a connection, is
/// what they reach, and a conversation whose exchange has ended never
/// touches a connection again.
enum ASGICallables {
    enum Kind: Int { case receive, send, done }
    struct Payload {
        var request: Unmanaged<AnyObject>?
        var kind: Int
    }

    nonisolated(unsafe) static var type: PyRef?

    static func install() {
        var b = NativeTypeBuilder(name: "peregrine.ASGICallable", payload: MemoryLayout<Payload>.stride)
        b.slot(Py_tp_call, unsafeBitCast(call, to: UnsafeMutableRawPointer.self))
        b.slot(Py_tp_dealloc, unsafeBitCast(dealloc, to: UnsafeMutableRawPointer.self))
        type = b.build()
    }

    static func make(_ kind: Kind, for request: ASGIConversation) -> PyRef? {
        guard let o = nativeAllocate(type!) else { return nil }
        let p = nativePayload(o, as: Payload.self)
        p.pointee.request = Unmanaged.passRetained(request as AnyObject)
        p.pointee.kind = kind.rawValue
        return o
    }

    private static let call: @convention(c) (PyRef?, PyRef?, PyRef?) -> PyRef? = { me, args, kwargs in
        let p = nativePayload(me!, as: Payload.self).pointee
        guard let request = p.request?.takeUnretainedValue() as? ASGIConversation else {
            Py.raise(Py.runtimeError, "ASGI callable used after release")
            return nil
        }
        let n = args.map { pshim_tuple_size($0) } ?? 0
        if let kwargs, PyDict_Size(kwargs) > 0 {
            Py.raise(Py.typeError, "ASGI callables take positional arguments only")
            return nil
        }
        switch Kind(rawValue: p.kind)! {
        case .receive:
            guard n == 0 else { Py.raise(Py.typeError, "receive() takes no arguments"); return nil }
            return request.receive()
        case .send:
            guard n == 1 else { Py.raise(Py.typeError, "send(message) takes exactly one argument"); return nil }
            return request.send(pshim_tuple_item(args, 0)!)
        case .done:
            guard n == 1 else { Py.raise(Py.typeError, "done callback takes the task"); return nil }
            request.taskDone(pshim_tuple_item(args, 0)!)
            return Py.newNone()
        }
    }

    private static let dealloc: @convention(c) (PyRef?) -> Void = { me in
        let p = nativePayload(me!, as: Payload.self)
        p.pointee.request?.release()
        p.pointee.request = nil
        pshim_heap_dealloc(me!)
    }
}
