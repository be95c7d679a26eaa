"""Applications for the abrupt-client tests (tests/e2e/test_abrupt_clients.py): `abrupt_apps:asgi`, `abrupt_apps:wsgi`.

Each request that carries `?id=ID` appends what the application saw to the
record of ID; `GET /log?id=ID` answers that record as a JSON list and forgets
it (so records never pile up across thousands of connections). Entries:

- `started`: the application was called;
- ASGI: the type of every `receive()` message (`http.request`,
  `http.disconnect`, `websocket.disconnect:CODE`), and `send-raised:TYPE` when
  `send()` raised (TYPE is the exception's class name);
- WSGI: `read-raised:TYPE` when a `wsgi.input` read raised, `short-read` when
  it ended before CONTENT_LENGTH, `body-complete` when it did not, and
  `closed:N` when the server closed the response iterator after N chunks.

Routes: `/upload` reads the whole body in 1 KiB reads then answers 200;
`/stream` streams 64 KiB chunks (up to 64 MiB) to a client that is expected to
vanish; `/hello` answers at once; `/stats` answers the worker's pid, RSS
(KiB), open descriptors and live Python objects after a full collection; a
WebSocket (ASGI) is accepted and echoed until it ends. Nothing else keeps
state between requests.
"""

from __future__ import annotations

import gc
import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from collections.abc import Awaitable

    Scope = dict[str, Any]
    Message = dict[str, Any]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]

Environ = dict[str, Any]
StartResponse = Callable[..., Any]

CHUNK = b"x" * 65536
CHUNKS = 1024

_records: dict[str, list[str]] = {}
_lock = threading.Lock()


def note(ident: str | None, entry: str) -> None:
    if ident:
        with _lock:
            _records.setdefault(ident, []).append(entry)


def take(ident: str) -> bytes:
    with _lock:
        return json.dumps(_records.pop(ident, [])).encode()


def stats() -> bytes:
    """The worker's pid, RSS (KiB), descriptor count and live Python objects, as JSON."""
    gc.collect()
    rss = 0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return json.dumps(
        {
            "pid": os.getpid(),
            "rss_kib": rss,
            "fds": sum(1 for _ in Path("/proc/self/fd").iterdir()),
            "objects": len(gc.get_objects()),
            "records": len(_records),
        }
    ).encode()


def query_id(query: str) -> str | None:
    values = parse_qs(query).get("id")
    return values[0] if values else None


# --- ASGI ---------------------------------------------------------------------------------------------------


async def _answer(send: Send, body: bytes, content_type: bytes = b"application/json") -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _websocket(ident: str | None, receive: Receive, send: Send) -> None:
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    note(ident, "started")
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            note(ident, f"websocket.disconnect:{message.get('code')}")
            return
        note(ident, message["type"])
        reply = {"type": "websocket.send", "bytes": message.get("bytes"), "text": message.get("text")}
        try:
            await send(reply)
        except OSError as error:
            note(ident, f"send-raised:{type(error).__name__}")


async def _stream(ident: str | None, receive: Receive, send: Send) -> None:
    note(ident, "started")
    try:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        for _ in range(CHUNKS):
            await send({"type": "http.response.body", "body": CHUNK, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    except OSError as error:
        note(ident, f"send-raised:{type(error).__name__}")
        note(ident, (await receive())["type"])
        return
    note(ident, "stream-complete")


async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
    """The ASGI routes (served with --no-lifespan)."""
    ident = query_id(scope.get("query_string", b"").decode())
    if scope["type"] == "websocket":
        await _websocket(ident, receive, send)
        return
    path = scope["path"]
    if path == "/stats":
        await _answer(send, stats())
        return
    if path == "/log":
        await _answer(send, take(ident or ""))
        return
    if path == "/stream":
        await _stream(ident, receive, send)
        return
    note(ident, "started")
    while True:
        message = await receive()
        note(ident, message["type"])
        if message["type"] == "http.disconnect":
            return
        if not message.get("more_body", False):
            break
    await _answer(send, b"hello", b"text/plain")


# --- WSGI ---------------------------------------------------------------------------------------------------


class _Stream:
    """A response iterator that records how many chunks went out before the server closed it."""

    def __init__(self, ident: str | None) -> None:
        self.ident = ident
        self.sent = 0

    def __iter__(self) -> Iterator[bytes]:
        for _ in range(CHUNKS):
            self.sent += 1
            yield CHUNK

    def close(self) -> None:
        note(self.ident, f"closed:{self.sent}")


def _read_all(ident: str | None, environ: Environ) -> None:
    """Reads CONTENT_LENGTH bytes, or (chunked: no CONTENT_LENGTH) until the end of the body."""
    length = environ.get("CONTENT_LENGTH")
    remaining = int(length) if length else -1
    stream = environ["wsgi.input"]
    while remaining != 0:
        try:
            data = stream.read(min(remaining, 1024) if remaining > 0 else 1024)
        except OSError as error:
            note(ident, f"read-raised:{type(error).__name__}")
            return
        if not data:
            if remaining > 0:
                note(ident, "short-read")
                return
            break
        remaining -= len(data) if remaining > 0 else 0
    note(ident, "body-complete")


def wsgi(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """The WSGI routes."""
    ident = query_id(environ.get("QUERY_STRING", ""))
    path = environ["PATH_INFO"]
    if path in ("/stats", "/log"):
        body = stats() if path == "/stats" else take(ident or "")
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]
    note(ident, "started")
    if path == "/stream":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return _Stream(ident)
    _read_all(ident, environ)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5")])
    return [b"hello"]
