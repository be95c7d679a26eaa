"""Applications for the SIGUSR2 stats tests (tests/e2e/test_stats_signal.py). ASGI: `/slow` stays in flight until
the test creates `$PEREGRINE_TEST_STATE/release` (at most 15 s); a WebSocket is accepted and held until the client
closes it; any other path answers at once. WSGI: every path answers at once."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

STATE = Path(os.environ.get("PEREGRINE_TEST_STATE") or tempfile.gettempdir())


def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]


async def asgi(
    scope: dict[str, Any], receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] == "websocket":
        await receive()
        await send({"type": "websocket.accept"})
        while (await receive())["type"] != "websocket.disconnect":
            pass
        return
    if scope["path"] == "/slow":
        for _ in range(300):
            if (STATE / "release").exists():
                break
            await asyncio.sleep(0.05)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})
