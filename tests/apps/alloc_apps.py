"""Hello applications for tests/e2e/test_allocations.py, as the benchmark harness's (benchmarks/apps).

The response headers are built once, so the application itself allocates as
little as Python lets it; what the test counts is the server's share.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

HELLO = b"Hello, world!"
_HEADERS = [("Content-Type", "text/plain"), ("Content-Length", str(len(HELLO)))]
_START = {
    "type": "http.response.start",
    "status": 200,
    "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(HELLO)).encode())],
}
_BODY = {"type": "http.response.body", "body": HELLO}


def wsgi_hello(environ: dict[str, Any], start_response: Callable[..., object]) -> Iterable[bytes]:
    """The 13-byte text."""
    start_response("200 OK", _HEADERS)
    return [HELLO]


async def asgi_hello(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    """The 13-byte text; lifespan is accepted and finished."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    await send(_START)
    await send(_BODY)
