"""Applications for the default response header tests (tests/e2e/test_response_headers.py): `/own` sets
X-Frame-Options, Server and Date itself (mixed case, as applications write them), which must win over
`--header`, `--server-header` and the server's Date; any other path sets none of them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

#: The application's own values for `/own`.
OWN = [("X-Frame-Options", "SAMEORIGIN"), ("Server", "app/1.0"), ("Date", "Thu, 01 Jan 1970 00:00:00 GMT")]


def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    headers = [("Content-Type", "text/plain"), ("Content-Length", "2")]
    if environ["PATH_INFO"] == "/own":
        headers += OWN
    start_response("200 OK", headers)
    return [b"ok"]


async def asgi(
    scope: dict[str, Any], receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
) -> None:
    """ASGI: the same; a WebSocket is accepted and closed."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] == "websocket":
        await receive()
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": 1000})
        return
    headers = [(b"content-type", b"text/plain")]
    if scope["path"] == "/own":
        headers += [(name.encode(), value.encode()) for name, value in OWN]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"ok"})
