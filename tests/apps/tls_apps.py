"""Applications for the TLS end-to-end tests: `tls_apps:wsgi` and `tls_apps:asgi`.

Both answer the same routes:

- `/info`: JSON of what the application learns about the connection (WSGI:
  `wsgi.url_scheme`, `HTTPS` and the `SSL_*` keys; ASGI: `scheme`,
  `http_version` and the `tls` scope extension), plus the worker's pid;
- `/echo`: reads the whole body and answers its length and SHA-256;
- `/big?n=N`: N bytes of `pattern(N)` from a generator, in 64 KiB pieces;
- `/file?n=N`: the same bytes from a file (WSGI `wsgi.file_wrapper`, so the
  server's file path runs; ASGI `http.response.pathsend`).

WSGI routes run under `wsgiref.validate` except `/file` (the validator hides
the file wrapper behind its own iterator).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs
from wsgiref.validate import validator

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[Message], Any]

PIECE = 64 * 1024
FILES = Path(tempfile.mkdtemp(prefix="tls-apps-"))


def pattern(n: int) -> bytes:
    """N deterministic bytes the tests can check byte-exact."""
    return (bytes(range(256)) * (n // 256 + 1))[:n]


def pattern_file(n: int) -> Path:
    """A file holding `pattern(n)` (made once per size)."""
    path = FILES / f"pattern-{n}"
    if not path.exists():
        path.write_bytes(pattern(n))
    return path


def size(query: str) -> int:
    """The `n` query parameter."""
    return int(parse_qs(query).get("n", ["0"])[-1])


def _pieces(n: int) -> Iterator[bytes]:
    data = pattern(n)
    for start in range(0, n, PIECE):
        yield data[start : start + PIECE]


# MARK: - WSGI


def _wsgi_info(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    keys = {k: v for k, v in environ.items() if k.startswith("SSL_") or k in ("HTTPS", "wsgi.url_scheme")}
    keys["pid"] = os.getpid()
    # The key password is handed to workers outside argv and taken out of
    # their environment before Python starts (KeyPasswordHandoff).
    keys["key_password_in_environ"] = "PEREGRINE_TLS_KEY_PASSWORD" in os.environ
    body = json.dumps(keys).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def _wsgi_echo(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    digest = hashlib.sha256()
    stream = environ["wsgi.input"]
    left = length
    while left > 0:
        piece = stream.read(min(left, PIECE))
        if not piece:
            break
        digest.update(piece)
        left -= len(piece)
    body = json.dumps({"length": length - left, "sha256": digest.hexdigest()}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def _wsgi_big(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    n = size(environ.get("QUERY_STRING", ""))
    start_response("200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(n))])
    return _pieces(n)


def _wsgi_file(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    n = size(environ.get("QUERY_STRING", ""))
    start_response("200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(n))])
    return environ["wsgi.file_wrapper"](pattern_file(n).open("rb"), PIECE)  # type: ignore[no-any-return]


_WSGI = {
    "/info": validator(_wsgi_info),
    "/echo": validator(_wsgi_echo),
    "/big": validator(_wsgi_big),
    "/file": _wsgi_file,
}


def wsgi(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Route on PATH_INFO."""
    handler = _WSGI.get(environ.get("PATH_INFO", ""))
    if handler is None:
        start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "0")])
        return []
    return handler(environ, start_response)


# MARK: - ASGI


async def _respond(send: Send, body: bytes, content_type: bytes = b"application/json") -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
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
    query = scope["query_string"].decode()
    if path == "/info":
        info = {
            "scheme": scope["scheme"],
            "http_version": scope["http_version"],
            "tls": scope.get("extensions", {}).get("tls"),
            "pid": os.getpid(),
        }
        await _respond(send, json.dumps(info).encode())
    elif path == "/echo":
        digest = hashlib.sha256()
        length = 0
        more = True
        while more:
            message = await receive()
            body = message.get("body", b"")
            digest.update(body)
            length += len(body)
            more = message.get("more_body", False)
        await _respond(send, json.dumps({"length": length, "sha256": digest.hexdigest()}).encode())
    elif path == "/big":
        n = size(query)
        headers = [(b"content-type", b"application/octet-stream"), (b"content-length", str(n).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for piece in _pieces(n):
            await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    elif path == "/file":
        n = size(query)
        headers = [(b"content-type", b"application/octet-stream"), (b"content-length", str(n).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.pathsend", "path": str(pattern_file(n))})
    else:
        await _respond(send, b"", b"text/plain")
