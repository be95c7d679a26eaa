"""Applications for tests/e2e/test_lifespan_scope.py: where the ASGI lifespan runs with several worker threads.

`lifespan_scope_apps:app` records, in `$PEREGRINE_TEST_STATE/events.log`, one
line per lifespan event and per slow request, each a JSON object with the
event, the thread (`main` for the process's main thread, where worker 0
runs, else `other`), the thread's ident, the id of the running event loop
and a `time.monotonic()` stamp (the processes of one machine share the
clock, so the test orders events by it):

- `startup`: puts into `state` a list `hits`, the loop it ran on and its
  thread's ident;
- `shutdown`: records the length of `hits` then.

Every request appends its thread's kind to `state["hits"]` and answers with
JSON: the serving thread and loop, the loop and thread the startup that
made its `state` ran on, `id(state["hits"])` and a copy of the list, and
`leaked`: whether a key an earlier request set on its `scope["state"]`
showed in this one's (it must not: each scope gets a shallow copy). Under
`--lifespan-scope process` the list is one object, so what requests on one
thread append, requests on the other see. `/slow?ms=N` records `slow-start`
and, N ms later, `slow-end` before answering.

Under `--no-lifespan` (no `state` in the scope) a request is answered with
its thread and loop and `"state": null`.

`lifespan_scope_apps:failing` fails its lifespan startup (on any thread).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

STATE = Path(os.environ.get("PEREGRINE_TEST_STATE", "."))
_LOG_LOCK = threading.Lock()


def _thread() -> str:
    return "main" if threading.current_thread() is threading.main_thread() else "other"


def _record(event: str, **extra: object) -> None:
    """One JSON line in the events log (from any thread: the lock keeps lines whole)."""
    entry = {
        "event": event,
        "thread": _thread(),
        "ident": threading.get_ident(),
        "loop": id(asyncio.get_running_loop()),
        "time": time.monotonic(),
        **extra,
    }
    with _LOG_LOCK, (STATE / "events.log").open("a", encoding="utf-8") as log:
        log.write(json.dumps(entry) + "\n")


async def _lifespan(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
    fail: bool,
) -> None:
    state = scope["state"]
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            _record("startup")
            if fail:
                await send({"type": "lifespan.startup.failed", "message": "the lifespan_scope startup fails"})
                return
            state["hits"] = []
            state["loop"] = id(asyncio.get_running_loop())
            state["ident"] = threading.get_ident()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            _record("shutdown", hits=len(state["hits"]))
            await send({"type": "lifespan.shutdown.complete"})
            return


async def app(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(scope, receive, send, fail=False)
        return
    state = scope.get("state")
    if state is None:  # --no-lifespan: no lifespan ran, so no state
        await _answer(send, {"thread": _thread(), "loop": id(asyncio.get_running_loop()), "state": None})
        return
    if scope["path"] == "/slow":
        query = parse_qs(scope["query_string"].decode())
        ms = int(query["other-ms" if _thread() == "other" and "other-ms" in query else "ms"][0])
        _record("slow-start")
        await asyncio.sleep(ms / 1000)
        _record("slow-end")
    # A key set on the scope's state stays in this request's copy.
    leaked = "per-request" in state
    state["per-request"] = True
    state["hits"].append(_thread())
    await _answer(
        send,
        {
            "thread": _thread(),
            "ident": threading.get_ident(),
            "loop": id(asyncio.get_running_loop()),
            "state_loop": state["loop"],
            "state_ident": state["ident"],
            "hits_id": id(state["hits"]),
            "hits": list(state["hits"]),
            "leaked": leaked,
        },
    )


async def _answer(send: Callable[[dict[str, Any]], Awaitable[None]], answer: dict[str, Any]) -> None:
    body = json.dumps(answer).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def failing(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(scope, receive, send, fail=True)
        return
    await app(scope, receive, send)
