"""Which kind of thread runs the application code: `thread_kind()` for the test applications.

- `main`: the worker process's main thread (worker 0 serves on it);
- `server`: another worker thread of the same process (`--free-threaded
  --workers N`, or PEREGRINE_WORKER_CONTEXTS): a thread the server started,
  which Python's `threading` did not (it sees it as a dummy thread);
- `python`: a thread started through `threading`, such as an executor's
  (where frameworks run synchronous views).

So "the application runs on the server's own thread" is `main` with one
worker thread, `main` or `server` with several.
"""

from __future__ import annotations

import threading


def thread_kind() -> str:
    """`main`, `server` or `python` for the calling thread."""
    current = threading.current_thread()
    if current is threading.main_thread():
        return "main"
    if isinstance(current, threading._DummyThread):  # a thread Python did not start
        return "server"
    return "python"
