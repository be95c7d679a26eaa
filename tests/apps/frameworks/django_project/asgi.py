"""ASGI entry point: Django's handler for HTTP, Channels for the WebSocket."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "frameworks.django_project.settings")

from django.core.asgi import get_asgi_application

# Django is set up (and the apps' ready() run) before anything imports models or consumers.
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import path  # noqa: E402

from .consumers import EchoConsumer  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": URLRouter([path("ws", EchoConsumer.as_asgi())]),
    }
)
