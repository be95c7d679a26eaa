import CPython
import CPyShim
import PyBridge

/// `wsgi.input`: a C-level stream over the request body.
///
/// Reads pull from the connection on demand, so an upload is never held in
/// memory whole unless the application asks for all of it with `read()`.
/// `readline` needs look-ahead, which lives in the gateway's body buffer.
/// Each object carries its own gateway (the worker's: a second worker in
/// the process has another) and the request it belongs to (`token`); after
/// that request ends every method raises instead of touching the
/// connection, which by then may carry another request.
enum WSGIInput {
    /// Lives in the Python object's memory: zeroed by tp_alloc, set up by
    /// `WSGIObjectSlot` (which sets a new token when it reuses the object),
    /// torn down by `dealloc`.
    struct Payload {
        var gateway: WSGIGateway?
        var token: UInt64
    }

    /// Once per process (see `ProcessObject`); the instances are per request.
    static let type = ProcessObject({
        var b = NativeTypeBuilder(name: "peregrine.Input", payload: MemoryLayout<Payload>.stride)
        b.method("read", read, doc: "read(size=-1) -> bytes: up to size bytes of the body, all of it if size < 0")
        b.method("readline", readline, doc: "readline(size=-1) -> bytes: one line, including its b'\\n'")
        b.method("readlines", readlines, doc: "readlines(hint=-1) -> list of lines")
        b.slot(Py_tp_iter, unsafeBitCast(iter, to: UnsafeMutableRawPointer.self))
        b.slot(Py_tp_iternext, unsafeBitCast(next, to: UnsafeMutableRawPointer.self))
        b.slot(Py_tp_dealloc, unsafeBitCast(dealloc, to: UnsafeMutableRawPointer.self))
        return b.build()
    }())

    /// The gateway serving this object's request, or nil with an exception set.
    static func gateway(_ object: PyRef?) -> WSGIGateway? {
        guard let object, let g = nativePayload(object, as: Payload.self).pointee.gateway,
              nativePayload(object, as: Payload.self).pointee.token == g.token else {
            Py.raise(Py.valueError, "wsgi.input used after its request ended")
            return nil
        }
        return g
    }

    /// An optional size argument: None or a missing argument mean -1.
    static func sizeArgument(_ args: UnsafePointer<PyRef?>?, _ nargs: Py_ssize_t, _ name: String) -> Int? {
        if nargs > 1 {
            Py.raise(Py.typeError, "\(name)() takes at most 1 argument (\(nargs) given)")
            return nil
        }
        guard nargs == 1, let a = args?[0], a != Py.none else { return -1 }
        let v = PyLong_AsSsize_t(a)
        if v == -1 && PyErr_Occurred() != nil { return nil }
        return v
    }

    static let read: FastMethod = { me, args, nargs in
        guard let g = gateway(me), let size = sizeArgument(args, nargs, "read") else { return nil }
        return g.readBody(size: size)
    }

    static let readline: FastMethod = { me, args, nargs in
        guard let g = gateway(me), let size = sizeArgument(args, nargs, "readline") else { return nil }
        return g.readLine(limit: size)
    }

    static let readlines: FastMethod = { me, args, nargs in
        guard let g = gateway(me), let hint = sizeArgument(args, nargs, "readlines") else { return nil }
        guard let list = PyOwned(stealing: PyList_New(0)) else { return nil }
        var total = 0
        while true {
            guard let line = PyOwned(stealing: g.readLine(limit: -1)) else { return nil }
            let n = pshim_bytes_size(line.ref)
            if n == 0 { break }
            PyList_Append(list.ref, line.ref)
            total += n
            if hint > 0 && total >= hint { break }
        }
        return list.take()
    }

    static let dealloc: @convention(c) (PyRef?) -> Void = { me in
        nativePayload(me!, as: Payload.self).deinitialize(count: 1)
        pshim_heap_dealloc(me!)
    }

    static let iter: @convention(c) (PyRef?) -> PyRef? = { me in
        Py.incref(me!)
        return me
    }

    static let next: @convention(c) (PyRef?) -> PyRef? = { me in
        guard let g = gateway(me), let line = PyOwned(stealing: g.readLine(limit: -1)) else { return nil }
        if pshim_bytes_size(line.ref) == 0 { return nil }  // StopIteration, without an exception object
        return line.take()
    }
}
