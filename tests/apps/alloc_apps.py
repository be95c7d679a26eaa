"""Hello applications for tests/e2e/test_allocations.py, as the benchmark harness's (benchmarks/apps).

The response headers are built once, so the application itself allocates as
little as Python lets it; what the test counts is the server's share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

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


_kept: dict[str, Any] = {}


async def asgi_keeper(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    """`/keep` keeps its `send` and `receive` past its end; `/old` uses them again and answers what happened.

    A finished request object is reused only when nothing refers to it
    (ASGIRequestPool): the kept callables must stay bound to their own,
    finished request, never reach a later one.
    """
    if scope["type"] == "lifespan" or scope["path"] == "/hello":
        await asgi_hello(scope, receive, send)
        return
    if scope["path"] == "/keep":
        _kept["send"], _kept["receive"] = send, receive
        await send(_START)
        await send(_BODY)
        return
    try:
        await _kept["send"]({"type": "http.response.start", "status": 500, "headers": []})
        outcome = "sent"
    except Exception as error:  # noqa: BLE001 - the class is the answer
        outcome = type(error).__name__
    message = await _kept["receive"]()
    text = f"{outcome} {message['type']}".encode()
    headers = [(b"content-length", str(len(text)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": text})
