"""The ASGI application of the soak run (benchmarks/soak.py): every kind of traffic the run sends.

Every response, and every WebSocket handshake answer, carries `x-worker: PID`, so the run can tell which
failures belong to a worker it killed on purpose.

- `GET /hello`: 200 `hello`.
- `POST /upload`: reads the whole body; answers `SIZE SHA256HEX`.
- `GET /stream?chunks=N&size=S`: N body messages of S bytes each (byte i of the whole body is `i % 251`),
  with `more_body`: a streamed (chunked over HTTP/1.1) download.
- WebSocket `/ws/echo`: every message back. WebSocket `/ws/broadcast`: after each message, 50 numbered
  text messages to this client and the message to every other broadcast client of the worker.
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from apps.asgi_apps import lifespan

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    Message = dict[str, object]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]

WORKER = str(os.getpid()).encode()
PATTERN = bytes(i % 251 for i in range(251 * 1024))
BROADCAST_BURST = 50

_broadcast_clients: set[Send] = set()


def pattern(offset: int, size: int) -> bytes:
    """Bytes `offset .. offset + size` of the endless `i % 251` pattern."""
    start = offset % 251
    out = bytearray()
    while len(out) < size:
        take = min(size - len(out), len(PATTERN) - start)
        out += PATTERN[start : start + take]
        start = 0
    return bytes(out)


async def _respond(send: Send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode()),
                        (b"x-worker", WORKER)],
        }
    )  # fmt: skip
    await send({"type": "http.response.body", "body": body})


async def _http(scope: Message, receive: Receive, send: Send) -> None:
    path = scope["path"]
    if path == "/hello":
        await _respond(send, 200, b"hello")
    elif path == "/upload":
        digest = hashlib.sha256()
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body") or b""
            if not isinstance(chunk, bytes):
                raise TypeError(chunk)
            digest.update(chunk)
            size += len(chunk)
            if not message.get("more_body"):
                break
        await _respond(send, 200, f"{size} {digest.hexdigest()}".encode())
    elif path == "/stream":
        query = parse_qs(scope["query_string"].decode())  # type: ignore[union-attr]
        chunks, size = int(query["chunks"][0]), int(query["size"][0])
        await send(
            {"type": "http.response.start", "status": 200,
             "headers": [(b"content-type", b"application/octet-stream"), (b"x-worker", WORKER)]}
        )  # fmt: skip
        for i in range(chunks):
            await send({"type": "http.response.body", "body": pattern(i * size, size), "more_body": True})
        await send({"type": "http.response.body", "body": b""})
    else:
        await _respond(send, 404, b"not found")


async def _websocket(scope: Message, receive: Receive, send: Send) -> None:
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept", "headers": [(b"x-worker", WORKER)]})
    broadcast = scope["path"] == "/ws/broadcast"
    if broadcast:
        _broadcast_clients.add(send)
    try:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            text, data = message.get("text"), message.get("bytes")
            if not broadcast:
                if text is not None:
                    await send({"type": "websocket.send", "text": text})
                else:
                    await send({"type": "websocket.send", "bytes": data or b""})
                continue
            for n in range(BROADCAST_BURST):
                await send({"type": "websocket.send", "text": f"{n}"})
            for other in list(_broadcast_clients):
                if other is not send:
                    try:
                        await other({"type": "websocket.send", "text": "peer"})
                    except Exception:  # noqa: BLE001 - a peer that just left; its own loop cleans up
                        _broadcast_clients.discard(other)
    finally:
        _broadcast_clients.discard(send)


async def app(scope: Message, receive: Receive, send: Send) -> None:
    """The soak application."""
    if scope["type"] == "http":
        await _http(scope, receive, send)
    elif scope["type"] == "websocket":
        await _websocket(scope, receive, send)
    else:
        await lifespan(receive, send)
