"""WebTransport routes for Starlette applications, with Starlette's path syntax and converters.

Starlette's own `Router` serves only `http`, `websocket` and `lifespan` scopes, so
the WebTransport routes sit in front of the application, as a wrapper or as a
middleware (Starlette passes scope types it does not know through its middleware
stack)::

    from starlette.applications import Starlette
    from peregrine.contrib.starlette import WebTransportRoute, WebTransportRouter

    async def echo(session):
        room = session.path_params["room"]          # an int: the {room:int} converter ran
        await session.accept()
        async for stream in session.incoming_streams():
            await stream.send(await stream.read_all(), end=True)

    starlette_app = Starlette(routes=[...])
    app = WebTransportRouter(starlette_app, routes=[WebTransportRoute("/echo/{room:int}", echo)])
    # or: starlette_app.add_middleware(WebTransportRouter, routes=[...]) and serve starlette_app

A path no route matches is refused with 404.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    from starlette.routing import compile_path
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("peregrine.contrib.starlette needs Starlette (pip install starlette)") from error

from ._router import Match, RouterBase, route_path

if TYPE_CHECKING:
    from collections.abc import Callable, MutableMapping, Sequence

    from ._router import ASGIApp, Handler

__all__ = ["WebTransportRoute", "WebTransportRouter"]


class WebTransportRoute:
    """`path` in Starlette syntax (`/rooms/{name}`, `{id:int}`, `{rest:path}`) and its handler.

    The handler is `async def handler(session)`; the converted parameters are in
    `session.path_params`.
    """

    #: How the handler receives the path parameters: only in `session.path_params` (Starlette's way).
    pass_params_as_kwargs = False

    def __init__(self, path: str, endpoint: Handler, *, name: str | None = None) -> None:
        if not path.startswith("/"):
            raise ValueError(f"a route path starts with '/': {path!r}")
        self.path = path
        self.endpoint = endpoint
        self.name = name if name is not None else getattr(endpoint, "__name__", path)
        self.path_regex, self.path_format, self.param_convertors = compile_path(path)

    def match(self, path: str) -> Match | None:
        """The match for `path`, parameters converted, or None."""
        found = self.path_regex.match(path)
        if found is None:
            return None
        params = {key: self.param_convertors[key].convert(value) for key, value in found.groupdict().items()}
        kwargs = dict(params) if self.pass_params_as_kwargs else {}
        return Match(self.endpoint, params, (), kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(path={self.path!r}, name={self.name!r})"


class WebTransportRouter(RouterBase):
    """An ASGI application: `routes` for `webtransport` scopes, `app` for every other scope.

    `WebTransportRouter(app, routes=[...])` is also a Starlette middleware class
    (`app.add_middleware(WebTransportRouter, routes=[...])`). With no `app` it serves
    only WebTransport (for a protocol router in front of it).
    """

    route_class: type[WebTransportRoute] = WebTransportRoute

    def __init__(self, app: ASGIApp | None = None, routes: Sequence[WebTransportRoute] = ()) -> None:
        super().__init__(app)
        self.routes = list(routes)

    def add_route(self, path: str, endpoint: Handler, *, name: str | None = None) -> None:
        """Add a route after the existing ones (the first matching route wins)."""
        self.routes.append(self.route_class(path, endpoint, name=name))

    def route(self, path: str, *, name: str | None = None) -> Callable[[Handler], Handler]:
        """Decorator form of `add_route`."""

        def register(endpoint: Handler) -> Handler:
            self.add_route(path, endpoint, name=name)
            return endpoint

        return register

    def match(self, scope: MutableMapping[str, Any]) -> Match | None:
        """The first route that matches the scope's path."""
        path = route_path(scope)
        for candidate in self.routes:
            found = candidate.match(path)
            if found is not None:
                return found
        return None
