"""Falcon's ASGI app: `peregrine frameworks.falcon_asgi_app:app` (the routes of tests/apps/frameworks/__init__.py)."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import falcon
import falcon.asgi
from falcon import WebSocketPayloadType

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

GATES = Path(os.environ.get("PEREGRINE_TEST_STATE", "."))


class TeapotError(Exception):
    """The application's own error, turned into a 418 by its handler."""


async def teapot_handler(
    req: falcon.asgi.Request, resp: falcon.asgi.Response, ex: TeapotError, params: dict[str, Any]
) -> None:
    resp.status = 418
    resp.media = {"error": "teapot"}


class Startup:
    """Falcon's lifespan hooks: middleware with process_startup and process_shutdown."""

    def __init__(self) -> None:
        self.started = False

    async def process_startup(self, scope: dict[str, Any], event: dict[str, Any]) -> None:
        self.started = True

    async def process_shutdown(self, scope: dict[str, Any], event: dict[str, Any]) -> None:
        with (GATES / "events.log").open("a") as events:
            events.write("shutdown\n")


STARTUP = Startup()


class Items:
    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response, item_id: int) -> None:
        resp.media = {"item_id": item_id, "q": req.get_param("q")}


class Total:
    async def on_post(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        body = await req.get_media()
        resp.media = {"name": body["name"], "total": sum(body["numbers"])}


class Form:
    async def on_post(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        fields = await req.get_media()
        resp.media = {"name": fields["name"], "colour": fields["colour"]}


class Upload:
    async def on_post(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        result: dict[str, Any] = {}
        async for part in await req.get_media():
            if part.name == "note":
                result["note"] = await part.get_text()
            elif part.name == "blob":
                # part.get_data() would refuse a part over 1 MiB (MultipartParseOptions.max_body_part_buffer_size).
                data = await part.stream.read()
                result.update(filename=part.filename, size=len(data), sha256=hashlib.sha256(data).hexdigest())
        resp.media = result


class Stream:
    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        gate = GATES / req.get_param("gate", required=True)

        async def two_chunks() -> AsyncIterator[bytes]:
            yield b"first\n"
            for _ in range(500):
                if gate.exists():
                    yield b"released\n"
                    return
                await asyncio.sleep(0.02)
            yield b"timed out\n"

        resp.content_type = falcon.MEDIA_TEXT
        resp.stream = two_chunks()


class Download:
    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        size = req.get_param_as_int("size", required=True)
        resp.content_type = "application/octet-stream"
        resp.data = bytes(range(256)) * (size // 256)


class Raise:
    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        raise TeapotError


class Started:
    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        resp.media = {"started": STARTUP.started}


class WhoAmI:
    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        resp.media = {
            "url": req.url,
            "secure": req.scheme == "https",
            "client": req.remote_addr,
            "link": f"{req.prefix}/items/7",  # Falcon has no reverse routing: the prefix includes the root path
        }


class Cookies:
    async def on_get_set(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        # Falcon marks cookies Secure by default: a browser would not send this one back over plain http.
        resp.set_cookie("flavour", "oatmeal", secure=req.scheme == "https")
        resp.media = {"set": True}

    async def on_get_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        resp.media = {"flavour": req.cookies.get("flavour")}


class Echo:
    async def on_websocket(self, req: falcon.asgi.Request, ws: falcon.asgi.WebSocket) -> None:
        await ws.accept()
        while True:
            try:
                message = await ws.receive_media()
            except falcon.WebSocketDisconnected:
                return
            if isinstance(message, str):
                await ws.send_text(message)
            else:
                await ws.send_data(message)


class AsIs:
    """A WebSocket media handler that leaves payloads as they came: text as str, binary as bytes."""

    def serialize(self, media: object) -> object:
        return media

    def deserialize(self, payload: str | bytes) -> object:
        return payload


app = falcon.asgi.App(middleware=[STARTUP])
app.ws_options.media_handlers[WebSocketPayloadType.TEXT] = AsIs()
app.ws_options.media_handlers[WebSocketPayloadType.BINARY] = AsIs()
app.add_error_handler(TeapotError, teapot_handler)
app.add_route("/items/{item_id:int}", Items())
app.add_route("/json", Total())
app.add_route("/form", Form())
app.add_route("/upload", Upload())
app.add_route("/stream", Stream())
app.add_route("/download", Download())
app.add_route("/teapot", Raise())
app.add_route("/started", Started())
app.add_route("/whoami", WhoAmI())
app.add_route("/cookies/set", Cookies(), suffix="set")
app.add_route("/cookies/get", Cookies(), suffix="get")
app.add_route("/ws", Echo())
app.add_static_route("/static", Path(__file__).parent / "static")
