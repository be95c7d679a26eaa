"""Applications for tests/e2e/test_worker_contexts.py: `context_apps:wsgi`, `context_apps:asgi`.

Each answers with what its own request sent, handed back through every
channel the gateway gives it, with waits in between so that requests served
by other worker contexts of the same process (other threads) run meanwhile:

- the request's `x-tag` header comes back as the `x-tag` response header and
  as the first body block (`tag=TAG;`), sent through `write()` (WSGI) or a
  `more_body` message (ASGI);
- the request body, read through `wsgi.input` (WSGI, in two reads around a
  wait) or `receive()` (ASGI), comes back as the last block (`body=BODY`);
- `x-thread` names the thread that called the application.

The ASGI application accepts the lifespan protocol and does nothing in it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

PAUSE = 0.01


def wsgi(environ: dict[str, Any], start_response: Callable[..., Callable[[bytes], object]]) -> Iterable[bytes]:
    tag = environ.get("HTTP_X_TAG", "")
    stream = environ["wsgi.input"]
    first = stream.read(3)
    time.sleep(PAUSE)  # the GIL is released: another context serves meanwhile
    rest = stream.read()
    write = start_response("200 OK", [("x-tag", tag), ("x-thread", str(threading.get_ident()))])
    time.sleep(PAUSE)
    write(b"tag=" + tag.encode("latin-1") + b";")
    time.sleep(PAUSE)
    return [b"body=" + first + rest]


async def asgi(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            kind = message["type"].rsplit(".", 1)[1]
            await send({"type": f"lifespan.{kind}.complete"})
            if kind == "shutdown":
                return
    tag = dict(scope["headers"]).get(b"x-tag", b"")
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        await asyncio.sleep(PAUSE)
        if not message.get("more_body"):
            break
    headers = [(b"x-tag", tag), (b"x-thread", str(threading.get_ident()).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await asyncio.sleep(PAUSE)
    await send({"type": "http.response.body", "body": b"tag=" + tag + b";", "more_body": True})
    await asyncio.sleep(PAUSE)
    await send({"type": "http.response.body", "body": b"body=" + body})
