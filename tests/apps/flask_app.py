"""A real Flask application: routing, a form post, a file upload and a streaming response."""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Any
from wsgiref.validate import validator

from flask import Flask, Response, request, stream_with_context

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

app = Flask(__name__)


@app.get("/")
def index() -> str:
    return "flask index"


@app.get("/users/<int:user_id>")
def user(user_id: int) -> dict[str, object]:
    return {"id": user_id, "kind": type(user_id).__name__, "q": request.args.get("q")}


@app.route("/form", methods=["POST"])
def form() -> dict[str, object]:
    return {"name": request.form["name"], "tags": request.form.getlist("tag"), "content_type": request.content_type}


@app.post("/upload")
def upload() -> dict[str, object]:
    uploaded = request.files["file"]
    data = uploaded.read()
    return {
        "filename": uploaded.filename,
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "note": request.form.get("note"),
    }


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


class _SizedReads:
    """wsgi.input for werkzeug: its read() without a size becomes read(65536) calls.

    Werkzeug reads urlencoded forms with `stream.read()`, which PEP 3333's
    read(size) does not allow and the validator refuses; this keeps the
    validator between the server and Flask and adapts only that call.
    """

    def __init__(self, stream: Any) -> None:  # noqa: ANN401 (the validator's InputWrapper)
        self.stream = stream

    def read(self, size: int = -1) -> bytes:
        if size is not None and size >= 0:
            return bytes(self.stream.read(size))
        parts = []
        while chunk := self.stream.read(65536):
            parts.append(chunk)
        return b"".join(parts)

    def readline(self, *args: int) -> bytes:
        return bytes(self.stream.readline(*args))

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.stream)


def _adapt(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    environ["wsgi.input"] = _SizedReads(environ["wsgi.input"])
    return app(environ, start_response)


#: What the server runs: Flask under the PEP 3333 validator (which checks the server's side).
application = validator(_adapt)
