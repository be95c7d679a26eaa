"""Starlette: `peregrine frameworks.starlette_app:app` (the routes of tests/apps/frameworks/__init__.py)."""

from __future__ import annotations

import asyncio
import hashlib
import os
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.endpoints import WebSocketEndpoint
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.requests import Request
    from starlette.websockets import WebSocket

STATIC = Path(__file__).parent / "static"
GATES = Path(os.environ.get("PEREGRINE_TEST_STATE", "."))


class TeapotError(Exception):
    """The application's own error, turned into a 418 by its handler."""


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[dict[str, bool]]:
    yield {"started": True}
    with (GATES / "events.log").open("a") as events:
        events.write("shutdown\n")


async def read_item(request: Request) -> JSONResponse:
    return JSONResponse({"item_id": request.path_params["item_id"], "q": request.query_params.get("q")})


async def total(request: Request) -> JSONResponse:
    body = await request.json()
    return JSONResponse({"name": body["name"], "total": sum(body["numbers"])})


async def form(request: Request) -> JSONResponse:
    async with request.form() as fields:
        return JSONResponse({"name": fields["name"], "colour": fields["colour"]})


async def upload(request: Request) -> JSONResponse:
    async with request.form() as fields:
        blob = fields["blob"]
        assert isinstance(blob, UploadFile)
        data = await blob.read()
        return JSONResponse(
            {
                "note": fields["note"],
                "filename": blob.filename,
                "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )


async def two_chunks(gate: Path) -> AsyncIterator[bytes]:
    yield b"first\n"
    for _ in range(500):
        if gate.exists():
            yield b"released\n"
            return
        await asyncio.sleep(0.02)
    yield b"timed out\n"


async def stream(request: Request) -> StreamingResponse:
    return StreamingResponse(two_chunks(GATES / request.query_params["gate"]), media_type="text/plain")


async def download(request: Request) -> Response:
    size = int(request.query_params["size"])
    return Response(bytes(range(256)) * (size // 256), media_type="application/octet-stream")


async def teapot(request: Request) -> Response:
    raise TeapotError


async def teapot_handler(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"error": "teapot"}, status_code=418)


async def started(request: Request) -> JSONResponse:
    return JSONResponse({"started": request.state.started})


async def whoami(request: Request) -> JSONResponse:
    return JSONResponse(
        {
            "url": str(request.url),
            "secure": request.url.scheme == "https",
            "client": request.client.host if request.client else None,
            "link": str(request.url_for("read_item", item_id=7)),
        }
    )


async def set_cookie(request: Request) -> JSONResponse:
    response = JSONResponse({"set": True})
    response.set_cookie("flavour", "oatmeal")
    return response


async def get_cookie(request: Request) -> JSONResponse:
    return JSONResponse({"flavour": request.cookies.get("flavour")})


class Echo(WebSocketEndpoint):
    encoding = None  # text stays text, bytes stay bytes

    async def on_receive(self, websocket: WebSocket, data: str | bytes) -> None:
        if isinstance(data, str):
            await websocket.send_text(data)
        else:
            await websocket.send_bytes(data)


app = Starlette(
    routes=[
        Route("/items/{item_id:int}", read_item, name="read_item"),
        Route("/json", total, methods=["POST"]),
        Route("/form", form, methods=["POST"]),
        Route("/upload", upload, methods=["POST"]),
        Route("/stream", stream),
        Route("/download", download),
        Route("/teapot", teapot),
        Route("/started", started),
        Route("/whoami", whoami),
        Route("/cookies/set", set_cookie),
        Route("/cookies/get", get_cookie),
        WebSocketRoute("/ws", Echo),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ],
    exception_handlers={TeapotError: teapot_handler},
    lifespan=lifespan,
)
