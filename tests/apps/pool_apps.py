"""Applications for tests/e2e/test_wsgi_threads.py: a WSGI application on a pool of threads (--wsgi-threads).

`pool_apps:app` routes (each wrapped in `wsgiref.validate.validator`); every
answer is JSON and names the process and thread that served it, and
whether the GIL is on:

- `/barrier`: waits (up to 10 s) on one `threading.Barrier(8)` shared by every
  request, so it answers only once 8 requests are inside the application at
  the same time; reports the most requests ever seen inside at once;
- `/sleep?ms=N`: sleeps N ms inside the application; reports the most
  requests ever seen inside at once;
- `/flood?mb=N`: N MiB in 64 KiB blocks (no Content-Length), counting the
  blocks handed to the server in `PROGRESS["flood"]` (`/write-flood`: the same
  with the `write()` callable);
- `/progress`: the counts above;
- `/lines`: reads the body with readline() and read(n) on demand and reports
  what it read (line count, total bytes, sha256).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs
from wsgiref.validate import validator

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

Environ = dict[str, Any]

BARRIER = threading.Barrier(8)
_lock = threading.Lock()
_inside = 0
PROGRESS: dict[str, int] = {"inside_max": 0, "flood": 0}
BLOCK = b"x" * 65536


def _enter() -> None:
    global _inside  # noqa: PLW0603 (a process-wide count is the point)
    with _lock:
        _inside += 1
        PROGRESS["inside_max"] = max(PROGRESS["inside_max"], _inside)


def _leave() -> None:
    global _inside  # noqa: PLW0603
    with _lock:
        _inside -= 1


def _answer(start_response: Callable[..., Any], value: dict[str, Any]) -> list[bytes]:
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    body = json.dumps({"pid": os.getpid(), "thread": threading.get_ident(), "gil": gil, **value}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def _query(environ: Environ) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(environ.get("QUERY_STRING", "")).items()}


def _flood(environ: Environ, start_response: Callable[..., Any]) -> Iterable[bytes]:
    blocks = int(_query(environ).get("mb", "64")) * 16
    start_response("200 OK", [("Content-Type", "application/octet-stream")])

    def body() -> Iterator[bytes]:
        for _ in range(blocks):
            PROGRESS["flood"] += 1
            yield BLOCK

    return body()


def _write_flood(environ: Environ, start_response: Callable[..., Any]) -> Iterable[bytes]:
    blocks = int(_query(environ).get("mb", "64")) * 16
    write = start_response("200 OK", [("Content-Type", "application/octet-stream")])
    for _ in range(blocks):
        PROGRESS["flood"] += 1
        write(BLOCK)
    return []


def _lines(environ: Environ, start_response: Callable[..., Any]) -> list[bytes]:
    stream = environ["wsgi.input"]
    hasher = hashlib.sha256()
    lines = total = 0
    # A few lines first, then fixed-size reads to the end: both on demand.
    for _ in range(3):
        line = stream.readline()
        if not line:
            break
        lines += 1
        total += len(line)
        hasher.update(line)
    while chunk := stream.read(1000):
        total += len(chunk)
        hasher.update(chunk)
    return _answer(start_response, {"lines": lines, "size": total, "sha256": hasher.hexdigest()})


def _routes(environ: Environ, start_response: Callable[..., Any]) -> Iterable[bytes]:
    path = environ["PATH_INFO"]
    if path == "/flood":
        return _flood(environ, start_response)
    if path == "/write-flood":
        return _write_flood(environ, start_response)
    if path == "/progress":
        return _answer(start_response, dict(PROGRESS))
    if path == "/lines":
        return _lines(environ, start_response)
    _enter()
    try:
        if path == "/barrier":
            BARRIER.wait(timeout=10)
        elif path == "/sleep":
            time.sleep(int(_query(environ).get("ms", "1000")) / 1000)
        return _answer(start_response, {"inside_max": PROGRESS["inside_max"]})
    finally:
        _leave()


app = validator(_routes)
