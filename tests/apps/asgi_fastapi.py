"""A FastAPI application with nothing peregrine-specific: `peregrine asgi_fastapi:app`.

Covers path and query parameters, a JSON body, StreamingResponse,
BackgroundTasks, a sync `def` endpoint (run by FastAPI on anyio worker
threads), a lifespan context manager whose yielded state reaches requests,
an UploadFile multipart upload, and `/where` (the serving thread, whether the
GIL is on). Background tasks and shutdown append to
$PEREGRINE_TEST_STATE/events.log.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import threading
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import BackgroundTasks, FastAPI, File, Form, HTTPException, Request, UploadFile
from fastapi.responses import PlainTextResponse, StreamingResponse
from pydantic import BaseModel
from thread_kind import thread_kind

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

STATE = Path(os.environ.get("PEREGRINE_TEST_STATE", "."))
EVENTS = STATE / "events.log"


def log_event(event: str) -> None:
    """Append one line to the events file."""
    with EVENTS.open("a", encoding="utf-8") as events:
        events.write(event + "\n")


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
    """Yield the state every request sees; log shutdown."""
    log_event("fastapi startup")
    yield {"greeting": "hello from lifespan", "counter": [0]}
    log_event("fastapi shutdown")


app = FastAPI(lifespan=lifespan)


class Item(BaseModel):
    """A JSON request body."""

    name: str
    price: float
    tags: list[str] = []


@app.get("/items/{item_id}")
async def read_item(item_id: int, q: str | None = None, limit: int = 10) -> dict[str, Any]:
    """Path and query parameters, converted and validated."""
    return {"item_id": item_id, "q": q, "limit": limit}


@app.post("/items")
async def create_item(item: Item) -> dict[str, Any]:
    """A JSON body parsed into a model."""
    return {"name": item.name, "price_cents": round(item.price * 100), "tags": item.tags}


@app.get("/stream")
async def stream(count: int = 5) -> StreamingResponse:
    """A StreamingResponse from an async generator."""

    async def lines() -> AsyncIterator[bytes]:
        for index in range(count):
            yield f"line {index}\n".encode()
            await asyncio.sleep(0.01)

    return StreamingResponse(lines(), media_type="text/plain")


@app.post("/background/{name}")
async def background(name: str, tasks: BackgroundTasks) -> dict[str, str]:
    """Answer at once; the task logs an event after the response."""

    def after() -> None:
        log_event(f"background done {name}")

    tasks.add_task(after)
    return {"queued": name}


@app.get("/sync")
def sync_endpoint() -> dict[str, Any]:
    """A plain def endpoint: FastAPI runs it on an anyio worker thread (`python`, see thread_kind)."""
    return {"thread": thread_kind()}


@app.get("/async-thread")
async def async_endpoint() -> dict[str, Any]:
    """An async endpoint runs on the event loop's thread: the server's (`main`, or `server`: another worker thread)."""
    return {"thread": thread_kind()}


@app.get("/state")
async def state(request: Request) -> dict[str, Any]:
    """What the lifespan yielded, through request.state."""
    request.state.counter[0] += 1
    return {"greeting": request.state.greeting}


@app.post("/upload")
async def upload(file: UploadFile = File(...), note: str = Form("")) -> dict[str, Any]:  # noqa: B008
    """Hash an uploaded file."""
    digest = hashlib.sha256()
    size = 0
    while chunk := await file.read(65536):
        digest.update(chunk)
        size += len(chunk)
    return {"filename": file.filename, "size": size, "sha256": digest.hexdigest(), "note": note}


@app.get("/missing")
async def missing() -> None:
    """An HTTPException."""
    raise HTTPException(status_code=404, detail="no such thing")


@app.get("/crash")
async def crash() -> None:
    """An unhandled exception: FastAPI/Starlette re-raise it to the server after their 500."""
    raise RuntimeError("fastapi endpoint crashed")


@app.get("/where")
async def where() -> dict[str, Any]:
    """The thread running this worker's event loop, and whether the GIL is on."""
    return {
        "thread": threading.get_ident(),
        "kind": thread_kind(),
        "gil": getattr(sys, "_is_gil_enabled", lambda: True)(),
    }


@app.get("/plain", response_class=PlainTextResponse)
async def plain() -> str:
    """A plain text response."""
    return "plain text"
