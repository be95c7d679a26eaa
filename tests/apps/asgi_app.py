"""An ASGI application: detected as ASGI (refused until ASGI is served), forced to WSGI by --protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable


async def app(
    scope: dict[str, Any], receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
) -> None:
    """Answer 'asgi' over HTTP."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"asgi"})


class ThreeArguments:
    """An instance whose __call__ takes three positional parameters: ASGI by signature."""

    def __call__(self, scope: dict[str, Any], receive: object, send: object) -> None:
        """Never called in these tests."""


three_arguments = ThreeArguments()


def either(environ: dict[str, Any], start_response: Callable[..., Any], extra: object = None) -> list[bytes]:
    """Two required parameters and an optional third: WSGI when forced with --protocol wsgi."""
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "4")])
    return [b"wsgi"]
