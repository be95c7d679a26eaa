"""Applications for the process-model tests (tests/e2e/test_process_*.py): `process_apps:wsgi`, `process_apps:asgi`.

Both answer the same routes:

- `/pid` (optionally `?ms=N`: wait N ms first): the worker's process id as the body;
- `/hello`: `hello`;
- `/multiprocess` (WSGI): `wsgi.multiprocess=True|False`;
- `/slow?s=SECONDS`: records `slow started PID`, waits, records `slow finished PID`, answers `slow done`;
- `/crash`: the worker exits at once with status 1 (`os._exit(1)`);
- `/segv`: the worker sends itself SIGSEGV (`os.kill`);
- `/fault`: the worker dereferences a null pointer (`ctypes.string_at(0)`): a real segmentation fault;
- `/block`: records `block started PID` and blocks the worker for 60 s (`time.sleep`, also in the ASGI
  coroutine: the event loop is stuck, like a forgotten blocking call).

The ASGI application runs the lifespan protocol: it records `lifespan.startup PID` and
`lifespan.shutdown PID`, and at shutdown writes `shutdown-PID` into the state directory.

Events go to $PEREGRINE_TEST_STATE/events.log (the temporary directory when unset), one line each.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

STATE = Path(os.environ.get("PEREGRINE_TEST_STATE") or tempfile.gettempdir())
EVENTS = STATE / "events.log"


def record(event: str) -> None:
    """Append one line to the events file (O_APPEND: lines never interleave)."""
    with EVENTS.open("a", encoding="utf-8") as events:
        events.write(event + "\n")


def _query(text: str) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(text).items()}


def _die(how: str) -> None:
    if how == "crash":
        os._exit(1)
    if how == "fault":
        ctypes.string_at(0)
    os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(5)  # the signal arrives before this returns


def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The WSGI application."""
    path = environ.get("PATH_INFO", "")
    query = _query(environ.get("QUERY_STRING", ""))
    pid = os.getpid()
    body: bytes
    if path == "/pid":
        time.sleep(float(query.get("ms", "0")) / 1000)
        body = str(pid).encode()
    elif path == "/hello":
        body = b"hello"
    elif path == "/multiprocess":
        body = f"wsgi.multiprocess={environ['wsgi.multiprocess']!r}".encode()
    elif path == "/slow":
        record(f"slow started {pid}")
        time.sleep(float(query.get("s", "1")))
        record(f"slow finished {pid}")
        body = b"slow done"
    elif path in {"/crash", "/segv", "/fault"}:
        _die(path[1:])
        body = b"survived"
    elif path == "/block":
        record(f"block started {pid}")
        time.sleep(60)
        body = b"unblocked"
    else:
        start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "9")])
        return [b"not found"]
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


async def _lifespan(receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]) -> None:
    pid = os.getpid()
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            record(f"lifespan.startup {pid}")
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            record(f"lifespan.shutdown {pid}")
            (STATE / f"shutdown-{pid}").write_text("shutdown ran\n", encoding="utf-8")
            await send({"type": "lifespan.shutdown.complete"})
            return


async def asgi(
    scope: dict[str, Any], receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
) -> None:
    """The ASGI application."""
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
        return
    path = scope["path"]
    query = _query(scope.get("query_string", b"").decode("latin-1"))
    pid = os.getpid()
    status = 200
    if path == "/pid":
        await asyncio.sleep(float(query.get("ms", "0")) / 1000)
        body = str(pid).encode()
    elif path == "/hello":
        body = b"hello"
    elif path == "/slow":
        record(f"slow started {pid}")
        await asyncio.sleep(float(query.get("s", "1")))
        record(f"slow finished {pid}")
        body = b"slow done"
    elif path in {"/crash", "/segv", "/fault"}:
        _die(path[1:])
        body = b"survived"
    elif path == "/block":
        record(f"block started {pid}")
        time.sleep(60)  # blocks the event loop on purpose
        body = b"unblocked"
    else:
        status, body = 404, b"not found"
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
