"""The application for the memory-bound tests (tests/e2e/test_memory_bounds.py): `memory_apps:asgi`.

- `/stats`: the worker's pid, RSS (KiB), descriptors and live objects (abrupt_apps.stats);
- `/hold`: never reads its request body and answers only after `/release` (so whatever the client sends is
  held by the server, up to its limits);
- `/release`: lets every held request and WebSocket go;
- a WebSocket is accepted and never received from until `/release`, then closed (1000).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from abrupt_apps import stats

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

_released: asyncio.Event | None = None


def released() -> asyncio.Event:
    global _released  # noqa: PLW0603 - one event per worker loop, made on first use (inside the loop)
    if _released is None:
        _released = asyncio.Event()
    return _released


async def _answer(send: Send, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
    """Served with --no-lifespan."""
    if scope["type"] == "websocket":
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        await released().wait()
        await send({"type": "websocket.close", "code": 1000})
        return
    path = scope["path"]
    if path == "/stats":
        await _answer(send, stats())
    elif path == "/release":
        released().set()
        await _answer(send, b"{}")
    elif path == "/hold":
        await released().wait()
        await _answer(send, b"{}")
    else:
        await _answer(send, b"{}")
