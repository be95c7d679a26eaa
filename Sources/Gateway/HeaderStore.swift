import CPython
import CPyShim
import Core
import PyBridge

/// Response fields from an ASGI message, copied out of the Python objects
/// (a `bytearray` may change after `send()` returns) and validated: names
/// must be tokens, values free of CR, LF, NUL and other controls.
/// Content-Length is read out; hop-by-hop fields are the server's business
/// and are not passed on (a `Connection: close` is honoured).
struct HeaderStore {
    private var bytes: [UInt8] = []
    private var ranges: [(name: Range<Int>, value: Range<Int>)] = []
    private(set) var contentLength: Int64?
    private(set) var close = false

    /// Empty again, keeping the storage's capacity (a reused request).
    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        ranges.removeAll(keepingCapacity: true)
        contentLength = nil
        close = false
    }

    /// Loads `[(name, value), ...]`; false with an exception set.
    mutating func load(_ headers: PyRef, context: String, append: Bool = false) -> Bool {
        if !append { bytes.removeAll(keepingCapacity: true); ranges.removeAll(keepingCapacity: true) }
        guard let iterator = PyOwned(stealing: PyObject_GetIter(headers)) else {
            PyErr_Clear()
            Py.raise(Py.typeError, "\(context) 'headers' must be an iterable of (name, value) pairs")
            return false
        }
        while let pair = PyOwned(stealing: PyIter_Next(iterator.ref)) {
            let item = pair.ref
            // Borrowed: from the tuple `pair` holds, or from the owners below.
            let nameItem: PyRef, valueItem: PyRef
            var nameOwner: PyOwned? = nil, valueOwner: PyOwned? = nil
            if pshim_tuple_exact(item) != 0 && pshim_tuple_size(item) == 2 {
                // The usual shape: a tuple is immutable, so its items need no
                // sequence protocol calls and no references of their own.
                nameItem = pshim_tuple_item(item, 0)!
                valueItem = pshim_tuple_item(item, 1)!
            } else {
                guard PySequence_Check(item) != 0, PySequence_Size(item) == 2 else {
                    PyErr_Clear()
                    Py.raise(Py.typeError, "\(context): each header must be a (name, value) pair, got \(Py.describe(item))")
                    return false
                }
                nameOwner = PyOwned(stealing: PySequence_GetItem(item, 0))
                valueOwner = PyOwned(stealing: PySequence_GetItem(item, 1))
                guard let n = nameOwner.ref, let v = valueOwner.ref else { return false }
                nameItem = n
                valueItem = v
            }
            // A bytearray is copied to bytes first: its storage may move if
            // another thread resizes it while it is read (free-threaded).
            let nameCopy = copyIfByteArray(nameItem), valueCopy = copyIfByteArray(valueItem)
            if PyErr_Occurred() != nil { return false }
            let name = nameCopy.ref ?? nameItem, value = valueCopy.ref ?? valueItem
            guard let n = view(name), let v = view(value) else {
                let isText = pshim_unicode_check(name) != 0 || pshim_unicode_check(value) != 0
                if isText && [name, value].allSatisfy({ pshim_unicode_check($0) != 0 || pshim_bytes_check($0) != 0 || pshim_bytearray_check($0) != 0 }) {
                    Py.raise(Py.valueError, "\(context): header \(Py.describe(item)) is not latin-1 (send bytes for other encodings)")
                } else {
                    Py.raise(Py.typeError, "\(context): header names and values must be bytes, bytearray or str, got \(Py.describe(item))")
                }
                return false
            }
            let role: ResponseFieldRole
            do {
                role = try ResponseFields.role(name: n, value: v)
            } catch {
                raiseResponseFieldError(error, context: context, name: name, value: value)
                return false
            }
            switch role {
            case .contentLength(let length):
                guard contentLength == nil || contentLength == length else {
                    raiseResponseFieldError(.invalidContentLength, context: context, name: name, value: value)
                    return false
                }
                contentLength = length
            case .connection(let closes):
                close = close || closes
            case .framing:
                break
            case .regular:
                add(n, v)
            }
            // The borrowed name and value were used up to here.
            _ = consume nameOwner; _ = consume valueOwner
        }
        return PyErr_Occurred() == nil
    }

    /// Loads the `links` of an early hint as `link` fields.
    mutating func loadLinks(_ links: PyRef) -> Bool {
        guard let iterator = PyOwned(stealing: PyObject_GetIter(links)) else { return false }
        let name: StaticString = "link"
        while let item = PyOwned(stealing: PyIter_Next(iterator.ref)) {
            let copy = copyIfByteArray(item.ref)
            if PyErr_Occurred() != nil { return false }
            guard let v = view(copy.ref ?? item.ref), ResponseFields.isValidValue(v) else {
                Py.raise(Py.typeError, "http.response.early_hint 'links' must be bytes without control characters")
                return false
            }
            add(UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), v)
        }
        return PyErr_Occurred() == nil
    }

    private mutating func add(_ n: UnsafeRawBufferPointer, _ v: UnsafeRawBufferPointer) {
        let ns = bytes.count
        bytes.append(contentsOf: n)
        let vs = bytes.count
        bytes.append(contentsOf: v)
        ranges.append((ns..<vs, vs..<bytes.count))
    }

    /// The fields as spans into the store, for the duration of `body`.
    /// The span table is a temporary allocation (on the stack when small:
    /// 32 bytes a field), not an array per response.
    func withFields<T>(_ body: (UnsafeBufferPointer<ResponseField>) -> T) -> T {
        bytes.withUnsafeBytes { raw in
            withUnsafeTemporaryAllocation(of: ResponseField.self, capacity: ranges.count) { fields in
                // Indices, not `for r in`: see CoalescedOutput.flush.
                for i in ranges.indices {
                    let r = ranges[i]
                    fields.initializeElement(at: i, to: ResponseField(name: UnsafeRawBufferPointer(rebasing: raw[r.name]),
                                                                    value: UnsafeRawBufferPointer(rebasing: raw[r.value])))
                }
                return body(UnsafeBufferPointer(fields))
            }
        }
    }

    /// For a bytearray, an immutable bytes copy of it (nil with an
    /// exception set if the copy fails); nil for anything else.
    private func copyIfByteArray(_ item: PyRef) -> PyOwned? {
        guard pshim_bytearray_check(item) != 0 else { return nil }
        return PyOwned(stealing: PyBytes_FromObject(item))
    }

    /// The bytes of a bytes or (latin-1) str object (bytearrays were made
    /// bytes by `stable`).
    private func view(_ o: PyRef) -> UnsafeRawBufferPointer? {
        if pshim_bytes_check(o) != 0 {
            return UnsafeRawBufferPointer(start: pshim_bytes_data(o), count: pshim_bytes_size(o))
        }
        if pshim_unicode_check(o) != 0 {
            var data: UnsafePointer<UInt8>?
            var len: Py_ssize_t = 0
            if pshim_unicode_latin1(o, &data, &len) != 0 { return UnsafeRawBufferPointer(start: data, count: len) }
        }
        return nil
    }
}
