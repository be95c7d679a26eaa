"""Falcon's WSGI app: `peregrine frameworks.falcon_wsgi_app:app` (the routes of tests/apps/frameworks/__init__.py).

No WebSocket (Falcon has them under ASGI only) and no startup hook (WSGI has no lifespan).
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import falcon

if TYPE_CHECKING:
    from collections.abc import Iterator

GATES = Path(os.environ.get("PEREGRINE_TEST_STATE", "."))


class TeapotError(Exception):
    """The application's own error, turned into a 418 by its handler."""


def teapot_handler(req: falcon.Request, resp: falcon.Response, ex: TeapotError, params: dict[str, Any]) -> None:
    resp.status = 418
    resp.media = {"error": "teapot"}


class Items:
    def on_get(self, req: falcon.Request, resp: falcon.Response, item_id: int) -> None:
        resp.media = {"item_id": item_id, "q": req.get_param("q")}


class Total:
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = req.get_media()
        resp.media = {"name": body["name"], "total": sum(body["numbers"])}


class Form:
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        fields = req.get_media()
        resp.media = {"name": fields["name"], "colour": fields["colour"]}


class Upload:
    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        result: dict[str, Any] = {}
        for part in req.get_media():
            if part.name == "note":
                result["note"] = part.text
            elif part.name == "blob":
                # part.data would refuse a part over 1 MiB (MultipartParseOptions.max_body_part_buffer_size).
                data = part.stream.read()
                result.update(filename=part.filename, size=len(data), sha256=hashlib.sha256(data).hexdigest())
        resp.media = result


class Stream:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        gate = GATES / req.get_param("gate", required=True)

        def two_chunks() -> Iterator[bytes]:
            yield b"first\n"
            for _ in range(500):
                if gate.exists():
                    yield b"released\n"
                    return
                time.sleep(0.02)
            yield b"timed out\n"

        resp.content_type = falcon.MEDIA_TEXT
        resp.stream = two_chunks()


class Download:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        size = req.get_param_as_int("size", required=True)
        resp.content_type = "application/octet-stream"
        resp.data = bytes(range(256)) * (size // 256)


class Raise:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        raise TeapotError


class WhoAmI:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = {
            "url": req.url,
            "secure": req.scheme == "https",
            "client": req.remote_addr,
            "link": f"{req.prefix}/items/7",  # Falcon has no reverse routing: the prefix includes the root path
        }


class Cookies:
    def on_get_set(self, req: falcon.Request, resp: falcon.Response) -> None:
        # Falcon marks cookies Secure by default: a browser would not send this one back over plain http.
        resp.set_cookie("flavour", "oatmeal", secure=req.scheme == "https")
        resp.media = {"set": True}

    def on_get_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = {"flavour": req.cookies.get("flavour")}


app = falcon.App()
app.add_error_handler(TeapotError, teapot_handler)
app.add_route("/items/{item_id:int}", Items())
app.add_route("/json", Total())
app.add_route("/form", Form())
app.add_route("/upload", Upload())
app.add_route("/stream", Stream())
app.add_route("/download", Download())
app.add_route("/teapot", Raise())
app.add_route("/whoami", WhoAmI())
app.add_route("/cookies/set", Cookies(), suffix="set")
app.add_route("/cookies/get", Cookies(), suffix="get")
app.add_static_route("/static", Path(__file__).parent / "static")
