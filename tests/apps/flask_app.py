"""A real Flask application: routing, a form post, a file upload and a streaming response."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator

from wsgiref.validate import validator

from flask import Flask, Response, request, stream_with_context

app = Flask(__name__)


@app.get("/")
def index() -> str:
    return "flask index"


@app.get("/users/<int:user_id>")
def user(user_id: int) -> dict[str, object]:
    return {"id": user_id, "kind": type(user_id).__name__, "q": request.args.get("q")}


@app.route("/form", methods=["POST"])
def form() -> dict[str, object]:
    return {"name": request.form["name"], "tags": request.form.getlist("tag"),
            "content_type": request.content_type}


@app.post("/upload")
def upload() -> dict[str, object]:
    uploaded = request.files["file"]
    data = uploaded.read()
    return {"filename": uploaded.filename, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "note": request.form.get("note")}


@app.get("/stream")
def stream() -> Response:
    count = int(request.args.get("n", "5"))

    def generate() -> Iterator[str]:
        # stream_with_context keeps `request` usable inside the generator.
        for i in range(count):
            yield f"line {i} of {request.args.get('n', '5')}\n"
            time.sleep(0.05)

    return Response(stream_with_context(generate()), mimetype="text/plain")


@app.errorhandler(404)
def missing(error: Exception) -> tuple[str, int]:
    return "flask says not found", 404


#: What the server runs: the Flask app under the PEP 3333 validator.
application = validator(app)
