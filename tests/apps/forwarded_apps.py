"""Applications that answer what the server told them about the client, for tests/e2e/test_forwarded.py.

`asgi` answers an http scope's `client`, `scheme` and `server` as JSON; for a
websocket scope it accepts, sends the same JSON as one text message and
closes. `wsgi` (wrapped in `wsgiref.validate.validator`) answers the environ
keys a proxy can change. Both also answer the forwarding headers as
received, so a test can see they were passed through untouched.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from wsgiref.validate import validator

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    from _typeshed.wsgi import StartResponse, WSGIEnvironment

    Receive = Callable[[], Awaitable[dict[str, Any]]]
    Send = Callable[[dict[str, Any]], Awaitable[None]]

FORWARDING = (b"forwarded", b"x-forwarded-for", b"x-forwarded-proto", b"x-forwarded-host", b"x-forwarded-port")


def _scope_view(scope: dict[str, Any]) -> dict[str, Any]:
    client = scope.get("client")
    server = scope.get("server")
    return {
        "type": scope["type"],
        "client": list(client) if client is not None else None,
        "scheme": scope["scheme"],
        "server": list(server) if server is not None else None,
        "headers": [[n.decode("latin-1"), v.decode("latin-1")] for n, v in scope["headers"] if n in FORWARDING],
        "host": [v.decode("latin-1") for n, v in scope["headers"] if n == b"host"],
        "proxy_ssl": scope.get("extensions", {}).get("peregrine.proxy_ssl"),
        "http_version": scope.get("http_version"),
    }


async def asgi(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    """The ASGI application: http and websocket scopes (no lifespan)."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = json.dumps(_scope_view(scope)).encode()
    if scope["type"] == "websocket":
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.send", "text": body.decode()})
        await send({"type": "websocket.close", "code": 1000})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


ENVIRON_KEYS = ("REMOTE_ADDR", "REMOTE_PORT", "wsgi.url_scheme", "HTTP_HOST", "SERVER_NAME", "SERVER_PORT")
HEADER_KEYS = ("HTTP_FORWARDED", "HTTP_X_FORWARDED_FOR", "HTTP_X_FORWARDED_PROTO", "HTTP_X_FORWARDED_HOST")


def _wsgi(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    view = {key: environ.get(key) for key in ENVIRON_KEYS}
    view["has_remote_port"] = "REMOTE_PORT" in environ
    view["proxy_ssl"] = environ.get("peregrine.proxy_ssl")
    view["SERVER_PROTOCOL"] = environ["SERVER_PROTOCOL"]
    view["headers"] = {key: environ[key] for key in HEADER_KEYS if key in environ}
    body = json.dumps(view).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


wsgi = validator(_wsgi)
