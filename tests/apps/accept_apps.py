"""Applications for the accept-error tests (tests/e2e/test_accept_errors.py): `accept_apps:wsgi`, `accept_apps:asgi`.

Both answer the same routes, with a plain-text body:

- `/pid`: the worker's process id;
- `/hog`: opens /dev/null until the process is out of descriptors (EMFILE) and keeps them all, so the
  worker's next accept fails; the body is how many it opened;
- `/release`: closes every descriptor `/hog` kept (no connection closes: only the worker's back-off timer
  can notice); the body is how many;
- anything else: `ok`.
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

#: Descriptors `/hog` holds.
_HELD: list[int] = []


def _hog() -> int:
    opened = 0
    while True:
        try:
            _HELD.append(os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC))
        except OSError as error:
            if error.errno != errno.EMFILE:
                raise
            return opened
        opened += 1


def _release() -> int:
    count = len(_HELD)
    while _HELD:
        os.close(_HELD.pop())
    return count


def _answer(path: str) -> bytes:
    if path == "/pid":
        return str(os.getpid()).encode()
    if path == "/hog":
        return str(_hog()).encode()
    if path == "/release":
        return str(_release()).encode()
    return b"ok"


def wsgi(environ: dict[str, Any], start_response: Callable[..., object]) -> Iterable[bytes]:
    """The routes above, over WSGI."""
    body = _answer(environ["PATH_INFO"])
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


async def asgi(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    """The routes above, over ASGI (no lifespan)."""
    if scope["type"] != "http":
        return
    body = _answer(scope["path"])
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})
