"""Sanic in its ASGI mode: `peregrine frameworks.sanic_app:app` (the routes of tests/apps/frameworks/__init__.py).

Sanic is its own server too; served by an ASGI server it runs its server listeners
(`before_server_start`, `after_server_start`, ...) on the ASGI lifespan events.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from sanic import Request, Sanic, Websocket
from sanic.response import HTTPResponse, json, raw

if TYPE_CHECKING:
    from sanic.response import ResponseStream

GATES = Path(os.environ.get("PEREGRINE_TEST_STATE", "."))

app = Sanic("peregrine_matrix")
app.config.STARTED = False
app.static("/static", Path(__file__).parent / "static")


class TeapotError(Exception):
    """The application's own error, turned into a 418 by its handler."""


@app.exception(TeapotError)
async def teapot_handler(request: Request, exception: TeapotError) -> HTTPResponse:
    return json({"error": "teapot"}, status=418)


@app.before_server_start
async def startup(app: Sanic) -> None:
    app.config.STARTED = True


@app.after_server_stop
async def shutdown(app: Sanic) -> None:
    with (GATES / "events.log").open("a") as events:
        events.write("shutdown\n")


@app.get("/items/<item_id:int>", name="read_item")
async def read_item(request: Request, item_id: int) -> HTTPResponse:
    return json({"item_id": item_id, "q": request.args.get("q")})


@app.post("/json")
async def total(request: Request) -> HTTPResponse:
    body = request.json
    return json({"name": body["name"], "total": sum(body["numbers"])})


@app.post("/form")
async def form(request: Request) -> HTTPResponse:
    return json({"name": request.form.get("name"), "colour": request.form.get("colour")})


@app.post("/upload")
async def upload(request: Request) -> HTTPResponse:
    blob = request.files.get("blob")
    return json(
        {
            "note": request.form.get("note"),
            "filename": blob.name,
            "size": len(blob.body),
            "sha256": hashlib.sha256(blob.body).hexdigest(),
        }
    )


@app.get("/stream")
async def stream(request: Request) -> ResponseStream | None:
    gate = GATES / request.args["gate"][0]
    response = await request.respond(content_type="text/plain")
    await response.send(b"first\n")
    for _ in range(500):
        if gate.exists():
            await response.send(b"released\n")
            break
        await asyncio.sleep(0.02)
    else:
        await response.send(b"timed out\n")
    await response.eof()
    return None


@app.get("/download")
async def download(request: Request) -> HTTPResponse:
    size = int(request.args["size"][0])
    return raw(bytes(range(256)) * (size // 256), content_type="application/octet-stream")


@app.get("/teapot")
async def teapot(request: Request) -> HTTPResponse:
    raise TeapotError


@app.get("/started")
async def started(request: Request) -> HTTPResponse:
    return json({"started": request.app.config.STARTED})


@app.get("/whoami")
async def whoami(request: Request) -> HTTPResponse:
    return json(
        {
            "url": request.url,
            "secure": request.scheme == "https",
            "client": request.client_ip,
            "link": request.app.url_for("read_item", item_id=7),
        }
    )


@app.get("/cookies/set")
async def set_cookie(request: Request) -> HTTPResponse:
    response = json({"set": True})
    response.add_cookie("flavour", "oatmeal", secure=False)
    return response


@app.get("/cookies/get")
async def get_cookie(request: Request) -> HTTPResponse:
    return json({"flavour": request.cookies.get("flavour")})


@app.websocket("/ws")
async def echo(request: Request, ws: Websocket) -> None:
    # Not `async for message in ws`: under ASGI the socket is Sanic's WebSocketConnection, which has
    # recv() (None once the client has gone) but is not iterable.
    while (message := await ws.recv()) is not None:
        await ws.send(message)
