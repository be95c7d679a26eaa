import CPython
import CPyShim
import PyBridge

/// `start_response` and the `write` callable it returns, as C-level
/// callables bound to their own gateway and to one request by token (see
/// WSGIInput).
enum WSGICallables {
    typealias Payload = WSGIInput.Payload

    /// Once per process (see `ProcessObject`); the instances are per request.
    static let startResponseType = ProcessObject({
        var s = NativeTypeBuilder(name: "peregrine.StartResponse", payload: MemoryLayout<Payload>.stride)
        s.slot(Py_tp_call, unsafeBitCast(startResponse, to: UnsafeMutableRawPointer.self))
        s.slot(Py_tp_dealloc, unsafeBitCast(WSGIInput.dealloc, to: UnsafeMutableRawPointer.self))
        return s.build()
    }())
    static let writeType = ProcessObject({
        var w = NativeTypeBuilder(name: "peregrine.Write", payload: MemoryLayout<Payload>.stride)
        w.slot(Py_tp_call, unsafeBitCast(write, to: UnsafeMutableRawPointer.self))
        w.slot(Py_tp_dealloc, unsafeBitCast(WSGIInput.dealloc, to: UnsafeMutableRawPointer.self))
        return w.build()
    }())

    static func gateway(_ object: PyRef?, _ what: String) -> WSGIGateway? {
        guard let object, let g = nativePayload(object, as: Payload.self).pointee.gateway,
              nativePayload(object, as: Payload.self).pointee.token == g.token else {
            Py.raise(Py.runtimeError, "\(what) called after its request ended")
            return nil
        }
        return g
    }

    /// start_response(status, response_headers, exc_info=None)
    static let startResponse: @convention(c) (PyRef?, PyRef?, PyRef?) -> PyRef? = { me, args, kwargs in
        guard let g = gateway(me, "start_response") else { return nil }
        // Positional arguments are borrowed from the call's tuple (immutable,
        // held by the caller for the call); keyword arguments come from a
        // dict the caller may own, so each is a strong reference. Both kinds
        // are held as `PyOwned` until the call returns.
        var status: PyOwned?
        var headers: PyOwned?
        var excInfo: PyOwned?
        let n = args.map { pshim_tuple_size($0) } ?? 0
        if n >= 1 { status = PyOwned(borrowing: pshim_tuple_item(args, 0)!) }
        if n >= 2 { headers = PyOwned(borrowing: pshim_tuple_item(args, 1)!) }
        if n >= 3 { excInfo = PyOwned(borrowing: pshim_tuple_item(args, 2)!) }
        if let kwargs, PyDict_Size(kwargs) > 0 {
            for (name, slot) in [("status", 0), ("response_headers", 1), ("headers", 1), ("exc_info", 2)] {
                if let v = Py.dictItem(kwargs, name) {
                    switch slot {
                    case 0: status = consume v
                    case 1: headers = consume v
                    default: excInfo = consume v
                    }
                } else if PyErr_Occurred() != nil {
                    return nil
                }
            }
        }
        guard n <= 3, let statusObj = status.ref, let headersObj = headers.ref else {
            Py.raise(Py.typeError, "start_response(status, response_headers, exc_info=None)")
            return nil
        }
        let exc = excInfo.ref
        guard g.startResponse(status: statusObj, headers: headersObj, excInfo: exc == Py.none ? nil : exc) else {
            return nil
        }
        return g.writeObject()  // start_response's result, the caller's
    }

    /// write(data): the legacy imperative output path of PEP 3333.
    static let write: @convention(c) (PyRef?, PyRef?, PyRef?) -> PyRef? = { me, args, kwargs in
        guard let g = gateway(me, "write") else { return nil }
        // `data` is borrowed from the call's own (immutable) argument tuple.
        guard let args, pshim_tuple_size(args) == 1, kwargs == nil || PyDict_Size(kwargs) == 0,
              let data = pshim_tuple_item(args, 0) else {
            Py.raise(Py.typeError, "write(data) takes exactly one bytes argument")
            return nil
        }
        return g.writeCallable(data) ? Py.newNone() : nil
    }
}
