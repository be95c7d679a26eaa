import CPython
import CPyShim

/// An awaitable that is already complete: `await x` returns its value at
/// once, without a future, a loop round-trip or a Python frame.
///
/// ASGI's `send()` and `receive()` return one whenever the answer is known
/// synchronously (the common case); only a caller that must wait gets a real
/// future. It implements `am_send` (the fast path coroutines use) and
/// `tp_iternext` (for anything iterating it the old way).
public enum ReadyAwaitable {
    struct Payload { var value: PyRef? }

    /// The type, once per process (see `ProcessObject`): it holds no state.
    private static let type = ProcessObject({
        var b = NativeTypeBuilder(name: "peregrine.Ready", payload: MemoryLayout<Payload>.stride)
        b.slot(Py_am_await, unsafeBitCast(selfFunction, to: UnsafeMutableRawPointer.self))
        b.slot(Py_tp_iter, unsafeBitCast(selfFunction, to: UnsafeMutableRawPointer.self))
        b.slot(Py_tp_iternext, unsafeBitCast(next, to: UnsafeMutableRawPointer.self))
        b.slot(Py_am_send, unsafeBitCast(send, to: UnsafeMutableRawPointer.self))
        b.slot(Py_tp_dealloc, unsafeBitCast(dealloc, to: UnsafeMutableRawPointer.self))
        return b.build()
    }())
    /// The shared instance whose value is None: immutable and stateless, so
    /// once per process like the type, and never released.
    private static let none = ProcessObject(make(stealing: Py.newNone())!)

    /// Makes the type and the shared instance now (on the main thread, at
    /// startup: see `ProcessObject`); later calls do nothing.
    public static func prepare() {
        _ = none
    }

    /// A ready awaitable resolving to `value` (the reference is consumed,
    /// by hand: it is the caller's, given up like one a C call steals).
    public static func make(stealing value: PyRef) -> PyRef? {
        guard let o = nativeAllocate(type.ref) else { Py.decref(value); return nil }
        nativePayload(o, as: Payload.self).pointee.value = value
        return o
    }

    /// A new reference to the shared None-valued instance.
    public static func newNone() -> PyRef {
        Py.incref(none.ref)
        return none.ref
    }

    private static let selfFunction: @convention(c) (PyRef?) -> PyRef? = { me in
        Py.incref(me!)
        return me
    }

    private static let next: @convention(c) (PyRef?) -> PyRef? = { me in
        let value = nativePayload(me!, as: Payload.self).pointee.value ?? Py.none
        pshim_stop_iteration(value)
        return nil
    }

    private static let send: @convention(c) (PyRef?, PyRef?, UnsafeMutablePointer<PyRef?>?) -> PySendResult = { me, _, result in
        let value = nativePayload(me!, as: Payload.self).pointee.value ?? Py.none
        Py.incref(value)
        result!.pointee = value
        return PySendResult(rawValue: PySendResult.RawValue(pshim_gen_return()))
    }

    /// The value lives in the Python object's memory, not in a Swift owner.
    private static let dealloc: @convention(c) (PyRef?) -> Void = { me in
        let p = nativePayload(me!, as: Payload.self)
        Py.xdecref(p.pointee.value)
        p.pointee.value = nil
        pshim_heap_dealloc(me!)
    }
}
