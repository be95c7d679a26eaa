"""Applications for the access-log and request-id tests: `request_id_apps:wsgi` and `request_id_apps:asgi`.

Both answer every path with JSON of the request id fields the application saw
(WSGI: `HTTP_X_REQUEST_ID` and `HTTP_X_TRACE`; ASGI: every `x-request-id` and
`x-trace` value in `headers`, in order), and set the response field
`x-app: seen`. `/own-id` also sets its own `X-Request-ID: from-app` (the server
must not add a second one); `/status/N` answers with status N; `/sleep/MS` answers
after MS milliseconds.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable
from typing import Any

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[Message], Any]


def _status(path: str) -> int:
    if path.startswith("/status/"):
        return int(path.rsplit("/", 1)[1])
    return 200


def _sleep_seconds(path: str) -> float:
    return int(path.rsplit("/", 1)[1]) / 1000 if path.startswith("/sleep/") else 0.0


def _extra(path: str) -> list[tuple[str, str]]:
    return [("X-Request-ID", "from-app")] if path == "/own-id" else []


def wsgi(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    seen = {"x-request-id": environ.get("HTTP_X_REQUEST_ID"), "x-trace": environ.get("HTTP_X_TRACE")}
    body = json.dumps(seen).encode()
    status = _status(environ["PATH_INFO"])
    time.sleep(_sleep_seconds(environ["PATH_INFO"]))
    headers = [("Content-Type", "application/json"), ("X-App", "seen"), *_extra(environ["PATH_INFO"])]
    start_response(f"{status} Whatever", headers)
    return [body]


async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    seen: dict[str, list[str]] = {"x-request-id": [], "x-trace": []}
    for name, value in scope["headers"]:
        if name.decode() in seen:
            seen[name.decode()].append(value.decode("latin-1"))
    body = json.dumps(seen).encode()
    await asyncio.sleep(_sleep_seconds(scope["path"]))
    headers = [(b"content-type", b"application/json"), (b"x-app", b"seen")]
    headers += [(n.encode(), v.encode()) for n, v in _extra(scope["path"])]
    await send({"type": "http.response.start", "status": _status(scope["path"]), "headers": headers})
    await send({"type": "http.response.body", "body": body})
