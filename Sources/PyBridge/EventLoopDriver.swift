import CPython
import CPyShim
import Core

/// Runs an ASGI worker on an asyncio (or uvloop) event loop and gives the
/// server the few loop operations it needs: a reader callback for its epoll
/// descriptor, one rescheduled timer, and stop.
public enum EventLoopDriver {
    /// Called by the loop when the epoll descriptor is readable or the timer
    /// fires: process ready events without blocking.
    nonisolated(unsafe) public static var poll: (() -> Void)?
    /// Called once the loop runs (after lifespan startup), with the loop and
    /// the lifespan state (nil if lifespan is off or unsupported) and the
    /// loop's name.
    nonisolated(unsafe) public static var attached: ((PyRef, PyRef?, String) -> Void)?

    /// Called once after the tasks that ran in this loop iteration (see
    /// `requestDeferred`).
    nonisolated(unsafe) public static var deferred: (() -> Void)?

    nonisolated(unsafe) private static var loop: PyRef?
    nonisolated(unsafe) private static var deferredFunction: PyRef?
    nonisolated(unsafe) private static var callSoon: PyRef?
    nonisolated(unsafe) private static var deferredScheduled = false
    nonisolated(unsafe) private static var timerFunction: PyRef?
    nonisolated(unsafe) private static var timer: PyRef?
    nonisolated(unsafe) private static var timerDue: Instant?

    /// Runs until `stop()`; throws if lifespan startup fails.
    public static func run(app: PyRef, fd: Int32, lifespan: Bool, uvloop: Bool) throws(StartupError) {
        let pollFn = NativeTypeBuilder.function(name: "poll", pollEntry)
        let attachFn = NativeTypeBuilder.function(name: "attach", attachEntry)
        timerFunction = NativeTypeBuilder.function(name: "timer", timerEntry)
        deferredFunction = NativeTypeBuilder.function(name: "deferred", deferredEntry)
        let args = PyTuple_New(6)!
        Py.incref(app)
        pshim_tuple_set_item(args, 0, app)
        pshim_tuple_set_item(args, 1, Py.int(Int(fd)))
        pshim_tuple_set_item(args, 2, pollFn)
        Py.incref(pollFn)
        pshim_tuple_set_item(args, 3, attachFn)
        pshim_tuple_set_item(args, 4, Py.bool(lifespan))
        pshim_tuple_set_item(args, 5, Py.bool(uvloop))
        let result = PyObject_Call(Runtime.attribute("serve_asgi"), args, nil)
        Py.decref(args)
        guard let result else {
            let tb = takeTraceback()
            if tb.exceptionName.hasSuffix("StartupFailed") {
                throw StartupError("ASGI lifespan startup failed: \(tb.message)")
            }
            throw StartupError("the event loop failed: \(tb.exceptionName): \(tb.message)", traceback: tb.text)
        }
        Py.decref(result)
        Py.xdecref(callSoon)
        callSoon = nil
        loop = nil
    }

    /// Arranges one call of `poll` at `due` (replacing an earlier
    /// arrangement unless it is already due sooner); nil cancels.
    public static func schedule(at due: Instant?, now: Instant) {
        guard let loop else { return }
        if let due, let current = timerDue, current <= due, timer != nil { return }
        if let t = timer {
            if let r = pshim_call_method0(t, "cancel") { Py.decref(r) } else { PyErr_Clear() }
            Py.decref(t)
            timer = nil
            timerDue = nil
        }
        guard let due else { return }
        let delay = Double(max(0, due.nanoseconds - now.nanoseconds)) / 1e9
        let args = PyTuple_New(2)!
        pshim_tuple_set_item(args, 0, PyFloat_FromDouble(delay))
        Py.incref(timerFunction!)
        pshim_tuple_set_item(args, 1, timerFunction!)
        if let callLater = PyObject_GetAttrString(loop, "call_later") {
            timer = PyObject_Call(callLater, args, nil)
            Py.decref(callLater)
        }
        if timer == nil { PyErr_Clear() } else { timerDue = due }
        Py.decref(args)
    }

    /// The arranged call happened: forget it. (The loop's clock and ours
    /// differ slightly, so whether it was "due" is not asked: a loop may run
    /// a timer a fraction of a millisecond early by our clock.)
    fileprivate static func timerFired() {
        Py.xdecref(timer)
        timer = nil
        timerDue = nil
    }

    /// Arranges one call of `deferred` with `loop.call_soon`: it runs after
    /// every callback already ready, so work the tasks of this iteration
    /// queue (HTTP/2 frames of many streams) is done once for all of them.
    public static func requestDeferred() {
        guard !deferredScheduled, let callSoon, let fn = deferredFunction else { return }
        deferredScheduled = true
        if let handle = pshim_call1(callSoon, fn) {
            Py.decref(handle)
        } else {
            PyErr_Clear()
            deferredScheduled = false
            deferred?()
        }
    }

    fileprivate static func runDeferred() {
        deferredScheduled = false
        deferred?()
    }

    public static func stop() {
        guard let loop else { return }
        if let r = pshim_call_method0(loop, "stop") { Py.decref(r) } else { PyErr_Clear() }
    }
}

private let pollEntry: FastMethod = { _, _, _ in
    EventLoopDriver.poll?()
    return Py.newNone()
}

private let timerEntry: FastMethod = { _, _, _ in
    EventLoopDriver.timerFired()
    EventLoopDriver.poll?()
    return Py.newNone()
}

private let deferredEntry: FastMethod = { _, _, _ in
    EventLoopDriver.runDeferred()
    return Py.newNone()
}

private let attachEntry: FastMethod = { _, args, nargs in
    guard nargs == 3, let args, let loop = args[0], let state = args[1], let name = args[2] else {
        Py.raise(Py.typeError, "attach(loop, state, name)")
        return nil
    }
    EventLoopDriver.attachLoop(loop)
    EventLoopDriver.attached?(loop, state == Py.none ? nil : state, Py.string(name) ?? "asyncio")
    return Py.newNone()
}

extension EventLoopDriver {
    fileprivate static func attachLoop(_ l: PyRef) {
        Py.incref(l)
        loop = l
        callSoon = PyObject_GetAttrString(l, "call_soon")
        if callSoon == nil { PyErr_Clear() }
    }
}
