import CPython
import CPyShim

/// Items of containers the application owns, as strong references.
///
/// A list or dict the application handed us (a response's header list, an
/// ASGI message) may be changed by another thread while we read it; with
/// free-threaded CPython nothing else keeps a borrowed item alive, so every
/// item we keep using is taken with a reference of its own
/// (`PyList_GetItemRef` / `PyDict_GetItemRef` semantics) and released when
/// the `PyOwned` goes. Tuples are immutable: an item of a tuple we hold
/// lives as long as the tuple, so borrowing from one is fine.
extension Py {
    /// list[i], or nil with IndexError set (the list shrank).
    @inlinable public static func listItem(_ list: PyRef, _ i: Int) -> PyOwned? {
        guard let r = pshim_list_get_ref(list, i) else { return nil }
        return PyOwned(stealing: r)
    }

    /// Item `i` of a list or tuple (the caller has checked which it is).
    @inlinable public static func sequenceItem(_ sequence: PyRef, isList: Bool, _ i: Int) -> PyOwned? {
        if isList { return listItem(sequence, i) }
        guard let r = pshim_tuple_item(sequence, i) else { return nil }
        return PyOwned(borrowing: r)
    }

    /// dict[key]; nil when missing (no exception) or when the lookup failed
    /// (exception set: check `PyErr_Occurred`).
    @inlinable public static func dictItem(_ dict: PyRef, _ key: PyRef) -> PyOwned? {
        guard let r = pshim_dict_get_ref(dict, key) else { return nil }
        return PyOwned(stealing: r)
    }

    /// dict[key] for a key given as text (startup and argument parsing, not
    /// the request path).
    public static func dictItem(_ dict: PyRef, _ key: String) -> PyOwned? {
        guard let r = pshim_dict_get_ref_string(dict, key) else { return nil }
        return PyOwned(stealing: r)
    }
}

extension Optional where Wrapped == PyOwned {
    /// The object, borrowed from its owner (valid while the owner lives);
    /// nil when there is none.
    @inlinable public var ref: PyRef? {
        switch self {
        case .some(let owned): return owned.ref
        case .none: return nil
        }
    }
}
