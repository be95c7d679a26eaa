"""WSGI application for tests/e2e/test_h3load.py (the h3load HTTP/3 load generator): `h3load_apps:app`.

- `/hello`: 200 `hello` (5 bytes);
- `/big?n=N`: 200 with N bytes of `x`, in 64 KiB pieces;
- `/echo`: POST; answers the request body back when it is all `x` bytes (what h3load sends), 400 otherwise,
  so a 2xx count proves the bodies arrived whole and unaltered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import parse_qs

Environ = dict[str, Any]
StartResponse = Callable[..., Any]

PIECE = 64 * 1024


def _pieces(n: int) -> Iterator[bytes]:
    for start in range(0, n, PIECE):
        yield b"x" * min(PIECE, n - start)


def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Route on PATH_INFO."""
    path = environ.get("PATH_INFO", "")
    if path == "/hello":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "5")])
        return [b"hello"]
    if path == "/big":
        n = int(parse_qs(environ.get("QUERY_STRING", "")).get("n", ["0"])[-1])
        start_response("200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(n))])
        return _pieces(n)
    if path == "/echo":
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        if body.strip(b"x"):
            start_response("400 Bad Request", [("Content-Type", "text/plain"), ("Content-Length", "0")])
            return []
        start_response("200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(len(body)))])
        return [body]
    start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "0")])
    return []
