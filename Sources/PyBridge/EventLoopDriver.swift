import CPython
import CPyShim
import Core

/// Runs an ASGI worker on an asyncio (or uvloop) event loop and gives the
/// server the few loop operations it needs: a reader callback for its epoll
/// descriptor, one rescheduled timer, and stop.
///
/// One per worker: the loop, its callbacks, the timer and the deferred flag
/// are that worker's, and a second worker in the process (on its own thread,
/// with its own loop) has its own driver. The C functions the loop calls
/// find their driver through the `self` object they are bound to (a capsule
/// pointing at it), not through shared state.
public final class EventLoopDriver {
    /// Called by the loop when the epoll descriptor is readable or the timer
    /// fires: process ready events without blocking.
    public var poll: (() -> Void)?
    /// Called once the loop runs (after lifespan startup), with the loop and
    /// the lifespan state (nil if lifespan is off or unsupported) and the
    /// loop's name.
    public var attached: ((PyRef, PyRef?, String) -> Void)?

    /// Called once after the tasks that ran in this loop iteration (see
    /// `requestDeferred`).
    public var deferred: (() -> Void)?

    // Held while the loop runs; released when `run` returns.
    private var loop: PyOwned?
    private var deferredFunction: PyOwned?
    private var callSoon: PyOwned?
    private var callLater: PyOwned?
    // Looked up once (with `callLater`): a String literal passed as a C
    // string is copied into a fresh array per call in an unoptimised build.
    private var cancelName: PyRef?
    private var deferredScheduled = false
    private var timerFunction: PyOwned?
    private var timer: PyOwned?
    private var timerDue: Instant?
    /// `stop()` was called: the loop runs on only for the lifespan shutdown
    /// and the async generators' cleanup, which must not be cut short by a
    /// callback of ours stopping it a second time.
    private var stopped = false

    public init() {}

    /// Runs until `stop()`; throws if lifespan startup fails. The functions
    /// given to the loop point at this driver without retaining it: `run`
    /// returns only after the loop is closed, and the worker keeps its driver
    /// at least that long.
    public func run(app: PyRef, fd: Int32, lifespan: Bool, uvloop: Bool) throws(StartupError) {
        guard let me = PyOwned(stealing: PyCapsule_New(Unmanaged.passUnretained(self).toOpaque(), nil, nil)) else {
            throw StartupError("cannot bind the event loop callbacks: \(takeTraceback().message)")
        }
        let pollFn = NativeTypeBuilder.function(name: "poll", pollEntry, boundTo: me.ref)
        let attachFn = NativeTypeBuilder.function(name: "attach", attachEntry, boundTo: me.ref)
        timerFunction = PyOwned(stealing: NativeTypeBuilder.function(name: "timer", timerEntry, boundTo: me.ref))
        deferredFunction = PyOwned(stealing: NativeTypeBuilder.function(name: "deferred", deferredEntry, boundTo: me.ref))
        // The tuple takes over the references put in it (it steals them).
        let args = PyOwned(stealing: PyTuple_New(6)!)
        pshim_tuple_set_item(args.ref, 0, PyOwned(borrowing: app).take())
        pshim_tuple_set_item(args.ref, 1, Py.int(Int(fd)))
        pshim_tuple_set_item(args.ref, 2, pollFn)
        pshim_tuple_set_item(args.ref, 3, attachFn)
        pshim_tuple_set_item(args.ref, 4, Py.bool(lifespan))
        pshim_tuple_set_item(args.ref, 5, Py.bool(uvloop))
        let serve = Runtime.attribute("serve_asgi")  // held until the loop is done
        let result = PyOwned(stealing: PyObject_Call(serve.ref, args.ref, nil))
        _ = consume args
        defer {
            callSoon = nil
            callLater = nil
            timer = nil; timerDue = nil
            timerFunction = nil
            deferredFunction = nil
            loop = nil
        }
        guard result != nil else {
            let tb = takeTraceback()
            if tb.exceptionName.hasSuffix("StartupFailed") {
                throw StartupError("ASGI lifespan startup failed: \(tb.message)")
            }
            throw StartupError("the event loop failed: \(tb.exceptionName): \(tb.message)", traceback: tb.text)
        }
    }

    /// Arranges one call of `poll` at `due` (replacing an earlier
    /// arrangement unless it is already due sooner); nil cancels.
    public func schedule(at due: Instant?, now: Instant) {
        guard loop != nil, !stopped else { return }
        if let due, let current = timerDue, current <= due, timer != nil { return }
        if let t = timer.take() {
            if PyOwned(stealing: PyObject_CallMethodNoArgs(t.ref, cancelName)) == nil { PyErr_Clear() }
            timerDue = nil
        }
        guard let due, let timerFunction = timerFunction.ref, let callLater = callLater?.ref else { return }
        let delay = Double(max(0, due.nanoseconds - now.nanoseconds)) / 1e9
        let args = PyOwned(stealing: PyTuple_New(2)!)
        pshim_tuple_set_item(args.ref, 0, PyFloat_FromDouble(delay))
        pshim_tuple_set_item(args.ref, 1, PyOwned(borrowing: timerFunction).take())
        timer = PyOwned(stealing: PyObject_Call(callLater, args.ref, nil))
        if timer == nil { PyErr_Clear() } else { timerDue = due }
    }

    /// The arranged call happened: forget it. (The loop's clock and ours
    /// differ slightly, so whether it was "due" is not asked: a loop may run
    /// a timer a fraction of a millisecond early by our clock.)
    fileprivate func timerFired() {
        timer = nil
        timerDue = nil
    }

    /// Arranges one call of `deferred` with `loop.call_soon`: it runs after
    /// every callback already ready, so work the tasks of this iteration
    /// queue (HTTP/2 frames of many streams) is done once for all of them.
    public func requestDeferred() {
        guard !stopped, !deferredScheduled, let callSoon = callSoon.ref, let fn = deferredFunction.ref else { return }
        deferredScheduled = true
        if PyOwned(stealing: pshim_call1(callSoon, fn)) == nil {
            PyErr_Clear()
            deferredScheduled = false
            deferred?()
        }
    }

    fileprivate func runDeferred() {
        deferredScheduled = false
        if !stopped { deferred?() }
    }

    /// Ends `run_forever`, once. The arranged timer is cancelled (a
    /// cancelled handle is skipped even when already due), and from now on
    /// nothing of ours runs in the loop: the timer or the deferred call
    /// firing during the lifespan shutdown that follows would stop the loop
    /// again, before that shutdown completed ("Event loop stopped before
    /// Future completed").
    public func stop() {
        guard let loop = loop.ref, !stopped else { return }
        schedule(at: nil, now: Instant(nanoseconds: 0))
        stopped = true
        if PyOwned(stealing: pshim_call_method0(loop, "stop")) == nil { PyErr_Clear() }
    }

    /// A callback of ours fired: whether the server may run (not after `stop`).
    fileprivate var live: Bool { !stopped }

    fileprivate func attachLoop(_ l: PyRef) {
        loop = PyOwned(borrowing: l)
        callSoon = PyOwned(stealing: PyObject_GetAttrString(l, "call_soon"))
        if callSoon == nil { PyErr_Clear() }
        callLater = PyOwned(stealing: PyObject_GetAttrString(l, "call_later"))
        if callLater == nil { PyErr_Clear() }
        if cancelName == nil { cancelName = Py.intern("cancel") }
    }

    /// The driver a loop callback is bound to (its `self`, the capsule made
    /// by `run`).
    fileprivate static func bound(_ me: PyRef?) -> EventLoopDriver {
        Unmanaged<EventLoopDriver>.fromOpaque(PyCapsule_GetPointer(me, nil)!).takeUnretainedValue()
    }
}

private let pollEntry: FastMethod = { me, _, _ in
    let driver = EventLoopDriver.bound(me)
    if driver.live { driver.poll?() }
    return Py.newNone()
}

private let timerEntry: FastMethod = { me, _, _ in
    let driver = EventLoopDriver.bound(me)
    driver.timerFired()
    if driver.live { driver.poll?() }
    return Py.newNone()
}

private let deferredEntry: FastMethod = { me, _, _ in
    EventLoopDriver.bound(me).runDeferred()
    return Py.newNone()
}

private let attachEntry: FastMethod = { me, args, nargs in
    guard nargs == 3, let args, let loop = args[0], let state = args[1], let name = args[2] else {
        Py.raise(Py.typeError, "attach(loop, state, name)")
        return nil
    }
    let driver = EventLoopDriver.bound(me)
    driver.attachLoop(loop)
    driver.attached?(loop, state == Py.none ? nil : state, Py.string(name) ?? "asyncio")
    return Py.newNone()
}
