import CPython
import CPyShim
import Core

/// The `_peregrine` module inside the embedded interpreter: the small pieces
/// of the gateways that are ordinary Python (protocol detection,
/// `wsgi.errors`, `wsgi.file_wrapper`) plus a `log` function into the server
/// log. Built at start-up from source held in the binary.
///
/// The module is per process by nature: one interpreter, one
/// `sys.modules["_peregrine"]`, and nothing in it belongs to a worker (its
/// classes and functions keep no state; `wsgi.errors` streams are made per
/// gateway). It is made once, under the once-lock of a `static let` (see
/// `ProcessObject`), and never replaced.
public enum Runtime {
    private static let created: Result<ProcessObject, StartupError> = create()

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
            # A plain callable taking *args (WSGI middleware such as
            # wsgiref.validate's) is WSGI: an ASGI application would be a
            # coroutine function, detected above.
            return "wsgi" if positional <= 2 else None
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


class ClientDisconnected(OSError):
    """Raised by ASGI send() once the client has gone away."""


class StartupFailed(Exception):
    """The ASGI lifespan startup failed; the server must not serve."""


class _Lifespan:
    """The ASGI lifespan protocol (spec 2.0) around one application.

    An application that raises before it has asked for the startup event does
    not speak lifespan: it is served without it. One that fails after
    (lifespan.startup.failed, or an exception) stops the server."""

    def __init__(self, app, state):
        import asyncio
        self.app = app
        self.state = state
        self.queue = asyncio.Queue()
        self.started = asyncio.Event()
        self.stopped = asyncio.Event()
        self.asked = False
        self.supported = True
        self.failure = None
        self.shutdown_failure = None
        self.task = None

    async def _main(self):
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": self.state}
        try:
            await self.app(scope, self._receive, self._send)
        except BaseException as exc:  # noqa: BLE001 (any failure is reported below)
            if not self.asked:
                self.supported = False
                log(20, "the application does not support the ASGI lifespan protocol (%s: %s); serving without it"
                    % (type(exc).__name__, exc))
            elif not self.started.is_set():
                import traceback
                self.failure = "".join(traceback.format_exception(exc))
            else:
                import traceback
                log(40, "the ASGI lifespan task raised:\n" + "".join(traceback.format_exception(exc)))
        finally:
            self.started.set()
            self.stopped.set()

    async def _receive(self):
        self.asked = True
        return await self.queue.get()

    async def _send(self, message):
        kind = message.get("type")
        if kind == "lifespan.startup.complete":
            self.started.set()
        elif kind == "lifespan.startup.failed":
            self.failure = message.get("message", "") or "lifespan.startup.failed"
            self.started.set()
        elif kind == "lifespan.shutdown.complete":
            self.stopped.set()
        elif kind == "lifespan.shutdown.failed":
            self.shutdown_failure = message.get("message", "") or "lifespan.shutdown.failed"
            self.stopped.set()
        else:
            raise RuntimeError("unexpected ASGI lifespan message %r" % (kind,))

    async def startup(self):
        import asyncio
        self.task = asyncio.get_running_loop().create_task(self._main())
        await self.queue.put({"type": "lifespan.startup"})
        await self.started.wait()
        if self.failure is not None:
            raise StartupFailed(self.failure)

    async def shutdown(self):
        if not self.supported or self.task is None or self.task.done():
            return
        await self.queue.put({"type": "lifespan.shutdown"})
        await self.stopped.wait()
        if self.shutdown_failure is not None:
            log(40, "ASGI lifespan shutdown failed: %s" % self.shutdown_failure)


async def run_asgi(app, scope, receive, send, done):
    """One ASGI connection scope's task: awaits the application, then tells
    `done` how it ended (None, or the exception it raised) from inside the
    task, instead of a done-callback the loop would schedule after it (a
    handle and a loop round per request). An exception is logged there and
    ends here; cancellation (any BaseException that is not an Exception)
    still ends the task, and KeyboardInterrupt and SystemExit still stop
    the loop, as they did before."""
    try:
        await app(scope, receive, send)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:
        done(e)
    except BaseException as e:
        done(e)
        raise
    else:
        done(None)


def serve_asgi(app, fd, poll, attach, lifespan, use_uvloop):
    """Run the worker's event loop: the server's epoll descriptor is one of
    its readers, so the server and the application share one thread."""
    import asyncio
    loop = None
    name = "asyncio"
    if use_uvloop:
        try:
            import uvloop
        except ImportError:
            uvloop = None
        if uvloop is not None:
            loop = uvloop.new_event_loop()
            name = "uvloop"
    if loop is None:
        loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    state = {}
    manager = _Lifespan(app, state) if lifespan else None
    try:
        if manager is not None:
            loop.run_until_complete(manager.startup())
        attach(loop, state if manager is not None and manager.supported else None, name)
        loop.add_reader(fd, poll)
        loop.run_forever()
        loop.remove_reader(fd)
        if manager is not None:
            loop.run_until_complete(manager.shutdown())
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def prepare_asgi(use_uvloop):
    """Import the event-loop modules on the main thread, before any worker
    thread starts: worker threads that import asyncio and uvloop for the
    first time at once can leave one of them with a loop that counts as
    already running (RuntimeError on start)."""
    import asyncio  # noqa: F401
    if use_uvloop:
        try:
            import uvloop  # noqa: F401
        except ImportError:
            pass


def share_code_constants():
    """On a free-threaded CPython 3.13, make modules compiled from source
    keep their constants immortal, as modules read from .pyc files do.

    3.13t makes a code object's constants immortal when the code object is
    built, except under the compile() builtin (gh-118527), which is how
    imports compile a module that has no usable .pyc (first run,
    PYTHONDONTWRITEBYTECODE, a read-only tree). Every thread that then runs
    such code increments the shared reference count of each constant it
    loads, and threads running the same function contend for that cache
    line: a loop over a constant served by two worker threads ran at 1.3x
    one thread instead of 2x. Rebuilding the compiled code through marshal,
    as a .pyc load does, gives the same code with immortal constants.
    Elsewhere (a GIL build, another version) nothing is changed."""
    import sys
    if sys.version_info[:2] != (3, 13) or getattr(sys, "_is_gil_enabled", lambda: True)():
        return
    import marshal
    from importlib.machinery import SourceFileLoader
    compile_source = SourceFileLoader.source_to_code

    def source_to_code(self, data, path, *, _optimize=-1):
        code = compile_source(self, data, path, _optimize=_optimize)
        return marshal.loads(marshal.dumps(code))

    SourceFileLoader.source_to_code = source_to_code


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

    /// Creates the module (the first call; later calls return at once).
    /// Call after the interpreter starts, on the main thread.
    public static func install() throws(StartupError) {
        _ = try created.get()
    }

    private static func create() -> Result<ProcessObject, StartupError> {
        do throws(StartupError) {
            return .success(ProcessObject(try build()))
        } catch {
            return .failure(error)
        }
    }

    private static func build() throws(StartupError) -> PyRef {
        guard let m = PyImport_AddModule("_peregrine") else {
            throw StartupError("cannot create the _peregrine module")
        }
        // Its native types and functions keep no state of their own between
        // calls beyond what each worker owns: no GIL needed (PEP 703).
        pshim_module_gil_not_used(m)
        let dict = PyModule_GetDict(m)!
        let logType = PyOwned(stealing: NativeTypeBuilder.function(name: "log", logFunction))
        PyDict_SetItemString(dict, "log", logType.ref)
        PyDict_SetItemString(dict, "__builtins__", PyEval_GetBuiltins())
        guard PyOwned(stealing: PyRun_String(source, Py_file_input, dict, dict)) != nil else {
            let tb = takeTraceback()
            throw StartupError("internal runtime module failed: \(tb.message)", traceback: tb.text)
        }
        return PyOwned(borrowing: m).take()  // PyImport_AddModule's is borrowed
    }

    /// An attribute of the module (a new reference: an application may
    /// rebind the module's names from another thread). Only after `install`.
    public static func attribute(_ name: String) -> PyOwned {
        guard case .success(let module) = created,
              let value = Py.dictItem(PyModule_GetDict(module.ref)!, name) else {
            fatalError("_peregrine.\(name) is missing (Runtime.install not run or failed)")
        }
        return value
    }

    /// See `share_code_constants` in the source above: call before the
    /// application is imported. False if it raised (it should not; the
    /// server serves on without it).
    public static func shareCodeConstants() -> Bool {
        let share = attribute("share_code_constants")
        guard PyOwned(stealing: pshim_call0(share.ref)) != nil else {
            PyErr_Clear()
            return false
        }
        return true
    }

    /// Imports asyncio (and uvloop when wanted) before the worker threads
    /// start; false if that raised (the loop's own start reports it again).
    public static func prepareASGI(useUVLoop: Bool) -> Bool {
        let prepare = attribute("prepare_asgi")
        guard PyOwned(stealing: pshim_call1(prepare.ref, useUVLoop ? Py.true : Py.false)) != nil else {
            PyErr_Clear()
            return false
        }
        return true
    }

    /// "asgi", "wsgi" or nil.
    public static func detectProtocol(_ app: PyRef) -> String? {
        let detect = attribute("detect_protocol")
        guard let r = PyOwned(stealing: pshim_call1(detect.ref, app)) else {
            PyErr_Clear()
            return nil
        }
        return r.ref == Py.none ? nil : Py.string(r.ref)
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
    /// A builtin function (METH_FASTCALL) whose `self` argument is `bound`
    /// (nil: a module-level function with no self). The method definition
    /// is allocated here and lives as long as the process, as CPython
    /// requires of it.
    public static func function(name: String, _ f: FastMethod, boundTo bound: PyRef? = nil) -> PyRef {
        let def = UnsafeMutablePointer<PyMethodDef>.allocate(capacity: 1)
        let cname = UnsafeMutablePointer<CChar>.allocate(capacity: name.utf8.count + 1)
        for (i, b) in name.utf8.enumerated() { cname[i] = CChar(bitPattern: b) }
        cname[name.utf8.count] = 0
        def.initialize(to: PyMethodDef(ml_name: cname, ml_meth: unsafeBitCast(f, to: PyCFunction.self),
                                       ml_flags: METH_FASTCALL, ml_doc: nil))
        return PyCFunction_NewEx(def, bound, nil)!
    }
}
