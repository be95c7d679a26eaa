"""Litestar: `peregrine frameworks.litestar_app:app` (the routes of tests/apps/frameworks/__init__.py)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from litestar import Litestar, MediaType, Request, Response, WebSocket, get, post, websocket
from litestar.datastructures import Cookie, State, UploadFile
from litestar.enums import RequestEncodingType
from litestar.exceptions import WebSocketDisconnect
from litestar.params import Body
from litestar.response import Stream
from litestar.static_files import create_static_files_router

STATIC = Path(__file__).parent / "static"
GATES = Path(os.environ.get("PEREGRINE_TEST_STATE", "."))


class TeapotError(Exception):
    """The application's own error, turned into a 418 by its handler."""


def teapot_handler(request: Request[Any, Any, Any], exc: TeapotError) -> Response[dict[str, str]]:
    return Response({"error": "teapot"}, status_code=418)


def on_startup(app: Litestar) -> None:
    app.state.started = True


def on_shutdown(app: Litestar) -> None:
    with (GATES / "events.log").open("a") as events:
        events.write("shutdown\n")


@get("/items/{item_id:int}", name="read_item")
async def read_item(item_id: int, q: str | None = None) -> dict[str, Any]:
    return {"item_id": item_id, "q": q}


@dataclass
class Numbers:
    name: str
    numbers: list[int]


@post("/json", status_code=200)
async def total(data: Numbers) -> dict[str, Any]:
    return {"name": data.name, "total": sum(data.numbers)}


@dataclass
class Colour:
    name: str
    colour: str


@post("/form", status_code=200)
async def form(data: Annotated[Colour, Body(media_type=RequestEncodingType.URL_ENCODED)]) -> dict[str, str]:
    return {"name": data.name, "colour": data.colour}


@dataclass
class Upload:
    note: str
    blob: UploadFile


@post("/upload", status_code=200)
async def upload(data: Annotated[Upload, Body(media_type=RequestEncodingType.MULTI_PART)]) -> dict[str, Any]:
    content = await data.blob.read()
    return {
        "note": data.note,
        "filename": data.blob.filename,
        "size": len(content),
        "sha256": hashlib.sha256(content).hexdigest(),
    }


async def two_chunks(gate: Path) -> Any:  # noqa: ANN401 (an async generator of bytes)
    yield b"first\n"
    for _ in range(500):
        if gate.exists():
            yield b"released\n"
            return
        await asyncio.sleep(0.02)
    yield b"timed out\n"


@get("/stream")
async def stream(gate: str) -> Stream:
    return Stream(two_chunks(GATES / gate), media_type=MediaType.TEXT)


@get("/download", media_type="application/octet-stream")
async def download(size: int) -> bytes:
    return bytes(range(256)) * (size // 256)


@get("/teapot")
async def teapot() -> None:
    raise TeapotError


@get("/started")
async def started(state: State) -> dict[str, bool]:
    return {"started": state.get("started", False)}


@get("/whoami")
async def whoami(request: Request[Any, Any, Any]) -> dict[str, Any]:
    return {
        "url": str(request.url),
        "secure": request.url.scheme == "https",
        "client": request.client.host if request.client else None,
        "link": request.url_for("read_item", item_id=7),
    }


@get("/cookies/set", response_cookies=[Cookie(key="flavour", value="oatmeal")])
async def set_cookie() -> dict[str, bool]:
    return {"set": True}


@get("/cookies/get")
async def get_cookie(request: Request[Any, Any, Any]) -> dict[str, str | None]:
    return {"flavour": request.cookies.get("flavour")}


@websocket("/ws")
async def echo(socket: WebSocket[Any, Any, Any]) -> None:
    await socket.accept()
    with contextlib.suppress(WebSocketDisconnect):
        while True:
            message = await socket.receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("text") is not None:
                await socket.send_text(message["text"])
            else:
                await socket.send_bytes(message["bytes"])


app = Litestar(
    route_handlers=[
        read_item,
        total,
        form,
        upload,
        stream,
        download,
        teapot,
        started,
        whoami,
        set_cookie,
        get_cookie,
        echo,
        create_static_files_router("/static", [STATIC]),
    ],
    exception_handlers={TeapotError: teapot_handler},
    on_startup=[on_startup],
    on_shutdown=[on_shutdown],
)
