"""WSGI (PEP 3333) applications: `hello`, `big` (12 KiB) and `echo`, each setting Content-Length."""

from __future__ import annotations

from typing import TYPE_CHECKING

from apps.payloads import BIG, HELLO

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    StartResponse = Callable[..., object]

_HELLO_HEADERS = [("Content-Type", "text/plain"), ("Content-Length", str(len(HELLO)))]
_BIG_HEADERS = [("Content-Type", "text/plain"), ("Content-Length", str(len(BIG)))]


def hello(environ: dict[str, object], start_response: StartResponse) -> Iterable[bytes]:
    """Answer every request with the 13-byte text."""
    start_response("200 OK", _HELLO_HEADERS)
    return [HELLO]


def big(environ: dict[str, object], start_response: StartResponse) -> Iterable[bytes]:
    """Answer every request with a 12 KiB body."""
    start_response("200 OK", _BIG_HEADERS)
    return [BIG]


def echo(environ: dict[str, object], start_response: StartResponse) -> Iterable[bytes]:
    """Send the request body back."""
    length = int(str(environ.get("CONTENT_LENGTH") or 0))
    stream = environ["wsgi.input"]
    body: bytes = stream.read(length) if length else b""  # type: ignore[attr-defined]
    start_response("200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(len(body)))])
    return [body]
