import CPython
import CPyShim

/// A borrowed or owned `PyObject *`. Ownership is tracked by the holder:
/// `PyRef` is a plain pointer, and the types that own references
/// (`PyOwned`) release them exactly once.
public typealias PyRef = UnsafeMutablePointer<PyObject>

/// A strong reference released when the owner goes away; move-only, so the
/// compiler proves the decref happens once.
///
/// What is still decref'd by hand in the gateways is one of: a reference
/// kept in a field past the call that made it (a gateway's or request's
/// cache, a future waiting for the transport), one given away to a C call
/// that steals it or returned to Python (`take()` hands it over), or an
/// element of a collection of them (a WebSocket's message queue).
@frozen public struct PyOwned: ~Copyable {
    public let ref: PyRef

    /// Takes over a new reference (from a call that returns one).
    @inlinable public init(stealing ref: PyRef) { self.ref = ref }

    /// Takes over the result of a call that returns a new reference or
    /// NULL (with an exception set): nil for NULL.
    @inlinable public init?(stealing ref: PyRef?) {
        guard let ref else { return nil }
        self.ref = ref
    }

    /// Adds a reference to a borrowed object.
    @inlinable public init(borrowing ref: PyRef) {
        pshim_incref(ref)
        self.ref = ref
    }

    /// Gives the reference to the caller without releasing it.
    @inlinable public consuming func take() -> PyRef {
        let r = ref
        discard self
        return r
    }

    @inlinable deinit { pshim_decref(ref) }
}

public enum Py {
    public static var none: PyRef { pshim_none() }
    public static var `true`: PyRef { pshim_true() }
    public static var `false`: PyRef { pshim_false() }

    public static var typeError: PyRef { pshim_exc_type_error() }
    public static var valueError: PyRef { pshim_exc_value_error() }
    public static var runtimeError: PyRef { pshim_exc_runtime_error() }
    public static var osError: PyRef { pshim_exc_os_error() }
    public static var assertionError: PyRef { pshim_exc_assertion_error() }

    @inlinable public static func incref(_ o: PyRef) { pshim_incref(o) }
    @inlinable public static func decref(_ o: PyRef) { pshim_decref(o) }
    @inlinable public static func xdecref(_ o: PyRef?) { if let o { pshim_decref(o) } }

    /// A new reference to None.
    public static func newNone() -> PyRef {
        let n = pshim_none()!
        pshim_incref(n)
        return n
    }

    public static func bool(_ b: Bool) -> PyRef {
        let o = b ? pshim_true()! : pshim_false()!
        pshim_incref(o)
        return o
    }

    /// An interned str for a key used on every request: made once, never freed.
    public static func intern(_ s: StaticString) -> PyRef {
        s.withUTF8Buffer { b in
            b.withMemoryRebound(to: CChar.self) { c in
                var o: PyRef? = PyUnicode_FromStringAndSize(c.baseAddress, c.count)
                PyUnicode_InternInPlace(&o)
                return o!
            }
        }
    }

    public static func str(_ s: String) -> PyRef {
        var s = s
        return s.withUTF8 { b in
            b.withMemoryRebound(to: CChar.self) { PyUnicode_FromStringAndSize($0.baseAddress, $0.count)! }
        }
    }

    /// A str from latin-1 bytes (header values, PEP 3333 "native strings").
    @inlinable public static func latin1(_ b: UnsafeRawBufferPointer) -> PyRef? {
        pshim_unicode_latin1_new(b.baseAddress?.assumingMemoryBound(to: CChar.self), b.count)
    }

    public static func bytes(_ b: UnsafeRawBufferPointer) -> PyRef? {
        PyBytes_FromStringAndSize(b.baseAddress?.assumingMemoryBound(to: CChar.self), b.count)
    }

    public static func int(_ v: Int) -> PyRef { PyLong_FromSsize_t(v)! }

    /// The Swift text of a str (for logs and startup, not the request path).
    public static func string(_ o: PyRef) -> String? {
        var size: Py_ssize_t = 0
        guard let p = PyUnicode_AsUTF8AndSize(o, &size) else { PyErr_Clear(); return nil }
        return String(decoding: UnsafeRawBufferPointer(start: p, count: size), as: UTF8.self)
    }

    /// `str(o)` as Swift text, for messages.
    public static func describe(_ o: PyRef) -> String {
        guard let s = PyOwned(stealing: PyObject_Str(o)) else { PyErr_Clear(); return "<unprintable>" }
        return string(s.ref) ?? "<unprintable>"
    }

    public static func typeName(_ o: PyRef) -> String { String(cString: pshim_type_name(o)) }

    /// Raises `exc` (a borrowed exception type) with a message.
    public static func raise(_ exc: PyRef?, _ message: String) {
        var m = message
        m.withUTF8 { b in
            b.withMemoryRebound(to: CChar.self) { c in
                let s = PyOwned(stealing: PyUnicode_FromStringAndSize(c.baseAddress, c.count))
                PyErr_SetObject(exc, s.ref)
            }
        }
    }
}
