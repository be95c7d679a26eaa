import CPython
import CPyShim
import PyBridge

/// What the last start_response call accepted, kept for the next request.
///
/// Most applications answer with the same status str and the same header
/// pairs each time: a module-level list, or a list display of constant
/// tuples, which the compiler makes once. Checking a pair (token name,
/// latin-1 value without CR or LF, its role) was a tenth of a small WSGI
/// request's user-space instructions. A str and a tuple cannot change, so a
/// call passing the very same objects (compared by identity) would get the
/// very same verdicts: it is given them without checking again. The objects
/// are held here, so an identical address always means the same object.
struct WSGICheckedResponse: ~Copyable {
    /// The status str accepted last, and its code.
    private(set) var status: PyRef?
    private(set) var code = 0
    /// The tuple of checked pairs start_response kept last (made from the
    /// application's list, or its own tuple), the Content-Length it declared
    /// and whether it asked to close the connection.
    private(set) var headers: PyRef?
    private(set) var declared: Int64?
    private(set) var close = false

    init() {}

    mutating func remember(status newStatus: PyRef, code newCode: Int) {
        Py.incref(newStatus)
        Py.xdecref(status)
        status = newStatus
        code = newCode
    }

    mutating func remember(headers newHeaders: PyRef, declared newDeclared: Int64?, close newClose: Bool) {
        Py.incref(newHeaders)
        Py.xdecref(headers)
        headers = newHeaders
        declared = newDeclared
        close = newClose
    }

    /// The remembered tuple when `given` (a list or tuple) holds the same
    /// pair objects in the same order; nil otherwise (then check it).
    func sameHeaders(_ given: PyRef) -> PyRef? {
        guard let last = headers else { return nil }
        if given == last { return last }
        let isList = pshim_list_check(given) != 0
        let n = isList ? pshim_list_size(given) : pshim_tuple_size(given)
        guard n == pshim_tuple_size(last) else { return nil }
        for i in 0..<n {
            // A strong reference while comparing: the list is the
            // application's (another thread could change it).
            guard let item = Py.sequenceItem(given, isList: isList, i) else { PyErr_Clear(); return nil }
            if item.ref != pshim_tuple_item(last, i) { return nil }
        }
        return last
    }

    deinit {
        Py.xdecref(status)
        Py.xdecref(headers)
    }
}
