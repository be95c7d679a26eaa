"""The applications the HTTP/2 conformance suite (tests/h2spec) serves: `h2_apps:asgi_app` and `h2_apps:wsgi_app`.

Both route on the first path segment to the same small behaviours, so every
test can run against either interface:

- `/hello`: 200 `hello` (text/plain, Content-Length 5);
- `/echo`: the request body back (application/octet-stream), with
  `x-body-length`;
- `/large?size=N&chunk=M`: N bytes of a fixed pattern (`pattern(N)`), made and
  sent in chunks of M bytes (default 65536) without Content-Length, so the
  server streams it under flow control and the application never holds it;
- `/headers`: JSON `{"method", "path", "query", "scheme", "http_version",
  "headers": [[name, value], ...]}` of what the application was given (for
  WSGI the headers are rebuilt from HTTP_* and CONTENT_* in environ order);
- `/wait?ms=N`: `waited` after N milliseconds;
- `/status?code=N`: an empty response with that status;
- `/big-header?size=N`: 200 with one `x-big` response header of N bytes;
- `/hop`: a response that (wrongly) carries connection-specific and
  mixed-case header fields, which an HTTP/2 server must drop or lower-case;
- `/boom`: raises before starting a response (the server answers 500);
- `/trailers` (ASGI only: WSGI has no trailers): body `trailers` then the
  trailer field `x-checksum` via the `http.response.trailers` extension
  when the server offers it.

Every call is appended as `call METHOD PATH` to $PEREGRINE_TEST_STATE/events.log
so a test can tell that a malformed request never reached the application.
The WSGI application is wrapped in wsgiref.validate.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs
from wsgiref.validate import validator

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
DEFAULT_CHUNK = 65536
#: The response trailer /trailers sends.
TRAILER = (b"x-checksum", b"sha256-of-nothing")


def record(event: str) -> None:
    """Append one line to the events file (O_APPEND: lines never interleave)."""
    with EVENTS.open("a", encoding="utf-8") as events:
        events.write(event + "\n")


BLOCK = bytes(range(251))


def pattern(size: int, start: int = 0) -> bytes:
    """Octets `start` .. `start + size` of the body /large answers: bytes 0..250 repeated."""
    offset = start % len(BLOCK)
    return (BLOCK[offset:] + BLOCK * (size // len(BLOCK) + 1))[:size]


def params(query_string: str) -> dict[str, str]:
    """The query as a dict of last values."""
    return {key: values[-1] for key, values in parse_qs(query_string, keep_blank_values=True).items()}


def number(query: dict[str, str], name: str, default: int) -> int:
    """An integer query parameter."""
    return int(query.get(name, default))


# --- ASGI ------------------------------------------------------------------------------------------


async def lifespan(receive: Receive, send: Send) -> None:
    """Complete startup and shutdown."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def read_all(receive: Receive) -> bytes:
    """The whole request body."""
    parts = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(parts)


async def respond(
    send: Send, body: bytes, status: int = 200, content_type: bytes = b"text/plain", extra: list[Any] | None = None
) -> None:
    """A whole response with Content-Length."""
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def asgi_report(scope: Scope) -> dict[str, Any]:
    """What /headers answers for an ASGI scope."""
    return {
        "method": scope["method"],
        "path": scope["path"],
        "query": scope["query_string"].decode("latin-1"),
        "scheme": scope.get("scheme", "http"),
        "http_version": scope["http_version"],
        "headers": [[name.decode("latin-1"), value.decode("latin-1")] for name, value in scope["headers"]],
        "trailers_extension": "http.response.trailers" in (scope.get("extensions") or {}),
    }


async def asgi_http(scope: Scope, receive: Receive, send: Send) -> None:  # noqa: PLR0912 (one branch per route)
    """One behaviour per first path segment."""
    name = scope["path"].lstrip("/").split("/", 1)[0]
    query = params(scope["query_string"].decode("latin-1"))
    if name == "hello":
        await respond(send, b"hello")
    elif name == "echo":
        body = await read_all(receive)
        extra = [(b"x-body-length", str(len(body)).encode())]
        await respond(send, body, content_type=b"application/octet-stream", extra=extra)
    elif name == "large":
        size = number(query, "size", 1 << 20)
        chunk = number(query, "chunk", DEFAULT_CHUNK)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"x/pattern")]})
        for start in range(0, size, chunk):
            piece = pattern(min(chunk, size - start), start)
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    elif name == "headers":
        await read_all(receive)
        await respond(send, json.dumps(asgi_report(scope)).encode(), content_type=b"application/json")
    elif name == "wait":
        await asyncio.sleep(number(query, "ms", 100) / 1000)
        await respond(send, b"waited")
    elif name == "status":
        await send({"type": "http.response.start", "status": number(query, "code", 204), "headers": []})
        await send({"type": "http.response.body", "body": b""})
    elif name == "big-header":
        await respond(send, b"big", extra=[(b"x-big", b"b" * number(query, "size", 20000))])
    elif name == "hop":
        hop = [(b"connection", b"keep-alive"), (b"keep-alive", b"timeout=5"), (b"X-Mixed-Case", b"yes")]
        await respond(send, b"hop", extra=hop)
    elif name == "boom":
        raise RuntimeError("boom before the response")
    elif name == "trailers":
        offered = "http.response.trailers" in (scope.get("extensions") or {})
        opening: Message = {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
        if offered:
            opening["trailers"] = True
        await send(opening)
        # ASGI trailers extension: the body ends (more_body False), then the server waits for the trailers.
        await send({"type": "http.response.body", "body": b"trailers"})
        if offered:
            await send({"type": "http.response.trailers", "headers": [TRAILER], "more_trailers": False})
    else:
        await respond(send, b"no route " + name.encode(), 404)


async def asgi_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Lifespan, then the routes above (every HTTP call recorded)."""
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    assert scope["type"] == "http", scope["type"]
    record(f"call {scope['method']} {scope['path']}")
    await asgi_http(scope, receive, send)


# --- WSGI ------------------------------------------------------------------------------------------


def wsgi_report(environ: Environ) -> dict[str, Any]:
    """What /headers answers for a WSGI environ."""
    headers = []
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            headers.append([key[5:].lower().replace("_", "-"), value])
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH") and value:
            headers.append([key.lower().replace("_", "-"), value])
    return {
        "method": environ["REQUEST_METHOD"],
        "path": environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", ""),
        "query": environ.get("QUERY_STRING", ""),
        "scheme": environ["wsgi.url_scheme"],
        "http_version": environ.get("SERVER_PROTOCOL", ""),
        "headers": headers,
        "trailers_extension": False,
    }


def wsgi_read_all(environ: Environ) -> bytes:
    """The whole body, read with read(65536) until EOF."""
    chunks = []
    while chunk := environ["wsgi.input"].read(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def wsgi_respond(
    start_response: StartResponse,
    body: bytes,
    status: str = "200 OK",
    content_type: str = "text/plain",
    extra: list[tuple[str, str]] | None = None,
) -> list[bytes]:
    """A whole response with Content-Length."""
    headers = [("Content-Type", content_type), ("Content-Length", str(len(body))), *(extra or [])]
    start_response(status, headers)
    return [body]


def wsgi_stream(size: int, chunk: int) -> Iterator[bytes]:
    """The /large body, one chunk at a time (made as it is asked for: the body is never whole in memory)."""
    for start in range(0, size, chunk):
        yield pattern(min(chunk, size - start), start)


def wsgi_routes(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:  # noqa: PLR0911 (one per route)
    """One behaviour per first path segment (the same as the ASGI ones, without trailers)."""
    path = environ.get("PATH_INFO", "")
    name = path.lstrip("/").split("/", 1)[0]
    query = params(environ.get("QUERY_STRING", ""))
    if name == "hello":
        return wsgi_respond(start_response, b"hello")
    if name == "echo":
        body = wsgi_read_all(environ)
        return wsgi_respond(
            start_response, body, content_type="application/octet-stream", extra=[("X-Body-Length", str(len(body)))]
        )
    if name == "large":
        start_response("200 OK", [("Content-Type", "x/pattern")])
        return wsgi_stream(number(query, "size", 1 << 20), number(query, "chunk", DEFAULT_CHUNK))
    if name == "headers":
        wsgi_read_all(environ)
        return wsgi_respond(start_response, json.dumps(wsgi_report(environ)).encode(), content_type="application/json")
    if name == "wait":
        time.sleep(number(query, "ms", 100) / 1000)
        return wsgi_respond(start_response, b"waited")
    if name == "status":
        code = number(query, "code", 204)
        start_response(f"{code} Status", [] if code in (204, 304) else [("Content-Type", "text/plain")])
        return []
    if name == "big-header":
        return wsgi_respond(start_response, b"big", extra=[("X-Big", "b" * number(query, "size", 20000))])
    if name == "hop":
        hop = [("Connection", "keep-alive"), ("Keep-Alive", "timeout=5"), ("X-Mixed-Case", "yes")]
        return wsgi_respond(start_response, b"hop", extra=hop)
    if name == "boom":
        raise RuntimeError("boom before the response")
    return wsgi_respond(start_response, b"no route " + name.encode(), "404 Not Found")


_validated_routes = validator(wsgi_routes)


#: The suite can be pointed at hypercorn (H2SPEC_SERVER=hypercorn) to check the tests themselves; its WSGI
#: environ gives SERVER_PORT as an int, which wsgiref.validate refuses, so that one key is mended there.
UNDER_HYPERCORN = os.environ.get("H2SPEC_SERVER") == "hypercorn"


def wsgi_app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Record the call, then the validated routes."""
    record(f"call {environ.get('REQUEST_METHOD')} {environ.get('PATH_INFO', '')}")
    if UNDER_HYPERCORN and not isinstance(environ.get("SERVER_PORT"), str):
        environ["SERVER_PORT"] = str(environ.get("SERVER_PORT"))
    result: Iterable[bytes] = _validated_routes(environ, start_response)
    return result
