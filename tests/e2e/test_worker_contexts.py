"""Worker contexts (issue #13 point 4): a worker's state is its own.

The internal `PEREGRINE_WORKER_CONTEXTS=2` runs two worker contexts in one
worker process (two threads, GIL build), each with its own poller,
connection table, gateway and (ASGI) event loop, against one application
object. Interleaved concurrent requests must each get back exactly what they
sent: the `start_response`/`write`/`wsgi.input` (WSGI) or `receive`/`send`
(ASGI) of one request never reach another request's exchange, whichever
context serves it. Both contexts must have served.

Application: tests/apps/context_apps.py.
"""

from __future__ import annotations

import http.client
import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server

CLIENTS = 12
ROUNDS = 6


def exchange(server: Server, client: int, round_: int) -> tuple[str, str | None]:
    """One request on a new connection: a unique tag and body; returns (mismatch or "", thread)."""
    tag = f"c{client}r{round_}"
    body = (f"{tag}-" * (1 + (client * 7 + round_) % 40)).encode()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.request("POST", "/", body=body, headers={"x-tag": tag, "Content-Type": "text/plain"})
        response = connection.getresponse()
        received = response.read()
        expected = b"tag=" + tag.encode() + b";body=" + body
        problems = []
        if response.status != 200:
            problems.append(f"status {response.status}")
        if response.getheader("x-tag") != tag:
            problems.append(f"x-tag {response.getheader('x-tag')!r}")
        if received != expected:
            problems.append(f"body {received[:60]!r}")
        return (f"{tag}: " + ", ".join(problems) if problems else ""), response.getheader("x-thread")
    finally:
        connection.close()


@pytest.mark.parametrize("target", ["context_apps:wsgi", "context_apps:asgi"])
def test_two_worker_contexts_in_one_process_do_not_cross_talk(
    start_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    monkeypatch.setenv("PEREGRINE_WORKER_CONTEXTS", "2")
    server = start_server(target)
    assert server.stderr.wait_for(lambda line: "in 2 worker contexts" in line, 10) is not None
    threads: set[str | None] = set()
    mismatches: list[str] = []
    with ThreadPoolExecutor(CLIENTS) as pool:
        for round_ in range(ROUNDS):
            results = list(pool.map(lambda client, r=round_: exchange(server, client, r), range(CLIENTS)))
            mismatches += [problem for problem, _ in results if problem]
            threads.update(thread for _, thread in results)
    assert mismatches == []
    assert None not in threads
    assert len(threads) == 2, f"requests were served by {len(threads)} thread(s), not by both worker contexts"
    assert os.environ["PEREGRINE_WORKER_CONTEXTS"] == "2"


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_asgi_module_that_does_not_import_asyncio_serves_on_every_context(
    start_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch, loop: str
) -> None:
    """The event-loop modules are imported once before the worker threads start: a first import of asyncio and
    uvloop in two threads at once left one thread's new loop looking as if it already ran ("Cannot close a running
    event loop", the thread gone). tests/apps/alt_svc_apps.py imports no asyncio of its own."""
    monkeypatch.setenv("PEREGRINE_WORKER_CONTEXTS", "2")
    server = start_server("alt_svc_apps:asgi", *(["--no-uvloop"] if loop == "asyncio" else []))
    assert server.stderr.wait_for(lambda line: "in 2 worker contexts" in line, 10) is not None
    assert server.stderr.wait_for(lambda line: "worker thread 1 serving" in line, 10) is not None
    for _ in range(20):
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        connection.request("GET", "/")
        assert connection.getresponse().read() == b"ok"
        connection.close()
    assert not any("stopped" in line for line in server.stderr.lines)
