"""WebTransport routes for Django, written as Django URL patterns (`path()`, `re_path()`, `include()`).

Django's `get_asgi_application()` serves `http`; Channels' `ProtocolTypeRouter`
picks an application per scope type, so the router takes the `webtransport` key::

    # asgi.py
    from channels.routing import ProtocolTypeRouter, URLRouter
    from django.core.asgi import get_asgi_application
    from django.urls import path
    from peregrine.contrib.django import WebTransportRouter

    django_app = get_asgi_application()

    async def chat(session, room):               # a view: the session, then the URL's arguments
        await session.accept()
        async for stream in session.incoming_streams():
            await stream.send(await stream.read_all(), end=True)

    application = ProtocolTypeRouter({
        "http": django_app,
        "websocket": URLRouter(websocket_urlpatterns),
        "webtransport": WebTransportRouter([path("chat/<slug:room>/", chat)]),
    })

Without Channels, `WebTransportRouter(urlpatterns, app=get_asgi_application())`
serves `webtransport` itself and passes every other scope to Django. Patterns are
resolved like Django's root URLconf (converters run; the leading "/" is implied);
a path no pattern matches is refused with 404. Needs configured Django settings,
as any Django URL resolution does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    from django.urls import Resolver404, URLResolver
    from django.urls.resolvers import RegexPattern
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("peregrine.contrib.django needs Django (pip install django)") from error

from ._router import Match, RouterBase, route_path

if TYPE_CHECKING:
    from collections.abc import MutableMapping, Sequence

    from ._router import ASGIApp

__all__ = ["WebTransportRouter"]


class WebTransportRouter(RouterBase):
    """An ASGI application resolving `webtransport` scopes against Django URL patterns.

    Each pattern's view is `async def view(session, *args, **kwargs)`: the
    `WebTransportSession`, then the positional and keyword arguments Django's
    resolver extracted (converted by the path converters). The keyword arguments
    are also in `session.path_params`. Every other scope goes to `app` (if given).
    """

    def __init__(self, urlpatterns: Sequence[Any], app: ASGIApp | None = None) -> None:
        super().__init__(app)
        self.urlpatterns = list(urlpatterns)
        # The same shape as Django's root resolver (django.urls.resolvers.get_resolver): "^/" then the patterns.
        self._resolver = URLResolver(RegexPattern(r"^/"), self.urlpatterns)

    def match(self, scope: MutableMapping[str, Any]) -> Match | None:
        """The view and its arguments for the scope's path, or None."""
        try:
            found = self._resolver.resolve(route_path(scope))
        except Resolver404:
            return None
        return Match(found.func, dict(found.kwargs), tuple(found.args), dict(found.kwargs))
