"""The HTTP/3 bulk-download mode's application, in WSGI and ASGI: a 32 MiB body in 1 MiB chunks.

A module of its own so that the servers of the other apps never build the 32 MiB (memory.py measures them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apps.asgi_apps import lifespan
from apps.payloads import BULK_SIZE, bulk_chunks

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    Message = dict[str, object]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]
    StartResponse = Callable[..., object]

_CHUNKS = bulk_chunks()
_HEADERS = [("Content-Type", "application/octet-stream"), ("Content-Length", str(BULK_SIZE))]
_START: Message = {
    "type": "http.response.start",
    "status": 200,
    "headers": [(name.lower().encode(), value.encode()) for name, value in _HEADERS],
}
_BODIES: list[Message] = [
    {"type": "http.response.body", "body": chunk, "more_body": index < len(_CHUNKS) - 1}
    for index, chunk in enumerate(_CHUNKS)
]


def wsgi(environ: dict[str, object], start_response: StartResponse) -> Iterable[bytes]:
    """Answer every request with the 32 MiB body, one chunk per iteration."""
    start_response("200 OK", _HEADERS)
    return _CHUNKS


async def asgi(scope: Message, receive: Receive, send: Send) -> None:
    """Answer every request with the 32 MiB body, one `http.response.body` message per chunk."""
    if scope["type"] != "http":
        await lifespan(receive, send)
        return
    await send(_START)
    for body in _BODIES:
        await send(body)
