"""Applications for tests/e2e/test_worker_threads_crosstalk.py: `crosstalk_apps:wsgi`, `crosstalk_apps:asgi`.

Each answers a request with everything that request carried, so that a
response given the wrong request's state (environ/scope, input, start_response
or send) shows:

- `x-nonce`: the request's `x-nonce` header; `x-query`: the `nonce` of its
  query string; `x-path`: its path;
- `x-thread`: the serving thread's ident, `x-gil`: whether the GIL is on;
- the body, in several chunks (a WSGI iterable of many items, ASGI
  `more_body` messages) with a pause between them so that other requests of
  the same worker thread (ASGI) and of the other thread run meanwhile:
  `nonce=HEADER;query=QUERY;path=PATH;` then the request body (read in
  pieces through `wsgi.input` or `receive()`) cut into CHUNK-byte pieces.

The WSGI application also keeps the server's objects of one request
(`/stash`: its wsgi.input, start_response and write) for a later request,
served by either thread, to call (`/use-stash`): each must raise, as the
request they belong to has ended, and its thread is in `x-thread`.

The ASGI application accepts the lifespan protocol and does nothing in it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

#: Size of the pieces the request body is read in and the response body is sent in.
CHUNK = 4096


def _query_nonce(query: str) -> str:
    return parse_qs(query).get("nonce", [""])[0]


def _gil() -> bytes:
    return b"1" if getattr(sys, "_is_gil_enabled", lambda: True)() else b"0"


def _prefix(header: bytes, query: bytes, path: bytes) -> bytes:
    return b"nonce=" + header + b";query=" + query + b";path=" + path + b";"


#: The objects /stash kept.
STASH: dict[str, Any] = {}


def _use_stash() -> dict[str, str]:
    outcomes = {}
    attempts: dict[str, Callable[[], object]] = {
        "input.read": lambda: STASH["input"].read(10),
        "input.readline": lambda: STASH["input"].readline(-1),
        "start_response": lambda: STASH["start_response"]("500 Oops", [("content-type", "text/plain")]),
        "write": lambda: STASH["write"](b"late"),
    }
    for name, attempt in attempts.items():
        try:
            result = attempt()
        except Exception as error:  # noqa: BLE001 (any exception is a refusal)
            outcomes[name] = f"raised {type(error).__name__}: {error}"
        else:
            outcomes[name] = f"returned {result!r}"
    return outcomes


def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
    path = environ["PATH_INFO"]
    thread = ("x-thread", str(threading.get_ident()))
    if path == "/stash":
        write = start_response("200 OK", [("content-type", "text/plain"), thread])
        STASH.update(input=environ["wsgi.input"], start_response=start_response, write=write)
        return iter([b"stashed"])
    if path == "/use-stash":
        start_response("200 OK", [("content-type", "application/json"), thread])
        return iter([json.dumps(_use_stash()).encode()])
    return _echo(environ, start_response)


def _echo(environ: dict[str, Any], start_response: Callable[..., object]) -> Iterator[bytes]:
    header = environ.get("HTTP_X_NONCE", "").encode("latin-1")
    query = _query_nonce(environ.get("QUERY_STRING", "")).encode("latin-1")
    path = environ["PATH_INFO"].encode("latin-1")
    stream = environ["wsgi.input"]
    pieces = []
    while piece := stream.read(CHUNK):
        pieces.append(piece)
    body = b"".join(pieces)
    start_response(
        "200 OK",
        [
            ("content-type", "application/octet-stream"),
            ("x-nonce", header.decode("latin-1")),
            ("x-query", query.decode("latin-1")),
            ("x-path", path.decode("latin-1")),
            ("x-thread", str(threading.get_ident())),
            ("x-gil", _gil().decode()),
        ],
    )
    return _wsgi_chunks(_prefix(header, query, path), body)


def _wsgi_chunks(prefix: bytes, body: bytes) -> Iterator[bytes]:
    yield prefix
    for start in range(0, len(body), CHUNK):
        time.sleep(0)  # lets the other worker thread run on a GIL build
        yield body[start : start + CHUNK]


async def asgi(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            kind = message["type"].rsplit(".", 1)[1]
            await send({"type": f"lifespan.{kind}.complete"})
            if kind == "shutdown":
                return
    header = dict(scope["headers"]).get(b"x-nonce", b"")
    query = _query_nonce(scope["query_string"].decode("latin-1")).encode("latin-1")
    path = scope["path"].encode("latin-1")
    pieces = []
    while True:
        message = await receive()
        pieces.append(message.get("body", b""))
        if not message.get("more_body"):
            break
        await asyncio.sleep(0)
    body = b"".join(pieces)
    headers = [
        (b"content-type", b"application/octet-stream"),
        (b"x-nonce", header),
        (b"x-query", query),
        (b"x-path", path),
        (b"x-thread", str(threading.get_ident()).encode()),
        (b"x-gil", _gil()),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": _prefix(header, query, path), "more_body": True})
    for start in range(0, len(body), CHUNK):
        await asyncio.sleep(0)  # other requests of this thread's loop go on meanwhile
        await send({"type": "http.response.body", "body": body[start : start + CHUNK], "more_body": True})
    await send({"type": "http.response.body", "body": b""})
