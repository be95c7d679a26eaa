import CPython
import CPyShim

/// A startup failure the CLI reports as one line (plus a traceback when the
/// application's import raised) before exiting with status 2.
public struct StartupError: Error, Sendable {
    public let message: String
    public let traceback: String?
    public init(_ message: String, traceback: String? = nil) {
        self.message = message
        self.traceback = traceback
    }
}

/// Starting the embedded interpreter and importing the application.
public enum Interpreter {
    /// Initialises CPython so that it resolves imports exactly like the
    /// interpreter named `programName` (normally the launcher's
    /// sys.executable: a venv's python finds that venv's site-packages), then
    /// puts the current directory and `pythonPaths` first on sys.path, as
    /// `python -m` would.
    public static func start(programName: String?, argv: [String], pythonPaths: [String]) throws(StartupError) {
        let name = programName ?? String(cString: pshim_build_python())
        var err = [CChar](repeating: 0, count: 512)
        var cargs = argv.map { strdupC($0) }
        let rc = cargs.withUnsafeMutableBufferPointer { buf in
            pshim_initialize(name, Int32(buf.count), buf.baseAddress, &err, 512)
        }
        for p in cargs { p?.deallocate() }
        guard rc == 0 else {
            throw StartupError("cannot start Python (\(name)): \(String(cString: err))")
        }
        guard let sysPath = PySys_GetObject("path") else {
            throw StartupError("cannot start Python: sys.path is missing")
        }
        // Each is inserted at the front, the last first, so sys.path begins
        // with `pythonPaths` in the order given, then the current directory.
        for dir in (pythonPaths + [""]).reversed() {
            let s = PyOwned(stealing: Py.str(dir))
            PyList_Insert(sysPath, 0, s.ref)
        }
    }

    /// Imports `MODULE:ATTR` (ATTR may be dotted) and, with `factory`, calls
    /// it with no arguments to get the application.
    public static func loadApplication(_ spec: String, factory: Bool) throws(StartupError) -> PyRef {
        guard let colon = spec.firstIndex(of: ":"), colon != spec.startIndex,
              spec.index(after: colon) != spec.endIndex else {
            throw StartupError("application must be given as MODULE:ATTR, got '\(spec)'")
        }
        let moduleName = String(spec[..<colon])
        let attrPath = String(spec[spec.index(after: colon)...])
        guard let module = PyImport_ImportModule(moduleName) else {
            let tb = takeTraceback()
            if tb.exceptionName == "ModuleNotFoundError", tb.message.contains("'\(moduleName)'") {
                throw StartupError("cannot import module '\(moduleName)': \(tb.message)")
            }
            throw StartupError("cannot import module '\(moduleName)': \(tb.exceptionName): \(tb.message)",
                               traceback: tb.text)
        }
        // Manual: each step replaces the reference it walks from (an owner
        // in a reassigned `var` is what the Swift 6.3 optimiser rejected in
        // ASGIRequest), and the last one is returned for the worker's life.
        var current = module
        for part in attrPath.split(separator: ".", omittingEmptySubsequences: false) {
            guard !part.isEmpty, let next = PyObject_GetAttrString(current, String(part)) else {
                PyErr_Clear()
                Py.decref(current)
                throw StartupError("module '\(moduleName)' has no attribute '\(attrPath)'")
            }
            Py.decref(current)
            current = next
        }
        if factory {
            guard let app = pshim_call0(current) else {
                let tb = takeTraceback()
                Py.decref(current)
                throw StartupError("application factory '\(spec)' raised \(tb.exceptionName): \(tb.message)",
                                   traceback: tb.text)
            }
            Py.decref(current)
            current = app
        }
        guard PyCallable_Check(current) != 0 else {
            let t = Py.typeName(current)
            Py.decref(current)
            throw StartupError("'\(spec)' is not callable (it is a \(t))" + (factory ? "" : "; is it a factory? try --factory"))
        }
        return current
    }

    private static func strdupC(_ s: String) -> UnsafeMutablePointer<CChar>? {
        let utf8 = Array(s.utf8)
        let p = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count + 1)
        for (i, b) in utf8.enumerated() { p[i] = CChar(bitPattern: b) }
        p[utf8.count] = 0
        return p
    }
}

/// The pending Python exception, taken and formatted.
public struct PythonTraceback {
    public let exceptionName: String
    public let message: String
    /// The full `traceback.format_exception` text.
    public let text: String
}

/// Clears the pending exception and returns it formatted.
public func takeTraceback() -> PythonTraceback {
    guard let owner = PyOwned(stealing: pshim_fetch_exception()) else {
        return PythonTraceback(exceptionName: "Error", message: "unknown error", text: "")
    }
    let exc = owner.ref
    let name = Py.typeName(exc)
    let message = Py.describe(exc)
    var text = ""
    if let tbmod = PyOwned(stealing: PyImport_ImportModule("traceback")),
       let fmt = PyOwned(stealing: PyObject_GetAttrString(tbmod.ref, "format_exception")),
       let lines = PyOwned(stealing: pshim_call1(fmt.ref, exc)) {
        // Borrowing is safe: the list is new and only ours.
        let n = PyList_Size(lines.ref)
        for i in 0..<n { text += Py.string(PyList_GetItem(lines.ref, i)) ?? "" }
    }
    PyErr_Clear()
    return PythonTraceback(exceptionName: name, message: message, text: text)
}

extension Interpreter {
    /// "3.11.7" of the running interpreter.
    public static var version: String {
        String(cString: Py_GetVersion()).split(separator: " ").first.map(String.init) ?? "?"
    }
}

extension Interpreter {
    /// sys.prefix: where imports resolve from (a venv's directory under a venv).
    public static var prefix: String {
        guard let p = PySys_GetObject("prefix") else { return "?" }
        return Py.string(p) ?? "?"
    }
}

extension Interpreter {
    /// Whether the GIL is on: always before 3.13, and on a free-threaded
    /// build (PEP 703) once an extension module that does not declare
    /// `Py_mod_gil` has been imported, or with `PYTHON_GIL=1`.
    public static var gilEnabled: Bool {
        guard let check = PySys_GetObject("_is_gil_enabled") else {
            PyErr_Clear()
            return true
        }
        guard let result = PyOwned(stealing: pshim_call0(check)) else {
            PyErr_Clear()
            return true
        }
        return PyObject_IsTrue(result.ref) != 0
    }
}
