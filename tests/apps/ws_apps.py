"""Raw ASGI WebSocket applications the WebSocket end-to-end suite serves: `peregrine ws_apps:app`.

`app` speaks lifespan (it puts `name` in the lifespan state) and routes on the
first path segment, for `websocket` and `http` scopes alike:

- websocket `/echo[?id=ID]`: accept, echo every message (text as text, bytes as
  bytes) until the peer goes away; with an id, the disconnect message is
  recorded;
- websocket `/scope`: accept, send the scope as JSON text, then wait for the
  client's close;
- websocket `/subprotocol[?choose=NAME]`: accept with `NAME` (or the last one
  offered, or none), send the chosen name (or "") as text;
- websocket `/headers`: accept with extra response headers;
- websocket `/deny`: `websocket.close` before accept (403);
- websocket `/deny-response`: the denial extension: 418, own headers, a body
  sent in two `websocket.http.response.body` messages;
- websocket `/return-early` and `/raise-early`: return / raise before answering;
- websocket `/close?code=C&reason=R`: accept, send one text "closing", close;
- websocket `/raise-after`: accept, then raise (the server closes with 1011);
- websocket `/big?size=N`: accept, send one binary message of N bytes, then
  echo like /echo;
- websocket `/slow?id=ID`: accept, then receive slowly (0.1 s between
  receives), recording how many messages arrived;
- websocket `/receive-race?id=ID`: accept, cancel a receive() once its message
  is ready but before it took it (receive_race.py; records "waiting" when
  the client should send), send the next receive()'s message as JSON text,
  then echo like /echo;
- websocket `/flood?id=ID`: accept, then send 64 KiB binary messages as fast
  as `send()` returns, recording how many completed;
- http `/hello`: 200 "hello"; http `/records?id=ID`: what ID recorded (JSON).
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from receive_race import cancel_once_ready

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    Scope = dict[str, Any]
    Message = dict[str, Any]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]
    Handler = Callable[[Scope, Receive, Send], Awaitable[None]]

ROUTES: dict[str, Handler] = {}
RECORDS: dict[str, dict[str, Any]] = {}
FLOOD_MESSAGE = b"f" * 65536


def route(name: str) -> Callable[[Handler], Handler]:
    """Register a handler for /NAME."""

    def register(handler: Handler) -> Handler:
        ROUTES[name] = handler
        return handler

    return register


def query(scope: Scope) -> dict[str, str]:
    """The query string as a dict of last values."""
    raw = scope["query_string"].decode("latin-1")
    return {key: values[-1] for key, values in parse_qs(raw, keep_blank_values=True).items()}


def record(scope: Scope) -> dict[str, Any]:
    """The record of this connection's `id` (a throwaway dict without one)."""
    ident = query(scope).get("id")
    if ident is None:
        return {}
    return RECORDS.setdefault(ident, {})


async def connect(receive: Receive) -> None:
    """Receive websocket.connect."""
    message = await receive()
    assert message["type"] == "websocket.connect", message


def jsonable(value: object) -> object:
    """Bytes as latin-1 text, tuples as lists, the rest as JSON allows."""
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


async def echo_loop(receive: Receive, send: Send, rec: dict[str, Any]) -> None:
    """Echo until websocket.disconnect; record it."""
    rec["received"] = 0
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            rec["disconnect"] = {"code": message.get("code"), "reason": message.get("reason")}
            return
        assert message["type"] == "websocket.receive", message
        rec["received"] += 1
        if message.get("text") is not None:
            await send({"type": "websocket.send", "text": message["text"]})
        else:
            await send({"type": "websocket.send", "bytes": message["bytes"]})


@route("echo")
async def echo(scope: Scope, receive: Receive, send: Send) -> None:
    """Accept and echo."""
    rec = record(scope)
    await connect(receive)
    await send({"type": "websocket.accept"})
    await echo_loop(receive, send, rec)


@route("scope")
async def scope_dump(scope: Scope, receive: Receive, send: Send) -> None:
    """Accept and send the scope as JSON."""
    await connect(receive)
    await send({"type": "websocket.accept"})
    picture = {key: jsonable(value) for key, value in scope.items() if key != "state"}
    picture["state"] = dict(scope["state"]) if "state" in scope else None
    picture["types"] = {key: type(value).__name__ for key, value in scope.items()}
    await send({"type": "websocket.send", "text": json.dumps(picture)})
    await echo_loop(receive, send, {})


@route("subprotocol")
async def subprotocol(scope: Scope, receive: Receive, send: Send) -> None:
    """Accept with the chosen subprotocol and tell it."""
    await connect(receive)
    offered = scope["subprotocols"]
    choice = query(scope).get("choose") or (offered[-1] if offered else None)
    await send({"type": "websocket.accept", "subprotocol": choice})
    await send({"type": "websocket.send", "text": choice or ""})
    await echo_loop(receive, send, {})


@route("headers")
async def extra_headers(scope: Scope, receive: Receive, send: Send) -> None:
    """Accept with extra response headers."""
    await connect(receive)
    headers = [(b"x-extra", b"yes"), (b"set-cookie", b"session=abc"), (b"set-cookie", b"theme=dark")]
    await send({"type": "websocket.accept", "headers": headers})
    await echo_loop(receive, send, {})


@route("deny")
async def deny(scope: Scope, receive: Receive, send: Send) -> None:
    """Close before accept: 403."""
    await connect(receive)
    await send({"type": "websocket.close", "code": 1000})


@route("deny-response")
async def deny_response(scope: Scope, receive: Receive, send: Send) -> None:
    """The websocket.http.response denial extension."""
    assert "websocket.http.response" in scope.get("extensions", {}), scope.get("extensions")
    await connect(receive)
    body = b"no websocket for you"
    await send(
        {
            "type": "websocket.http.response.start",
            "status": 418,
            "headers": [
                (b"content-type", b"text/plain"),
                (b"content-length", str(len(body)).encode()),
                (b"x-denied", b"teapot"),
            ],
        }
    )
    await send({"type": "websocket.http.response.body", "body": body[:7], "more_body": True})
    await send({"type": "websocket.http.response.body", "body": body[7:]})


@route("return-early")
async def return_early(scope: Scope, receive: Receive, send: Send) -> None:
    """Return without answering the handshake."""
    await connect(receive)


@route("raise-early")
async def raise_early(scope: Scope, receive: Receive, send: Send) -> None:
    """Raise without answering the handshake."""
    await connect(receive)
    raise RuntimeError("refusing by exception")


@route("close")
async def close(scope: Scope, receive: Receive, send: Send) -> None:
    """Accept, say so, close with the code and reason asked; record what comes back."""
    args = query(scope)
    rec = record(scope)
    await connect(receive)
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.send", "text": "closing"})
    await send({"type": "websocket.close", "code": int(args.get("code", "1000")), "reason": args.get("reason", "")})
    message = await receive()
    rec["after_close"] = {"type": message["type"], "code": message.get("code")}


@route("raise-after")
async def raise_after(scope: Scope, receive: Receive, send: Send) -> None:
    """Accept, then raise."""
    await connect(receive)
    await send({"type": "websocket.accept"})
    raise RuntimeError("application failed after accept")


@route("big")
async def big(scope: Scope, receive: Receive, send: Send) -> None:
    """Accept, send one binary message of `size` bytes (a bytearray with ?bytearray=1), then echo."""
    size = int(query(scope).get("size", "1048576"))
    payload = bytes(i % 251 for i in range(size))
    await connect(receive)
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.send", "bytes": bytearray(payload) if query(scope).get("bytearray") else payload})
    await echo_loop(receive, send, {})


@route("slow")
async def slow(scope: Scope, receive: Receive, send: Send) -> None:
    """Accept, then take one message every 0.1 s."""
    rec = record(scope)
    rec["received"] = 0
    rec["bytes"] = 0
    await connect(receive)
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            rec["disconnect"] = {"code": message.get("code")}
            return
        rec["received"] += 1
        rec["bytes"] += len(message.get("bytes") or message.get("text") or "")
        await asyncio.sleep(0.1)


@route("receive-race")
async def receive_race(scope: Scope, receive: Receive, send: Send) -> None:
    """Accept; cancel a receive() once its message is ready (receive_race.py); send what the next receive() got.

    Records "waiting" once that receive() waits (the client then sends one message), then echoes like /echo."""
    rec = record(scope)
    await connect(receive)
    await send({"type": "websocket.accept"})
    result = await cancel_once_ready(receive, lambda: rec.setdefault("waiting", True))
    message = await receive()
    result["next"] = {key: jsonable(value) for key, value in message.items()}
    await send({"type": "websocket.send", "text": json.dumps(result)})
    await echo_loop(receive, send, rec)


@route("flood")
async def flood(scope: Scope, receive: Receive, send: Send) -> None:
    """Accept, then send 64 KiB messages until send() fails."""
    rec = record(scope)
    rec["sent"] = 0
    await connect(receive)
    await send({"type": "websocket.accept"})
    try:
        while True:
            await send({"type": "websocket.send", "bytes": FLOOD_MESSAGE})
            rec["sent"] += 1
    except Exception as exc:  # noqa: BLE001 (the test wants to see whatever the server raised)
        rec["error"] = {"type": type(exc).__name__, "oserror": isinstance(exc, OSError)}


async def http(scope: Scope, receive: Receive, send: Send) -> None:
    """/hello and /records."""
    name = scope["path"].lstrip("/").split("/", 1)[0]
    status = 200
    if name == "hello":
        body = b"hello"
    elif name == "records":
        body = json.dumps(RECORDS.get(query(scope).get("id", ""), {})).encode()
    else:
        status, body = 404, b"no route"
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def lifespan(scope: Scope, receive: Receive, send: Send) -> None:
    """Fill the state at startup."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            scope["state"]["name"] = "ws_apps"
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """Lifespan, http helpers, one websocket handler per first path segment."""
    if scope["type"] == "lifespan":
        await lifespan(scope, receive, send)
        return
    if scope["type"] == "http":
        await http(scope, receive, send)
        return
    assert scope["type"] == "websocket", scope["type"]
    name = scope["path"].lstrip("/").split("/", 1)[0]
    handler = ROUTES.get(name, echo)
    await handler(scope, receive, send)
