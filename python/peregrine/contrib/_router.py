"""What the framework routers share: pass other scopes through, match, run a handler on a session.

A router is an ASGI application. A `webtransport` scope whose path a route
matches runs that route's handler with a `WebTransportSession` (the path
parameters in `scope["path_params"]`); an unmatched one is refused with 404
(`webtransport.reject`). Every other scope type goes to the wrapped application.
The framework modules only say how a path matches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .webtransport import WebTransportSession

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, MutableMapping

    from .webtransport import Receive, Send

    ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]
    Handler = Callable[..., Awaitable[None]]

__all__ = ["Match", "RouterBase", "refuse_not_found", "route_path", "run_handler"]

#: The status of a WebTransport CONNECT no route matches (RFC 9110 §15.5.5).
NOT_FOUND = 404


class Match:
    """A matched route: the handler and the arguments it is called with after the session."""

    __slots__ = ("args", "handler", "kwargs", "path_params")

    def __init__(
        self, handler: Handler, path_params: dict[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        self.handler = handler
        self.path_params = path_params
        self.args = args
        self.kwargs = kwargs


async def run_handler(match: Match, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
    """Run `match.handler(session, *args, **kwargs)`; close the session if it returns with it open.

    An exception from the handler propagates (the server logs it and ends the session); a
    handler that returns without accepting leaves the refusal to the server (500).
    """
    child = dict(scope)
    child["path_params"] = {**scope.get("path_params", {}), **match.path_params}
    session = WebTransportSession(child, receive, send)
    try:
        await match.handler(session, *match.args, **match.kwargs)
    finally:
        if session.is_open:
            await session.close()


async def refuse_not_found(scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
    """Refuse a session no route matched with 404."""
    await WebTransportSession(scope, receive, send).reject(NOT_FOUND)


class RouterBase:
    """An ASGI application: WebTransport routes in front of `app` (which gets every other scope)."""

    def __init__(self, app: ASGIApp | None = None) -> None:
        self.app = app

    def match(self, scope: MutableMapping[str, Any]) -> Match | None:
        """The route for this scope, or None."""
        raise NotImplementedError

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "webtransport":
            if self.app is None:
                raise ValueError(f"this router serves only webtransport scopes, not {scope['type']!r}")
            await self.app(scope, receive, send)
            return
        match = self.match(scope)
        if match is None:
            await refuse_not_found(scope, receive, send)
            return
        await run_handler(match, scope, receive, send)


def route_path(scope: MutableMapping[str, Any]) -> str:
    """The path a route matches: `path` without the `root_path` it is mounted under (ASGI spec)."""
    path = str(scope.get("path", "/"))
    root_path = str(scope.get("root_path", ""))
    if root_path and path.startswith(root_path):
        return path[len(root_path) :] or "/"
    return path
