"""Applications for the leak test (tests/e2e/test_leaks.py): `leak_apps:wsgi_app` and `leak_apps:asgi_app`.

- `/stats`: JSON `{"rss_kib": N, "objects": N}` — the worker's resident set
  (from /proc/self/status) and `len(gc.get_objects())` after a full
  collection, so a test can compare them before and after a load;
- any other path: a small `hello` response; a request body, if any, is read
  whole and its length returned in `x-body-length` (so bodies cross the
  request path too).

Nothing here keeps state between requests: whatever grows across many
requests grows in the server. The WSGI application runs under
wsgiref.validate.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from wsgiref.validate import validator

if TYPE_CHECKING:
    from collections.abc import Awaitable

    Scope = dict[str, Any]
    Message = dict[str, Any]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]

Environ = dict[str, Any]
StartResponse = Callable[..., Any]


def stats() -> bytes:
    """The worker's RSS (KiB) and live Python object count, as JSON."""
    gc.collect()
    rss = 0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return json.dumps({"rss_kib": rss, "objects": len(gc.get_objects())}).encode()


def _wsgi_app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    if environ["PATH_INFO"] == "/stats":
        body = stats()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]
    length = int(environ.get("CONTENT_LENGTH") or 0)
    received = len(environ["wsgi.input"].read(length)) if length else 0
    start_response(
        "200 OK",
        [("Content-Type", "text/plain"), ("Content-Length", "5"), ("X-Body-Length", str(received))],
    )
    return [b"hello"]


wsgi_app = validator(_wsgi_app)


async def asgi_app(scope: Scope, receive: Receive, send: Send) -> None:
    """The same two routes for ASGI (served with --no-lifespan)."""
    if scope["path"] == "/stats":
        body = stats()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    received = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return
        received += len(message.get("body", b""))
        if not message.get("more_body", False):
            break
    headers = [(b"content-type", b"text/plain"), (b"content-length", b"5"), (b"x-body-length", str(received).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"hello"})
