"""ASGI 3 applications: `hello`, `big` (12 KiB) and `echo`, each setting content-length.

Each handles the lifespan protocol too, so that every server starts them the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apps.payloads import BIG, HELLO

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    Message = dict[str, object]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]

_HELLO_START: Message = {
    "type": "http.response.start",
    "status": 200,
    "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(HELLO)).encode())],
}
_HELLO_BODY: Message = {"type": "http.response.body", "body": HELLO}
_BIG_START: Message = {
    "type": "http.response.start",
    "status": 200,
    "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(BIG)).encode())],
}
_BIG_BODY: Message = {"type": "http.response.body", "body": BIG}


async def lifespan(receive: Receive, send: Send) -> None:
    """Complete startup and shutdown (shared with the WebSocket apps)."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def hello(scope: Message, receive: Receive, send: Send) -> None:
    """Answer every request with the 13-byte text."""
    if scope["type"] != "http":
        await lifespan(receive, send)
        return
    await send(_HELLO_START)
    await send(_HELLO_BODY)


async def big(scope: Message, receive: Receive, send: Send) -> None:
    """Answer every request with a 12 KiB body."""
    if scope["type"] != "http":
        await lifespan(receive, send)
        return
    await send(_BIG_START)
    await send(_BIG_BODY)


async def echo(scope: Message, receive: Receive, send: Send) -> None:
    """Send the request body back."""
    if scope["type"] != "http":
        await lifespan(receive, send)
        return
    chunks: list[bytes] = []
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        if isinstance(chunk, bytes) and chunk:
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/octet-stream"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
