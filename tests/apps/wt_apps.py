"""WebTransport ASGI applications for tests/e2e/test_webtransport_draft02.py (the extension in TRANSPORT.md).

- webtransport `/demo`: aioquic's example `wt` handler (examples/demo.py, aioquic 1.7.2, BSD-3-Clause,
  Copyright (c) Jeremy Lainé), copied unchanged: accept, then echo every stream chunk on the same stream
  (a client unidirectional stream: on the paired server stream) and every datagram, never ending a stream;
- webtransport `/echo?id=ID`: accept, echo each stream (ending ours when the peer's side ends) and each
  datagram; records the scope, the stream events and the disconnect under ID;
- webtransport `/refuse`: close before accept (403); `/reject?status=N`: webtransport.reject with N and
  `x-why: test`; `/raise`: raises before accepting (500); `/return`: accepts and returns (the session is
  closed with code 0);
- webtransport `/close?id=ID&code=C&reason=R`: accept, close with C and R, record the disconnect;
- webtransport `/misuse?id=ID`: accept, send on a stream that does not exist, record the exception;
- webtransport `/control?id=ID`: accept; each stream's first chunk is a command — `reset N` / `stop N`
  (webtransport.stream.reset / .stop with code N on that stream), `open N` / `bidi N` (open a unidirectional /
  bidirectional stream, send N bytes and end it once webtransport.stream.opened names it), anything else is
  echoed; later data on a stream is recorded; records the peer's resets and stops, the opened streams and errors;
- webtransport `/slow?id=ID&sleep=S`: accept, sleep S seconds before receiving, then answer each stream with
  the count of its bytes; `/control`'s `datagrams` sends one datagram over max_datagram_size and a small one;
- http `/hello`: 200 "hello"; http `/records?id=ID`: what ID recorded (JSON).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

RECORDS: dict[str, dict[str, Any]] = {}


def query(scope: Scope) -> dict[str, str]:
    raw = scope["query_string"].decode("latin-1")
    return {key: values[-1] for key, values in parse_qs(raw, keep_blank_values=True).items()}


def record(scope: Scope) -> dict[str, Any]:
    ident = query(scope).get("id")
    return {} if ident is None else RECORDS.setdefault(ident, {})


# -- aioquic's demo handler (examples/demo.py), unchanged -----------------------------------------------------


async def wt(scope: Scope, receive: Receive, send: Send) -> None:
    """
    WebTransport echo endpoint.
    """
    # accept connection
    message = await receive()
    assert message["type"] == "webtransport.connect"
    await send({"type": "webtransport.accept"})

    # echo back received data
    while True:
        message = await receive()
        if message["type"] == "webtransport.datagram.receive":
            await send(
                {
                    "data": message["data"],
                    "type": "webtransport.datagram.send",
                }
            )
        elif message["type"] == "webtransport.stream.receive":
            await send(
                {
                    "data": message["data"],
                    "stream": message["stream"],
                    "type": "webtransport.stream.send",
                }
            )


# -- ours -------------------------------------------------------------------------------------------------------


async def echo(scope: Scope, receive: Receive, send: Send) -> None:
    rec = record(scope)
    extension = scope["extensions"]["webtransport"]
    rec["scope"] = {
        "type": scope["type"], "http_version": scope["http_version"], "scheme": scope["scheme"],
        "method": scope["method"], "path": scope["path"], "subprotocols": scope["subprotocols"],
        "draft": extension["draft"], "max_datagram_size": extension["max_datagram_size"],
        "headers": [name.decode() for name, _ in scope["headers"]],
    }  # fmt: skip
    assert (await receive())["type"] == "webtransport.connect"
    await send({"type": "webtransport.accept", "headers": [(b"x-accepted", b"yes")]})
    rec["events"] = []
    while True:
        message = await receive()
        kind = message["type"]
        if kind == "webtransport.stream.receive":
            rec["events"].append(
                [kind, message["stream"], len(message["data"]), message["end"], message["unidirectional"],
                 message["opened_by_peer"]]
            )  # fmt: skip
            await send({"type": "webtransport.stream.send", "stream": message["stream"], "data": message["data"],
                        "end": message["end"]})  # fmt: skip
        elif kind == "webtransport.datagram.receive":
            rec["events"].append([kind, len(message["data"])])
            await send({"type": "webtransport.datagram.send", "data": message["data"]})
        elif kind in ("webtransport.stream.reset", "webtransport.stream.stop"):
            rec["events"].append([kind, message["stream"], message["code"]])
        elif kind == "webtransport.drain":
            rec["drain"] = True
        elif kind == "webtransport.disconnect":
            rec["disconnect"] = [message["code"], message["reason"]]
            return


async def refuse(scope: Scope, receive: Receive, send: Send) -> None:
    await receive()
    await send({"type": "webtransport.close"})


async def reject(scope: Scope, receive: Receive, send: Send) -> None:
    await receive()
    status = int(query(scope).get("status", "404"))
    await send({"type": "webtransport.reject", "status": status, "headers": [(b"x-why", b"test")]})


async def close(scope: Scope, receive: Receive, send: Send) -> None:
    rec = record(scope)
    q = query(scope)
    await receive()
    await send({"type": "webtransport.accept"})
    await send({"type": "webtransport.close", "code": int(q.get("code", "0")), "reason": q.get("reason", "")})
    message = await receive()
    rec["disconnect"] = [message["type"], message.get("code"), message.get("reason")]


async def raises(scope: Scope, receive: Receive, send: Send) -> None:
    await receive()
    raise RuntimeError("refused by raising")


async def returns(scope: Scope, receive: Receive, send: Send) -> None:
    await receive()
    await send({"type": "webtransport.accept"})


async def misuse(scope: Scope, receive: Receive, send: Send) -> None:
    rec = record(scope)
    await receive()
    await send({"type": "webtransport.accept"})
    try:
        await send({"type": "webtransport.stream.send", "stream": 4000, "data": b"x"})
    except Exception as error:  # noqa: BLE001 (recorded for the test)
        rec["error"] = type(error).__name__
    message = await receive()
    rec["disconnect"] = [message["type"], message.get("code"), message.get("reason")]


async def control(scope: Scope, receive: Receive, send: Send) -> None:
    rec = record(scope)
    rec["events"] = []
    await receive()
    await send({"type": "webtransport.accept"})
    seen: set[int] = set()
    while True:
        message = await receive()
        kind = message["type"]
        if kind == "webtransport.disconnect":
            rec["disconnect"] = [message["code"], message["reason"]]
            return
        if kind in ("webtransport.stream.reset", "webtransport.stream.stop"):
            rec["events"].append([kind, message["stream"], message["code"]])
        elif kind == "webtransport.stream.opened":
            seen.add(message["stream"])
            rec["events"].append([kind, message["stream"], message["unidirectional"], message["tag"]])
            size = int(message["tag"])
            await send({"type": "webtransport.stream.send", "stream": message["stream"], "data": b"z" * size,
                        "end": True})  # fmt: skip
            rec["events"].append(["sent", message["stream"], size])
        elif kind == "webtransport.stream.receive" and message["stream"] not in seen:
            seen.add(message["stream"])
            command, _, argument = message["data"].decode().partition(" ")
            rec["events"].append(["command", message["stream"], command])
            if command in ("reset", "stop"):
                await send({"type": f"webtransport.stream.{command}", "stream": message["stream"],
                            "code": int(argument)})  # fmt: skip
            elif command == "open":
                await send({"type": "webtransport.stream.open", "unidirectional": True, "tag": argument})
            elif command == "bidi":
                await send({"type": "webtransport.stream.open", "unidirectional": False, "tag": argument})
            elif command == "datagrams":  # one over max_datagram_size (dropped, no error), then a small one
                limit = scope["extensions"]["webtransport"]["max_datagram_size"]
                # Over the limit whatever path MTU discovery reaches (the scope's figure is the size at the
                # start): past the largest DATAGRAM frame we accept.
                await send({"type": "webtransport.datagram.send", "data": b"x" * max(limit + 1, 65536)})
                await send({"type": "webtransport.datagram.send", "data": b"small"})
                rec["events"].append(["datagrams sent", limit])
            else:  # echoed, so the client knows it arrived
                await send({"type": "webtransport.stream.send", "stream": message["stream"], "data": message["data"]})
        elif kind == "webtransport.stream.receive":
            rec["events"].append(
                ["data", message["stream"], message["data"].decode(), message["end"], message["opened_by_peer"]]
            )


async def slow(scope: Scope, receive: Receive, send: Send) -> None:
    """Accept, then sleep before receiving: what the client sends meanwhile fills the queue (reading pauses,
    the client is held by QUIC flow control); then count each stream's bytes and answer with the count."""
    rec = record(scope)
    await receive()
    await send({"type": "webtransport.accept"})
    await asyncio.sleep(float(query(scope).get("sleep", "1")))
    counts: dict[int, int] = {}
    while True:
        message = await receive()
        if message["type"] == "webtransport.disconnect":
            rec["disconnect"] = [message["code"], message["reason"]]
            return
        if message["type"] == "webtransport.stream.receive":
            stream = message["stream"]
            counts[stream] = counts.get(stream, 0) + len(message["data"])
            if message["end"]:
                rec[str(stream)] = counts[stream]
                await send({"type": "webtransport.stream.send", "stream": stream, "data": str(counts[stream]).encode(),
                            "end": True})  # fmt: skip


ROUTES = {"/slow": slow, "/control": control, "/demo": wt, "/echo": echo, "/refuse": refuse, "/reject": reject,
          "/close": close,
          "/raise": raises, "/return": returns, "/misuse": misuse}  # fmt: skip


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "webtransport":
        handler = ROUTES.get(scope["path"])
        if handler is None:
            await receive()
            await send({"type": "webtransport.reject", "status": 404})
            return
        await handler(scope, receive, send)
        return
    if scope["type"] != "http":
        return
    body = json.dumps(record(scope)).encode() if scope["path"] == "/records" else b"hello"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})
