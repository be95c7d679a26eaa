"""Applications for the fleet tests (inherited sockets, health, draining, admission control).

`fleet_apps:asgi` and `fleet_apps:wsgi` answer the same routes:

- `/env`: the `LISTEN_*` variables the application can see, as JSON (none, once the server took them);
- `/slow?ms=N`: records `slow started`, waits N ms (ASGI: `asyncio.sleep`; WSGI: `time.sleep`), records
  `slow finished`, answers `slow done`;
- anything else: records `call PATH`, answers `ok PID`.

Events go to $PEREGRINE_TEST_STATE/events.log (the temporary directory when unset), one line each.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    from _typeshed.wsgi import StartResponse, WSGIEnvironment

    Receive = Callable[[], Awaitable[dict[str, Any]]]
    Send = Callable[[dict[str, Any]], Awaitable[None]]

STATE = Path(os.environ.get("PEREGRINE_TEST_STATE") or tempfile.gettempdir())
EVENTS = STATE / "events.log"


def record(event: str) -> None:
    """Append one line to the events log."""
    with EVENTS.open("a", encoding="utf-8") as f:
        f.write(event + "\n")


def listen_environment() -> bytes:
    return json.dumps({k: v for k, v in os.environ.items() if k.startswith("LISTEN_")}).encode()


def milliseconds(query: str) -> int:
    return int(parse_qs(query).get("ms", ["0"])[0])


async def asgi(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    """The ASGI application (no lifespan)."""
    if scope["type"] != "http":
        return
    path = scope["path"]
    if path == "/env":
        body = listen_environment()
    elif path == "/slow":
        record("slow started")
        await asyncio.sleep(milliseconds(scope["query_string"].decode()) / 1000)
        record("slow finished")
        body = b"slow done"
    else:
        record(f"call {path}")
        body = f"ok {os.getpid()}".encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})


def wsgi(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    """The WSGI application."""
    path = environ["PATH_INFO"]
    if path == "/env":
        body = listen_environment()
    elif path == "/slow":
        record("slow started")
        time.sleep(milliseconds(environ.get("QUERY_STRING", "")) / 1000)
        record("slow finished")
        body = b"slow done"
    else:
        record(f"call {path}")
        body = f"ok {os.getpid()}".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
