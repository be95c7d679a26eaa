"""A Django Channels project in one module, served by peregrine: `peregrine channels_app:application`.

Channels' own `ProtocolTypeRouter` / `URLRouter` and `AsyncWebsocketConsumer`,
with the in-memory channel layer (so groups reach the consumers of one worker
process: serve it with --workers 1, the default). No server-specific code.

- websocket `/ws/echo/`: echo text as text and bytes as bytes; the text
  `close:CODE` makes the consumer close with CODE;
- websocket `/ws/room/NAME/`: joins group NAME; every text message is
  broadcast to the group's members (the sender included) as `NAME: TEXT`;
- websocket `/ws/reject/`: closes before accepting (the server answers 403);
- every consumer records the close code its `disconnect` got, under the
  `id` query parameter; http `/disconnects` returns them as JSON;
- http `/hello`: a plain Django view.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

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
        CHANNEL_LAYERS={"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}},
    )
    django.setup()

from channels.generic.websocket import AsyncWebsocketConsumer
from channels.routing import ProtocolTypeRouter, URLRouter
from django.core.asgi import get_asgi_application
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path, re_path

DISCONNECTS: dict[str, Any] = {}


class RecordingConsumer(AsyncWebsocketConsumer):
    """Records the close code `disconnect` receives, under the `id` query parameter."""

    async def disconnect(self, code: int) -> None:
        """Note the code (Channels passes the websocket.disconnect code)."""
        query = parse_qs(self.scope["query_string"].decode("latin-1"))
        if "id" in query:
            DISCONNECTS[query["id"][-1]] = code


class EchoConsumer(RecordingConsumer):
    """Echo; `close:CODE` closes with CODE."""

    async def connect(self) -> None:
        """Accept every connection."""
        await self.accept()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Echo the message as it came."""
        if text_data is not None and text_data.startswith("close:"):
            await self.close(code=int(text_data[len("close:") :]))
        elif text_data is not None:
            await self.send(text_data=text_data)
        else:
            await self.send(bytes_data=bytes_data)


class RoomConsumer(RecordingConsumer):
    """A chat room over the channel layer's groups."""

    async def connect(self) -> None:
        """Join the room's group, then accept."""
        self.room = self.scope["url_route"]["kwargs"]["name"]
        await self.channel_layer.group_add(self.room, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        """Leave the group."""
        await self.channel_layer.group_discard(self.room, self.channel_name)
        await super().disconnect(code)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Broadcast to the group (the sender too)."""
        await self.channel_layer.group_send(self.room, {"type": "room.message", "text": text_data})

    async def room_message(self, event: dict[str, Any]) -> None:
        """A group message for this member."""
        await self.send(text_data=f"{self.room}: {event['text']}")


class RejectConsumer(AsyncWebsocketConsumer):
    """Closes before accepting."""

    async def connect(self) -> None:
        """Refuse."""
        await self.close()


def hello(request: HttpRequest) -> HttpResponse:
    """A plain view."""
    return HttpResponse("hello")


def disconnects(request: HttpRequest) -> JsonResponse:
    """The recorded close codes."""
    return JsonResponse(json.loads(json.dumps(DISCONNECTS)))


urlpatterns = [path("hello", hello), path("disconnects", disconnects)]

application = ProtocolTypeRouter(
    {
        "http": get_asgi_application(),
        "websocket": URLRouter(
            [
                path("ws/echo/", EchoConsumer.as_asgi()),
                re_path(r"^ws/room/(?P<name>\w+)/$", RoomConsumer.as_asgi()),
                path("ws/reject/", RejectConsumer.as_asgi()),
            ]
        ),
    }
)
