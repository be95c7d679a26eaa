import CPython
import CPyShim
import PyBridge

/// `start_response` and the `write` callable it returns, as C-level
/// callables bound to one request by token (see WSGIInput).
enum WSGICallables {
    struct Payload { var token: UInt64 }

    nonisolated(unsafe) static var startResponseType: PyRef?
    nonisolated(unsafe) static var writeType: PyRef?

    static func makeTypes() {
        var s = NativeTypeBuilder(name: "peregrine.StartResponse", payload: MemoryLayout<Payload>.stride)
        s.slot(Py_tp_call, unsafeBitCast(startResponse, to: UnsafeMutableRawPointer.self))
        startResponseType = s.build()
        var w = NativeTypeBuilder(name: "peregrine.Write", payload: MemoryLayout<Payload>.stride)
        w.slot(Py_tp_call, unsafeBitCast(write, to: UnsafeMutableRawPointer.self))
        writeType = w.build()
    }

    static func make(_ type: PyRef, token: UInt64) -> PyRef? {
        guard let o = nativeAllocate(type) else { return nil }
        nativePayload(o, as: Payload.self).pointee.token = token
        return o
    }

    static func gateway(_ object: PyRef?, _ what: String) -> WSGIGateway? {
        guard let object, let g = WSGIGateway.current,
              nativePayload(object, as: Payload.self).pointee.token == g.token else {
            Py.raise(Py.runtimeError, "\(what) called after its request ended")
            return nil
        }
        return g
    }

    /// start_response(status, response_headers, exc_info=None)
    static let startResponse: @convention(c) (PyRef?, PyRef?, PyRef?) -> PyRef? = { me, args, kwargs in
        guard let g = gateway(me, "start_response") else { return nil }
        var status: PyRef?
        var headers: PyRef?
        var excInfo: PyRef?
        let n = args.map { pshim_tuple_size($0) } ?? 0
        if n >= 1 { status = pshim_tuple_item(args, 0) }
        if n >= 2 { headers = pshim_tuple_item(args, 1) }
        if n >= 3 { excInfo = pshim_tuple_item(args, 2) }
        if let kwargs, PyDict_Size(kwargs) > 0 {
            for (name, slot) in [("status", 0), ("response_headers", 1), ("headers", 1), ("exc_info", 2)] {
                if let v = PyDict_GetItemString(kwargs, name) {
                    switch slot {
                    case 0: status = v
                    case 1: headers = v
                    default: excInfo = v
                    }
                }
            }
        }
        guard n <= 3, let status, let headers else {
            Py.raise(Py.typeError, "start_response(status, response_headers, exc_info=None)")
            return nil
        }
        guard g.startResponse(status: status, headers: headers, excInfo: excInfo == Py.none ? nil : excInfo) else {
            return nil
        }
        return make(writeType!, token: g.token)
    }

    /// write(data): the legacy imperative output path of PEP 3333.
    static let write: @convention(c) (PyRef?, PyRef?, PyRef?) -> PyRef? = { me, args, kwargs in
        guard let g = gateway(me, "write") else { return nil }
        guard let args, pshim_tuple_size(args) == 1, kwargs == nil || PyDict_Size(kwargs) == 0,
              let data = pshim_tuple_item(args, 0) else {
            Py.raise(Py.typeError, "write(data) takes exactly one bytes argument")
            return nil
        }
        return g.writeCallable(data) ? Py.newNone() : nil
    }
}
