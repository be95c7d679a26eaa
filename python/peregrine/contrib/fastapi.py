"""WebTransport routes for FastAPI applications: path parameters arrive as keyword arguments.

FastAPI is Starlette underneath; this is `peregrine.contrib.starlette` with the
FastAPI habit of naming path parameters in the handler's signature and
registering with a decorator named after the protocol::

    from fastapi import FastAPI
    from peregrine.contrib.fastapi import WebTransportRouter, WebTransportSession

    app = FastAPI()
    webtransport = WebTransportRouter()

    @webtransport.webtransport("/echo/{room:int}")
    async def echo(session: WebTransportSession, room: int) -> None:
        await session.accept()
        async for datagram in session.datagrams():
            await session.send_datagram(datagram)

    app.add_middleware(webtransport.middleware)   # serve `app` as usual

A path no route matches is refused with 404; every other scope reaches FastAPI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

try:
    import fastapi  # noqa: F401 - the framework this module is for; fail early and by name without it
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("peregrine.contrib.fastapi needs FastAPI (pip install fastapi)") from error

from . import starlette as _starlette
from .webtransport import WebTransportSession, WebTransportStream

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ._router import ASGIApp, Handler

__all__ = ["WebTransportRoute", "WebTransportRouter", "WebTransportSession", "WebTransportStream"]


class WebTransportRoute(_starlette.WebTransportRoute):
    """A route whose handler is `async def handler(session, **path_params)`."""

    pass_params_as_kwargs = True


class WebTransportRouter(_starlette.WebTransportRouter):
    """`peregrine.contrib.starlette.WebTransportRouter` with FastAPI-style handlers."""

    route_class = WebTransportRoute

    def __init__(self, app: ASGIApp | None = None, routes: Sequence[_starlette.WebTransportRoute] = ()) -> None:
        super().__init__(app, routes)

    def webtransport(self, path: str, *, name: str | None = None) -> Callable[[Handler], Handler]:
        """Decorator registering a WebTransport handler, like FastAPI's `@app.websocket(path)`."""
        return self.route(path, name=name)

    def middleware(self, app: ASGIApp) -> WebTransportRouter:
        """A router with these routes in front of `app`: pass to `app.add_middleware()`.

        It shares this router's route list, so routes registered later are served too.
        """
        router = type(self)(app)
        router.routes = self.routes
        return router
