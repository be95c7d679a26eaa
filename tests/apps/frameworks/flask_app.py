"""Flask, with the application factory Flask's docs recommend:
`peregrine --factory frameworks.flask_app:create_app` (the routes of tests/apps/frameworks/__init__.py).

Static files: Flask's own `/static` route, from `static/` beside this module. No WebSocket (Flask has
none) and no startup hook besides the factory itself, which is where a Flask application sets itself up.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flask import Flask, Response, jsonify, request, stream_with_context, url_for

if TYPE_CHECKING:
    from collections.abc import Iterator

GATES = Path(os.environ.get("PEREGRINE_TEST_STATE", "."))


class TeapotError(Exception):
    """The application's own error, turned into a 418 by its handler."""


def create_app() -> Flask:
    app = Flask(__name__)
    app.config["STARTED"] = True

    @app.errorhandler(TeapotError)
    def teapot_handler(error: TeapotError) -> tuple[Response, int]:
        return jsonify(error="teapot"), 418

    @app.get("/items/<int:item_id>")
    def read_item(item_id: int) -> dict[str, Any]:
        return {"item_id": item_id, "q": request.args.get("q")}

    @app.post("/json")
    def total() -> dict[str, Any]:
        body = request.get_json()
        return {"name": body["name"], "total": sum(body["numbers"])}

    @app.post("/form")
    def form() -> dict[str, str]:
        return {"name": request.form["name"], "colour": request.form["colour"]}

    @app.post("/upload")
    def upload() -> dict[str, Any]:
        blob = request.files["blob"]
        data = blob.read()
        return {
            "note": request.form["note"],
            "filename": blob.filename,
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }

    @app.get("/stream")
    def stream() -> Response:
        gate = GATES / request.args["gate"]

        def two_chunks() -> Iterator[bytes]:
            yield b"first\n"
            for _ in range(500):
                if gate.exists():
                    yield b"released\n"
                    return
                time.sleep(0.02)
            yield b"timed out\n"

        return Response(stream_with_context(two_chunks()), mimetype="text/plain")

    @app.get("/download")
    def download() -> Response:
        size = int(request.args["size"])
        return Response(bytes(range(256)) * (size // 256), mimetype="application/octet-stream")

    @app.get("/teapot")
    def teapot() -> None:
        raise TeapotError

    @app.get("/started")
    def started() -> dict[str, bool]:
        return {"started": app.config["STARTED"]}

    @app.get("/whoami")
    def whoami() -> dict[str, Any]:
        return {
            "url": request.url,
            "secure": request.is_secure,
            "client": request.remote_addr,
            "link": url_for("read_item", item_id=7),
        }

    @app.get("/cookies/set")
    def set_cookie() -> Response:
        response = jsonify(set=True)
        response.set_cookie("flavour", "oatmeal")
        return response

    @app.get("/cookies/get")
    def get_cookie() -> dict[str, str | None]:
        return {"flavour": request.cookies.get("flavour")}

    return app
