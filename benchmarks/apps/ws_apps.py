"""Plain ASGI 3 WebSocket applications (no framework): `echo` and `broadcast`.

`echo` sends every message back on its connection. `broadcast` keeps the `send` callable of every connected
client in a set in the worker and sends each message it receives, in turn, to every one of them (the sender
too). Both accept any WebSocket at any path, handle lifespan, and answer plain HTTP requests with 404.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apps.asgi_apps import lifespan

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    Message = dict[str, object]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]

_NOT_FOUND_START: Message = {
    "type": "http.response.start",
    "status": 404,
    "headers": [(b"content-type", b"text/plain"), (b"content-length", b"0")],
}
_NOT_FOUND_BODY: Message = {"type": "http.response.body", "body": b""}
_ACCEPT: Message = {"type": "websocket.accept"}

#: The `send` of every client connected to `broadcast` in this worker.
_clients: set[Send] = set()


async def _other(scope: Message, receive: Receive, send: Send) -> None:
    """Lifespan (startup and shutdown complete) or a plain HTTP request (404)."""
    if scope["type"] == "http":
        await send(_NOT_FOUND_START)
        await send(_NOT_FOUND_BODY)
        return
    await lifespan(receive, send)


def _reply(message: Message) -> Message:
    """A websocket.send carrying the text or the bytes of a websocket.receive."""
    text = message.get("text")
    if text is not None:
        return {"type": "websocket.send", "text": text}
    return {"type": "websocket.send", "bytes": message.get("bytes") or b""}


async def echo(scope: Message, receive: Receive, send: Send) -> None:
    """Accept the WebSocket and send every message back."""
    if scope["type"] != "websocket":
        await _other(scope, receive, send)
        return
    await receive()  # websocket.connect
    await send(_ACCEPT)
    while True:
        message = await receive()
        if message["type"] != "websocket.receive":
            return  # websocket.disconnect
        await send(_reply(message))


async def broadcast(scope: Message, receive: Receive, send: Send) -> None:
    """Accept the WebSocket, join the set of clients, and send every message received to all of them."""
    if scope["type"] != "websocket":
        await _other(scope, receive, send)
        return
    await receive()  # websocket.connect
    await send(_ACCEPT)
    _clients.add(send)
    try:
        while True:
            message = await receive()
            if message["type"] != "websocket.receive":
                return  # websocket.disconnect
            reply = _reply(message)
            for client in tuple(_clients):
                try:
                    await client(reply)
                except Exception:  # noqa: BLE001 - servers differ in what a send to a closed client raises
                    _clients.discard(client)
    finally:
        _clients.discard(send)
