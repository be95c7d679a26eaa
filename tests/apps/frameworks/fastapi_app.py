"""FastAPI: `peregrine frameworks.fastapi_app:app` (the routes of tests/apps/frameworks/__init__.py)."""

from __future__ import annotations

import asyncio
import hashlib
import os
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from fastapi import FastAPI, Form, Request, UploadFile, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

STATIC = Path(__file__).parent / "static"
GATES = Path(os.environ.get("PEREGRINE_TEST_STATE", "."))


class TeapotError(Exception):
    """The application's own error, turned into a 418 by its handler."""


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, bool]]:
    yield {"started": True}
    with (GATES / "events.log").open("a") as events:
        events.write("shutdown\n")


app = FastAPI(lifespan=lifespan)
app.mount("/static", StaticFiles(directory=STATIC), name="static")


@app.exception_handler(TeapotError)
async def teapot_handler(request: Request, exc: TeapotError) -> JSONResponse:
    return JSONResponse({"error": "teapot"}, status_code=418)


@app.get("/items/{item_id}")
async def read_item(item_id: int, q: str | None = None) -> dict[str, object]:
    return {"item_id": item_id, "q": q}


class Numbers(BaseModel):
    name: str
    numbers: list[int]


@app.post("/json")
async def total(body: Numbers) -> dict[str, object]:
    return {"name": body.name, "total": sum(body.numbers)}


@app.post("/form")
async def form(name: Annotated[str, Form()], colour: Annotated[str, Form()]) -> dict[str, str]:
    return {"name": name, "colour": colour}


@app.post("/upload")
async def upload(note: Annotated[str, Form()], blob: UploadFile) -> dict[str, object]:
    data = await blob.read()
    return {"note": note, "filename": blob.filename, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


async def two_chunks(gate: Path) -> AsyncIterator[bytes]:
    yield b"first\n"
    for _ in range(500):
        if gate.exists():
            yield b"released\n"
            return
        await asyncio.sleep(0.02)
    yield b"timed out\n"


@app.get("/stream")
async def stream(gate: str) -> StreamingResponse:
    return StreamingResponse(two_chunks(GATES / gate), media_type="text/plain")


@app.get("/download")
async def download(size: int) -> Response:
    return Response(bytes(range(256)) * (size // 256), media_type="application/octet-stream")


@app.get("/teapot")
async def teapot() -> None:
    raise TeapotError


@app.get("/started")
async def started(request: Request) -> dict[str, bool]:
    return {"started": request.state.started}


@app.get("/whoami")
async def whoami(request: Request) -> dict[str, object]:
    return {
        "url": str(request.url),
        "secure": request.url.scheme == "https",
        "client": request.client.host if request.client else None,
        "link": str(request.url_for("read_item", item_id=7)),
    }


@app.get("/cookies/set")
async def set_cookie() -> JSONResponse:
    response = JSONResponse({"set": True})
    response.set_cookie("flavour", "oatmeal")
    return response


@app.get("/cookies/get")
async def get_cookie(request: Request) -> dict[str, str | None]:
    return {"flavour": request.cookies.get("flavour")}


@app.websocket("/ws")
async def echo(websocket: WebSocket) -> None:
    await websocket.accept()
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("text") is not None:
                await websocket.send_text(message["text"])
            else:
                await websocket.send_bytes(message["bytes"])
    except WebSocketDisconnect:
        return
