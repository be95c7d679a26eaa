"""Applications for the HTTP/3 protocol-robustness suite: `h3_apps:wsgi` and `h3_apps:asgi`.

Every request is appended as `call METHOD PATH` to $PEREGRINE_TEST_STATE/events.log,
so a test can tell that a malformed request never reached the application;
what an application learns about its client going away is appended there too.
Routes (both interfaces unless marked):

- `/hello`: 200 `hello`;
- `/echo`: reads the whole body, answers JSON `{"length", "sha256"}`;
- `/reader?id=X`: logs `body X` at its first body bytes, then reads on; logs
  how the body ended: `complete X N`, or (ASGI) `disconnect X N` for
  http.disconnect, or (WSGI) `read-error X TYPE` when wsgi.input raises and
  `read-short X N` when it ends early;
- `/drip?id=X&chunk=C&count=K`: a streamed response of K chunks of C bytes;
  logs `first X` once the first chunk was handed over, then (ASGI)
  `disconnect X` when receive() reports http.disconnect or `send-error X TYPE`
  when send() raises, (WSGI) `closed X after N` from the iterable's close();
- `/status?code=N`: that status, a body unless 204/304;
- `/head`: 200 with a 10-byte body and its Content-Length (for HEAD);
- `/slow?ms=N`: answers after N ms; logs `active N` with the number of its
  requests running at once (ASGI: concurrent; WSGI: one at a time);
- `/trailers` (ASGI): body, then the trailer `x-checksum` via http.response.trailers;
- `/early-hint` (ASGI): a 103 Early Hints, then 200 `final`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
import time
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

STATE = Path(os.environ.get("PEREGRINE_TEST_STATE") or tempfile.gettempdir())
EVENTS = STATE / "events.log"
PIECE = 64 * 1024
#: The response trailer /trailers sends.
TRAILER = (b"x-checksum", b"sha256-of-body")
#: /slow requests running now (per process; the tests run one worker).
ACTIVE = [0]


def log_event(event: str) -> None:
    """Append one line to the events file (O_APPEND: lines never interleave)."""
    with EVENTS.open("a", encoding="utf-8") as events:
        events.write(event + "\n")


def params(query_string: str) -> dict[str, str]:
    """The last value of each query parameter."""
    return {k: v[-1] for k, v in parse_qs(query_string).items()}


def status_line(code: int) -> str:
    """A WSGI status line for `code`."""
    reasons = {200: "OK", 204: "No Content", 304: "Not Modified", 404: "Not Found"}
    return f"{code} {reasons.get(code, 'Status')}"


# MARK: - WSGI


def _wsgi_reply(
    start_response: StartResponse, body: bytes, code: int = 200, content_type: str = "text/plain"
) -> list[bytes]:
    start_response(status_line(code), [("Content-Type", content_type), ("Content-Length", str(len(body)))])
    return [body]


def _wsgi_echo(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    stream = environ["wsgi.input"]
    digest = hashlib.sha256()
    length = 0
    while piece := stream.read(PIECE):
        digest.update(piece)
        length += len(piece)
    body = json.dumps({"length": length, "sha256": digest.hexdigest()}).encode()
    return _wsgi_reply(start_response, body, content_type="application/json")


def _wsgi_reader(environ: Environ, start_response: StartResponse, ident: str) -> Iterable[bytes]:
    stream = environ["wsgi.input"]
    declared = int(environ.get("CONTENT_LENGTH") or 0)
    total = 0
    try:
        while piece := stream.read(4096):
            if total == 0:
                log_event(f"body {ident}")
            total += len(piece)
    except Exception as exc:
        log_event(f"read-error {ident} {type(exc).__name__}")
        raise
    log_event(f"complete {ident} {total}" if total >= declared else f"read-short {ident} {total}")
    return _wsgi_reply(start_response, b"%d" % total)


class _Drip:
    """K chunks of C bytes; close() logs how many were taken."""

    def __init__(self, ident: str, chunk: int, count: int) -> None:
        self.ident = ident
        self.chunk = b"d" * chunk
        self.count = count
        self.taken = 0

    def __iter__(self) -> Iterator[bytes]:
        for _ in range(self.count):
            self.taken += 1
            if self.taken == 2:
                log_event(f"first {self.ident}")
            yield self.chunk

    def close(self) -> None:
        log_event(f"closed {self.ident} after {self.taken}")


def _wsgi_slow(ms: int, start_response: StartResponse) -> Iterable[bytes]:
    ACTIVE[0] += 1
    log_event(f"active {ACTIVE[0]}")
    try:
        time.sleep(ms / 1000)
    finally:
        ACTIVE[0] -= 1
    return _wsgi_reply(start_response, b"slept")


def wsgi(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:  # noqa: PLR0911 (one per route)
    """Route on PATH_INFO."""
    path = environ.get("PATH_INFO", "")
    query = params(environ.get("QUERY_STRING", ""))
    log_event(f"call {environ['REQUEST_METHOD']} {path}")
    if path == "/hello":
        return _wsgi_reply(start_response, b"hello")
    if path == "/echo":
        return _wsgi_echo(environ, start_response)
    if path == "/reader":
        return _wsgi_reader(environ, start_response, query["id"])
    if path == "/drip":
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return _Drip(query["id"], int(query.get("chunk", PIECE)), int(query.get("count", 1000)))
    if path == "/status":
        code = int(query["code"])
        return _wsgi_reply(start_response, b"" if code in (204, 304) else b"status body", code)
    if path == "/head":
        return _wsgi_reply(start_response, b"0123456789")
    if path == "/slow":
        return _wsgi_slow(int(query.get("ms", "100")), start_response)
    return _wsgi_reply(start_response, b"", 404)


# MARK: - ASGI


async def _respond(send: Send, body: bytes, status: int = 200, content_type: bytes = b"text/plain") -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _asgi_echo(receive: Receive, send: Send) -> None:
    digest = hashlib.sha256()
    length = 0
    while True:
        message = await receive()
        body = message.get("body", b"")
        digest.update(body)
        length += len(body)
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
    await _respond(
        send, json.dumps({"length": length, "sha256": digest.hexdigest()}).encode(), content_type=b"application/json"
    )


async def _asgi_reader(receive: Receive, send: Send, ident: str) -> None:
    total = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            log_event(f"disconnect {ident} {total}")
            return
        body = message.get("body", b"")
        if body and total == 0:
            log_event(f"body {ident}")
        total += len(body)
        if not message.get("more_body", False):
            break
    log_event(f"complete {ident} {total}")
    await _respond(send, b"%d" % total)


async def _asgi_drip(receive: Receive, send: Send, ident: str, chunk: int, count: int) -> None:
    gone = asyncio.Event()

    async def watch() -> None:
        while (await receive())["type"] == "http.request":
            pass
        log_event(f"disconnect {ident}")
        gone.set()

    watcher = asyncio.ensure_future(watch())
    piece = b"d" * chunk
    try:
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/octet-stream")]}
        )
        for i in range(count):
            if gone.is_set():
                return
            await send({"type": "http.response.body", "body": piece, "more_body": True})
            if i == 1:
                log_event(f"first {ident}")
            await asyncio.sleep(0.005)
        await send({"type": "http.response.body", "body": b""})
    except Exception as exc:  # noqa: BLE001 (what the client's reset does is the fact under test)
        log_event(f"send-error {ident} {type(exc).__name__}")
    finally:
        try:
            await asyncio.wait_for(watcher, 10)
        except TimeoutError:
            log_event(f"no-disconnect {ident}")


async def _asgi_slow(send: Send, ms: int) -> None:
    ACTIVE[0] += 1
    log_event(f"active {ACTIVE[0]}")
    try:
        await asyncio.sleep(ms / 1000)
    finally:
        ACTIVE[0] -= 1
    await _respond(send, b"slept")


async def _asgi_trailers(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/plain"), (b"trailer", b"x-checksum")],
            "trailers": True,
        }
    )
    await send({"type": "http.response.body", "body": b"part one,", "more_body": True})
    await send({"type": "http.response.body", "body": b"part two", "more_body": False})
    await send({"type": "http.response.trailers", "headers": [TRAILER], "more_trailers": False})


async def _asgi_early_hint(send: Send) -> None:
    await send({"type": "http.response.early_hint", "links": [b"</style.css>; rel=preload; as=style"]})
    await _respond(send, b"final")


async def asgi(scope: Scope, receive: Receive, send: Send) -> None:  # noqa: PLR0912 (one branch per route)
    """Route on the path."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    path = scope["path"]
    query = params(scope["query_string"].decode())
    log_event(f"call {scope['method']} {path}")
    if path == "/hello":
        await _respond(send, b"hello")
    elif path == "/echo":
        await _asgi_echo(receive, send)
    elif path == "/reader":
        await _asgi_reader(receive, send, query["id"])
    elif path == "/drip":
        await _asgi_drip(receive, send, query["id"], int(query.get("chunk", PIECE)), int(query.get("count", 1000)))
    elif path == "/status":
        code = int(query["code"])
        await _respond(send, b"" if code in (204, 304) else b"status body", code)
    elif path == "/head":
        await _respond(send, b"0123456789")
    elif path == "/slow":
        await _asgi_slow(send, int(query.get("ms", "100")))
    elif path == "/trailers":
        await _asgi_trailers(send)
    elif path == "/early-hint":
        await _asgi_early_hint(send)
    else:
        await _respond(send, b"", 404)
