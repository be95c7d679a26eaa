import CPython
import CPyShim

extension Py {
    /// Runs `body` over the bytes of a `bytes` or `bytearray` object (nil:
    /// `object` is neither). A bytearray is read through a buffer export
    /// (PEP 3118), during which it cannot be resized: on a free-threaded
    /// build another thread may try while `body` reads it, and its storage
    /// must not move or be freed under the reader. (Its bytes may still
    /// change; what `body` copies is whatever they were then.) A bytes
    /// object is immutable and read in place.
    @inlinable
    public static func withBytes<R>(_ object: PyRef, _ body: (UnsafeRawBufferPointer) -> R) -> R? {
        if pshim_bytes_check(object) != 0 {
            return body(UnsafeRawBufferPointer(start: pshim_bytes_data(object), count: pshim_bytes_size(object)))
        }
        guard pshim_bytearray_check(object) != 0 else { return nil }
        var export = Py_buffer()
        guard PyObject_GetBuffer(object, &export, 0 /* PyBUF_SIMPLE */) == 0 else {
            PyErr_Clear()
            return nil
        }
        defer { PyBuffer_Release(&export) }
        return body(UnsafeRawBufferPointer(start: export.buf, count: export.len))
    }
}
