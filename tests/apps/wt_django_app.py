"""A Django project with WebTransport routes (peregrine.contrib.django) under Channels: `wt_django_app:application`.

Channels' ProtocolTypeRouter sends `http` to Django and `webtransport` to the router. HTTP: GET /hello/<name>/
(a Django view). WebTransport (tests/apps/wt_handlers): wt/echo/<int:room>/ echoes,
wt/close/<int:code>/<str:reason>/ closes with that code and reason; any other WebTransport path gets 404.
"""

from __future__ import annotations

import django
from django.conf import settings

if not settings.configured:
    settings.configure(
        SECRET_KEY="peregrine-e2e-not-secret",  # noqa: S106 (a test project)
        DEBUG=False,
        ALLOWED_HOSTS=["*"],
        ROOT_URLCONF=__name__,
        INSTALLED_APPS=["channels"],
        MIDDLEWARE=[],
        DATABASES={},
        USE_TZ=True,
        LOGGING_CONFIG=None,
    )
    django.setup()

from channels.routing import ProtocolTypeRouter
from django.core.asgi import get_asgi_application
from django.http import HttpRequest, JsonResponse
from django.urls import path
from wt_handlers import close_with, echo

from peregrine.contrib.django import WebTransportRouter


def hello(request: HttpRequest, name: str) -> JsonResponse:
    """A plain Django view."""
    return JsonResponse({"hello": name, "protocol": request.scope["http_version"]})  # type: ignore[attr-defined]


urlpatterns = [path("hello/<slug:name>/", hello)]

webtransport_urlpatterns = [
    path("wt/echo/<int:room>/", echo),
    path("wt/close/<int:code>/<str:reason>/", close_with),
]

application = ProtocolTypeRouter(
    {
        "http": get_asgi_application(),
        "webtransport": WebTransportRouter(webtransport_urlpatterns),
    }
)
