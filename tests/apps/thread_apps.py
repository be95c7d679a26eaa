"""Applications for tests/e2e/test_worker_threads.py: the worker threads of one process as a group.

`thread_apps:wsgi` and `thread_apps:asgi` answer every request with the
serving thread (`main` for the process's main thread, where worker 0 runs,
else `other`) and its ident, after an optional wait:

- `/slow?ms=N` waits N ms first (requests in flight on every worker thread
  when a stop comes: under WSGI a waiting thread cannot accept, so the next
  connection goes to another);
- `/wedge-other` answers after 0.2 s on the main thread (so that, with a few
  such requests at once, some go to the other thread), and on any other
  records `wedged` in `$PEREGRINE_TEST_STATE/events.log` and never returns
  (the thread is wedged: `time.sleep` under WSGI, a blocking sleep inside
  the event loop under ASGI), so that worker 0's heartbeat must speak for a
  thread that has stopped running its loop.

`thread_apps:asgi_failing_other` fails its lifespan startup on any thread but
the main one.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable


STATE = Path(os.environ.get("PEREGRINE_TEST_STATE", "."))


def _wedge() -> None:
    """Records that the other thread is wedged (the test waits for it), then blocks it."""
    with (STATE / "events.log").open("a", encoding="utf-8") as log:
        log.write("wedged\n")
    time.sleep(3600)


def _where() -> bytes:
    """`main|other IDENT gil=True|False`: which thread serves, and whether the GIL is on."""
    kind = "main" if threading.current_thread() is threading.main_thread() else "other"
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    return f"{kind} {threading.get_ident()} gil={gil}".encode()


def _wait_ms(query: str) -> int:
    return int(parse_qs(query).get("ms", ["0"])[0])


def wsgi(environ: dict[str, Any], start_response: Callable[..., object]) -> Iterable[bytes]:
    path = environ["PATH_INFO"]
    if path == "/wedge-other":
        if threading.current_thread() is not threading.main_thread():
            _wedge()
        time.sleep(0.2)
    if path == "/slow":
        time.sleep(_wait_ms(environ.get("QUERY_STRING", "")) / 1000)
    body = _where()
    start_response("200 OK", [("content-type", "text/plain"), ("content-length", str(len(body)))])
    return [body]


async def _lifespan(
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
    fail_other: bool,
) -> None:
    while True:
        message = await receive()
        kind = message["type"].rsplit(".", 1)[1]
        if kind == "startup" and fail_other and threading.current_thread() is not threading.main_thread():
            await send({"type": "lifespan.startup.failed", "message": "this thread's startup fails"})
            return
        await send({"type": f"lifespan.{kind}.complete"})
        if kind == "shutdown":
            return


async def asgi(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(receive, send, fail_other=False)
        return
    path = scope["path"]
    if path == "/wedge-other":
        if threading.current_thread() is not threading.main_thread():
            _wedge()  # blocks this thread's event loop: the thread is wedged
        await asyncio.sleep(0.2)
    if path == "/slow":
        await asyncio.sleep(_wait_ms(scope["query_string"].decode()) / 1000)
    body = _where()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def asgi_failing_other(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(receive, send, fail_other=True)
        return
    await asgi(scope, receive, send)
