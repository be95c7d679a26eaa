"""The WebTransport echo of benchmarks/webtransport.py (the ASGI extension in TRANSPORT.md), with WebSocket beside it.

`app` serves, at any path:

- a `webtransport` session: accepted; every chunk of a stream is sent back on the same stream at once, with its
  `end` (so a stream the client ends with FIN is ended by us too: one round trip per stream); every datagram is
  sent back (RFC 9297 datagrams, unreliable both ways);
- a `websocket`: `apps.ws_apps.echo` (every message sent back), the WebSocket figure of the same run;
- `http` GET `/stats`: the counters below as JSON (over TCP, so reading them is not a WebTransport operation);
  other HTTP requests get 404;
- lifespan.

The counters (module-level, one worker) let the benchmark check what the server side saw: how many datagrams
reached the application (against how many the client sent and got back) and how many sessions are open now
(the idle-memory measurement counts those, not what the client believes).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from apps.asgi_apps import lifespan
from apps.ws_apps import echo as websocket_echo

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    Message = dict[str, object]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]

#: Sessions accepted, open now, and what they carried (chunks and bytes of stream data echoed, streams ended,
#: datagrams received and sent back).
STATS: dict[str, int] = dict.fromkeys(
    (
        "sessions_accepted",
        "sessions_open",
        "stream_chunks",
        "stream_bytes",
        "streams_ended",
        "datagrams_received",
        "datagrams_sent",
    ),
    0,
)

_NOT_FOUND_START: Message = {
    "type": "http.response.start",
    "status": 404,
    "headers": [(b"content-type", b"text/plain"), (b"content-length", b"0")],
}
_EMPTY_BODY: Message = {"type": "http.response.body", "body": b""}
_ACCEPT: Message = {"type": "webtransport.accept"}


async def _http(scope: Message, send: Send) -> None:
    if scope["method"] != "GET" or scope["path"] != "/stats":
        await send(_NOT_FOUND_START)
        await send(_EMPTY_BODY)
        return
    body = json.dumps(STATS).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _webtransport(receive: Receive, send: Send) -> None:
    """Accept the session, echo every stream chunk (with its end) and every datagram until it ends."""
    await receive()  # webtransport.connect
    await send(_ACCEPT)
    STATS["sessions_accepted"] += 1
    STATS["sessions_open"] += 1
    try:
        while True:
            message = await receive()
            kind = message["type"]
            if kind == "webtransport.stream.receive":
                data = message["data"]
                end = message["end"]
                await send({"type": "webtransport.stream.send", "stream": message["stream"], "data": data, "end": end})
                STATS["stream_chunks"] += 1
                STATS["stream_bytes"] += len(data)  # type: ignore[arg-type]
                STATS["streams_ended"] += 1 if end else 0
            elif kind == "webtransport.datagram.receive":
                STATS["datagrams_received"] += 1
                await send({"type": "webtransport.datagram.send", "data": message["data"]})
                STATS["datagrams_sent"] += 1
            elif kind == "webtransport.disconnect":
                return
    finally:
        STATS["sessions_open"] -= 1


async def app(scope: Message, receive: Receive, send: Send) -> None:
    """WebTransport echo, WebSocket echo, `/stats` and lifespan."""
    kind = scope["type"]
    if kind == "webtransport":
        await _webtransport(receive, send)
    elif kind == "websocket":
        await websocket_echo(scope, receive, send)
    elif kind == "http":
        await _http(scope, send)
    else:
        await lifespan(receive, send)
