import CPython

/// Releasing the GIL around blocking waits, so application threads run
/// while the worker sleeps in epoll or waits on a socket.
public enum GIL {
    /// Runs `body` without the GIL. `body` must not touch Python.
    @inlinable
    public static func released<T>(_ body: () -> T) -> T {
        let state = PyEval_SaveThread()
        defer { PyEval_RestoreThread(state) }
        return body()
    }
}
