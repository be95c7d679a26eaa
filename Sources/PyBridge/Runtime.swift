import CPython
import CPyShim
import Core

/// The `_peregrine` module inside the embedded interpreter: the small pieces
/// of the gateways that are ordinary Python (protocol detection,
/// `wsgi.errors`, `wsgi.file_wrapper`) plus a `log` function into the server
/// log. Built at start-up from source held in the binary.
public enum Runtime {
    nonisolated(unsafe) public private(set) static var module: PyRef?

    static let source = #"""
import inspect as _inspect


def detect_protocol(app):
    """'asgi', 'wsgi', or None when the callable's shape does not tell."""
    call = app
    if not (_inspect.isfunction(app) or _inspect.ismethod(app) or _inspect.isclass(app)):
        call = getattr(app, "__call__", app)
    if _inspect.iscoroutinefunction(app) or _inspect.iscoroutinefunction(call):
        return "asgi"
    try:
        signature = _inspect.signature(app)
    except (TypeError, ValueError):
        return None
    positional = 0
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            positional += 1
        elif parameter.kind == parameter.VAR_POSITIONAL:
            return None
    if positional == 3:
        return "asgi"
    if positional == 2:
        return "wsgi"
    return None


class ErrorStream:
    """wsgi.errors: what the application writes goes to the server log,
    one log record per line."""

    __slots__ = ("_pending",)

    def __init__(self):
        self._pending = ""

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("wsgi.errors.write() takes a str, not %s" % type(text).__name__)
        text = self._pending + text
        *lines, self._pending = text.split("\n")
        for line in lines:
            log(40, line)
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        if self._pending:
            log(40, self._pending)
            self._pending = ""


class FileWrapper:
    """wsgi.file_wrapper. The server sends a wrapped regular file with
    sendfile(2); anything else is read in blocks like any iterable."""

    __slots__ = ("filelike", "blksize", "close")

    def __init__(self, filelike, blksize=8192):
        self.filelike = filelike
        self.blksize = blksize
        if hasattr(filelike, "close"):
            self.close = filelike.close

    def __iter__(self):
        return self

    def __next__(self):
        data = self.filelike.read(self.blksize)
        if data:
            return data
        raise StopIteration
"""#

    /// Creates the module. Call once, after the interpreter starts.
    public static func install() throws(StartupError) {
        guard let m = PyImport_AddModule("_peregrine") else {
            throw StartupError("cannot create the _peregrine module")
        }
        let dict = PyModule_GetDict(m)!
        let logType = NativeTypeBuilder.function(name: "log", logFunction)
        PyDict_SetItemString(dict, "log", logType)
        Py.decref(logType)
        PyDict_SetItemString(dict, "__builtins__", PyEval_GetBuiltins())
        guard let r = PyRun_String(source, Py_file_input, dict, dict) else {
            let tb = takeTraceback()
            throw StartupError("internal runtime module failed: \(tb.message)", traceback: tb.text)
        }
        Py.decref(r)
        Py.incref(m)
        module = m
    }

    /// A borrowed attribute of the module.
    public static func attribute(_ name: String) -> PyRef {
        PyDict_GetItemString(PyModule_GetDict(module!), name)!
    }

    /// "asgi", "wsgi" or nil.
    public static func detectProtocol(_ app: PyRef) -> String? {
        guard let r = pshim_call1(attribute("detect_protocol"), app) else {
            PyErr_Clear()
            return nil
        }
        defer { Py.decref(r) }
        return r == Py.none ? nil : Py.string(r)
    }
}

private let logFunction: FastMethod = { _, args, nargs in
    guard nargs == 2, let args, let level = args[0], let message = args[1] else {
        Py.raise(Py.typeError, "log(level, message)")
        return nil
    }
    let l = PyLong_AsLong(level)
    let text = Py.string(message) ?? Py.describe(message)
    Log.write(LogLevel(rawValue: l) ?? .error) { text }
    return Py.newNone()
}

extension NativeTypeBuilder {
    /// A module-level builtin function (METH_FASTCALL) with no self.
    public static func function(name: String, _ f: FastMethod) -> PyRef {
        let def = UnsafeMutablePointer<PyMethodDef>.allocate(capacity: 1)
        let cname = UnsafeMutablePointer<CChar>.allocate(capacity: name.utf8.count + 1)
        for (i, b) in name.utf8.enumerated() { cname[i] = CChar(bitPattern: b) }
        cname[name.utf8.count] = 0
        def.initialize(to: PyMethodDef(ml_name: cname, ml_meth: unsafeBitCast(f, to: PyCFunction.self),
                                       ml_flags: METH_FASTCALL, ml_doc: nil))
        return PyCFunction_NewEx(def, nil, nil)!
    }
}
