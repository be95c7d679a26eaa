"""Applications for the Alt-Svc tests (tests/e2e/test_http3_alt_svc.py): `/own` answers with an Alt-Svc field of
its own, which the server must keep (and add none); any other path answers without one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

#: The application's own advertisement.
OWN = 'h3=":9999"; ma=60'


def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """WSGI: `/own` sets Alt-Svc (mixed case, as applications write it)."""
    headers = [("Content-Type", "text/plain"), ("Content-Length", "2")]
    if environ["PATH_INFO"] == "/own":
        headers.append(("Alt-Svc", OWN))
    start_response("200 OK", headers)
    return [b"ok"]


async def asgi(
    scope: dict[str, Any], receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
) -> None:
    """ASGI: the same."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
    headers = [(b"content-type", b"text/plain")]
    if scope["path"] == "/own":
        headers.append((b"alt-svc", OWN.encode()))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"ok"})
