"""Quart: `peregrine frameworks.quart_app:app` (the routes of tests/apps/frameworks/__init__.py).

Static files: Quart's own `/static` route, from `static/` beside this module.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quart import Quart, Response, jsonify, make_response, request, url_for, websocket

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

GATES = Path(os.environ.get("PEREGRINE_TEST_STATE", "."))

app = Quart(__name__)


class TeapotError(Exception):
    """The application's own error, turned into a 418 by its handler."""


@app.errorhandler(TeapotError)
async def teapot_handler(error: TeapotError) -> tuple[Response, int]:
    return jsonify(error="teapot"), 418


@app.before_serving
async def startup() -> None:
    app.config["STARTED"] = True


@app.after_serving
async def shutdown() -> None:
    with (GATES / "events.log").open("a") as events:
        events.write("shutdown\n")


@app.get("/items/<int:item_id>")
async def read_item(item_id: int) -> dict[str, Any]:
    return {"item_id": item_id, "q": request.args.get("q")}


@app.post("/json")
async def total() -> dict[str, Any]:
    body = await request.get_json()
    return {"name": body["name"], "total": sum(body["numbers"])}


@app.post("/form")
async def form() -> dict[str, str]:
    fields = await request.form
    return {"name": fields["name"], "colour": fields["colour"]}


@app.post("/upload")
async def upload() -> dict[str, Any]:
    fields, files = await request.form, await request.files
    blob = files["blob"]
    data = blob.read()
    return {
        "note": fields["note"],
        "filename": blob.filename,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


@app.get("/stream")
async def stream() -> Response:
    gate = GATES / request.args["gate"]

    async def two_chunks() -> AsyncIterator[bytes]:
        yield b"first\n"
        for _ in range(500):
            if gate.exists():
                yield b"released\n"
                return
            await asyncio.sleep(0.02)
        yield b"timed out\n"

    return Response(two_chunks(), mimetype="text/plain")


@app.get("/download")
async def download() -> Response:
    size = int(request.args["size"])
    return Response(bytes(range(256)) * (size // 256), mimetype="application/octet-stream")


@app.get("/teapot")
async def teapot() -> None:
    raise TeapotError


@app.get("/started")
async def started() -> dict[str, bool]:
    return {"started": app.config.get("STARTED", False)}


@app.get("/whoami")
async def whoami() -> dict[str, Any]:
    return {
        "url": request.url,
        "secure": request.is_secure,
        "client": request.remote_addr,
        "link": url_for("read_item", item_id=7),
    }


@app.get("/cookies/set")
async def set_cookie() -> Response:
    response = await make_response(jsonify(set=True))
    response.set_cookie("flavour", "oatmeal")
    return response


@app.get("/cookies/get")
async def get_cookie() -> dict[str, str | None]:
    return {"flavour": request.cookies.get("flavour")}


@app.websocket("/ws")
async def echo() -> None:
    while True:
        await websocket.send(await websocket.receive())
