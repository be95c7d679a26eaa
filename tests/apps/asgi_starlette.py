"""A Starlette application with nothing peregrine-specific: `peregrine asgi_starlette:app`.

Routing (path converters, a Mount), a pure-ASGI middleware and a
BaseHTTPMiddleware, StreamingResponse, FileResponse (Starlette uses
http.response.pathsend when the scope's extensions offer it), a form body,
request.is_disconnected(), an endless stream stopped by a disconnect, and a
plain JSON endpoint. Disconnects noticed are logged to
$PEREGRINE_TEST_STATE/events.log.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, StreamingResponse
from starlette.routing import Mount, Route

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp, Message, Receive, Scope, Send


STATE = Path(os.environ.get("PEREGRINE_TEST_STATE", "."))


def log_event(event: str) -> None:
    """Append one line to $PEREGRINE_TEST_STATE/events.log."""
    with (STATE / "events.log").open("a", encoding="utf-8") as events:
        events.write(event + "\n")


class ServerTimingMiddleware:
    """A pure ASGI middleware: adds x-process-time to every response start."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                elapsed = f"{time.perf_counter() - started:.6f}".encode()
                message["headers"] = [*message.get("headers", []), (b"x-process-time", elapsed)]
            await send(message)

        await self.app(scope, receive, timed_send)


class TagMiddleware(BaseHTTPMiddleware):
    """A BaseHTTPMiddleware: adds x-tag, and answers /blocked itself."""

    async def dispatch(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if request.url.path == "/blocked":
            return PlainTextResponse("blocked by middleware", status_code=403)
        response = await call_next(request)
        response.headers["x-tag"] = "starlette"
        return response


async def homepage(request: Request) -> Response:
    """Plain text."""
    return PlainTextResponse("starlette home")


async def user(request: Request) -> Response:
    """Path converters and query parameters."""
    return JSONResponse(
        {
            "user_id": request.path_params["user_id"],
            "section": request.path_params["section"],
            "sort": request.query_params.get("sort"),
            "tags": request.query_params.getlist("tag"),
        }
    )


async def numbers(request: Request) -> Response:
    """A StreamingResponse of ?count= lines."""
    count = int(request.query_params.get("count", "10"))

    async def generate() -> AsyncIterator[str]:
        for index in range(count):
            yield f"{index}\n"
            await asyncio.sleep(0)

    return StreamingResponse(generate(), media_type="text/plain")


async def endless(request: Request) -> Response:
    """A StreamingResponse that never ends by itself; logs when Starlette stops it (client gone)."""
    ident = request.query_params["id"]

    async def generate() -> AsyncIterator[bytes]:
        sent = 0
        try:
            while True:
                yield b"tick\n"
                sent += 1
                await asyncio.sleep(0.01)
        finally:
            log_event(f"endless stopped {ident}")

    return StreamingResponse(generate(), media_type="text/plain")


async def disconnected(request: Request) -> Response:
    """Read the body, then poll request.is_disconnected() until the client goes; log it."""
    ident = request.query_params["id"]
    await request.body()
    for _ in range(1000):
        if await request.is_disconnected():
            log_event(f"noticed disconnect {ident}")
            break
        await asyncio.sleep(0.01)
    return PlainTextResponse("too late")


async def download(request: Request) -> Response:
    """FileResponse of the file at ?path=."""
    return FileResponse(request.query_params["path"], media_type="application/octet-stream")


async def form(request: Request) -> Response:
    """An urlencoded form."""
    data = await request.form()
    return JSONResponse({key: data.getlist(key) for key in data})


async def digest(request: Request) -> Response:
    """The body read with request.stream()."""
    hasher = hashlib.sha256()
    size = 0
    async for chunk in request.stream():
        hasher.update(chunk)
        size += len(chunk)
    return JSONResponse({"size": size, "sha256": hasher.hexdigest()})


async def api_info(request: Request) -> Response:
    """Under a Mount: root_path and path as Starlette sees them."""
    info: dict[str, Any] = {"root_path": request.scope.get("root_path"), "path": request.url.path}
    return JSONResponse(info)


app = Starlette(
    routes=[
        Route("/", homepage),
        Route("/users/{user_id:int}/{section}", user),
        Route("/numbers", numbers),
        Route("/endless", endless),
        Route("/disconnected", disconnected, methods=["POST"]),
        Route("/download", download),
        Route("/form", form, methods=["POST"]),
        Route("/digest", digest, methods=["POST"]),
        Route("/blocked", homepage),
        Mount("/api", routes=[Route("/info", api_info)]),
    ],
    middleware=[Middleware(ServerTimingMiddleware), Middleware(TagMiddleware)],
)

# Request.is_disconnected() polls receive() under an already-cancelled scope;
# behind BaseHTTPMiddleware that call goes through a task group whose exit is a
# checkpoint, so the disconnect message is lost to the cancellation and the
# endpoint can never see it (the same under uvicorn, Starlette 0.52). The
# disconnect test uses this app, without that middleware.
bare = Starlette(routes=[Route("/disconnected", disconnected, methods=["POST"])])
