"""A CPU-bound view for comparing worker threads with worker processes (BENCHMARKS.md, free-threaded).

Each request runs about 2 ms of pure-Python work (a loop of integer
arithmetic, calibrated once at import to the machine, or `$CPU_APP_ROUNDS`
rounds of it) and answers with the
result: with the GIL, threads of one process take turns at it; free-threaded,
they run it in parallel.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable


def _spin(rounds: int) -> int:
    total = 0
    for i in range(rounds):
        total = (total + i * i) % 1_000_003
    return total


def _calibrate(target_seconds: float = 0.002) -> int:
    rounds = 10_000
    while True:
        started = time.perf_counter()
        _spin(rounds)
        took = time.perf_counter() - started
        if took > 0.02:
            return max(1, int(rounds * target_seconds / took))
        rounds *= 2


#: Fixed with $CPU_APP_ROUNDS when builds or process counts are compared:
#: processes that calibrate at the same time each measure a slower machine.
ROUNDS = int(os.environ.get("CPU_APP_ROUNDS", "0")) or _calibrate()


def wsgi(environ: dict[str, Any], start_response: Callable[..., object]) -> Iterable[bytes]:
    """WSGI: spin ROUNDS, answer with the result."""
    body = str(_spin(ROUNDS)).encode()
    start_response("200 OK", [("content-type", "text/plain"), ("content-length", str(len(body)))])
    return [body]


async def asgi(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    """ASGI: the same work as `wsgi`."""
    if scope["type"] != "http":
        return
    body = str(_spin(ROUNDS)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
