import CPython
import CPyShim
import PyBridge

/// One of the native objects a WSGI request hands out (wsgi.input,
/// start_response, write), kept from one request to the next.
///
/// Making and freeing three objects per request (allocation, payload set-up
/// with a retain of the gateway, then the reverse) was about a twentieth of
/// a small request's user-space instructions. When only the slot still
/// holds its object (reference count 1), nothing outside can observe it, so
/// giving it the next request's token is the same as a fresh object (for
/// wsgi.input, the environ template's reference is the server's too). An
/// object the application kept keeps its old token, so it raises as stale
/// (WSGIInput.gateway); the slot drops its reference to it and makes a new
/// one.
///
/// The object's payload holds the gateway strongly, so a gateway and its
/// slots never free each other: a gateway lives as long as its worker
/// context, which is the process (Entry.swift).
struct WSGIObjectSlot: ~Copyable {
    private let type: ProcessObject
    private var object: PyRef?
    /// References the server itself holds between requests: the slot's,
    /// and for wsgi.input the environ template's (WSGIEnvironBuilder puts
    /// the object there on every request).
    private let ownReferences: Int

    init(_ type: ProcessObject, ownReferences: Int = 1) {
        self.type = type
        self.ownReferences = ownReferences
    }

    /// The slot's object, bound to `token`; a borrowed reference valid while
    /// the slot keeps it (until the next call), or nil with an exception set.
    mutating func object(for gateway: WSGIGateway, token: UInt64) -> PyRef? {
        if let o = object {
            if pshim_refcnt(o) <= ownReferences {
                nativePayload(o, as: WSGIInput.Payload.self).pointee.token = token
                return o
            }
            object = nil
            Py.decref(o)
        }
        guard let o = nativeAllocate(type.ref) else { return nil }
        nativePayload(o, as: WSGIInput.Payload.self).initialize(to: WSGIInput.Payload(gateway: gateway, token: token))
        object = o
        return o
    }

    deinit { Py.xdecref(object) }
}
