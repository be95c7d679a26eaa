"""Fixtures and helpers shared by the ASGI end-to-end modules (test_asgi_*.py).

Servers come from conftest's `server_pool` (one per application and options,
checked alive after every test, stopped with SIGTERM at the end) or its
`start_server` (one test's own). The raw application is tests/apps/asgi_raw.py;
`/records?id=` and `/release?id=` on it let a test watch and pace a running
request from a second connection.

The core fixtures are parametrized over the event loop: `uvloop` (the
default, uvloop being installed) and `asyncio` (`--no-uvloop`). Only
`asyncio` where the server's interpreter has no uvloop: uvloop publishes no
build for the free-threaded CPython 3.13t (the free-threaded CI leg).

Test modules load the fixtures with `pytest_plugins = ("asgi_support",)`.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest
from rawhttp import RawConnection, request

from conftest import worker_threads
from installed import server_python_facts

if TYPE_CHECKING:
    import socket
    from collections.abc import Callable

    from conftest import Server, ServerPool

#: The event loops every core test runs on, and the options that select them.
LOOPS = {"uvloop": (), "asyncio": ("--no-uvloop",)}
#: The log line's words for each loop.
LOOP_NAMES = {"uvloop": "(ASGI on uvloop)", "asyncio": "(ASGI on asyncio)"}
RAW = "asgi_raw:app"
#: One worker thread, for tests that count the events of one lifespan (each worker thread runs its own):
#: free-threaded under $PEREGRINE_TEST_WORKER_THREADS, as the other servers of that run are.
ONE_WORKER = ("--free-threaded", "--workers", "1") if worker_threads() else ("--workers", "1")


def raw_on(pool: ServerPool, loop: str, *options: str) -> Server:
    """The shared raw-ASGI server on `loop` with `options`; checks the startup log names the loop."""
    server = pool.get(RAW, *LOOPS[loop], *options)
    assert server.stderr.wait_for(lambda line: LOOP_NAMES[loop] in line, 5) is not None, server.excerpt()
    return server


def served_loops() -> list[str]:
    """The loops the server's interpreter offers: both, or `asyncio` where uvloop cannot be imported."""
    try:
        has_uvloop = server_python_facts()["uvloop"]
    except pytest.skip.Exception:  # no installed server: every test skips with how to get one
        has_uvloop = True
    return sorted(LOOPS) if has_uvloop else ["asyncio"]


@pytest.fixture(scope="module", params=served_loops())
def loop(request: pytest.FixtureRequest) -> str:
    """'uvloop' or 'asyncio'."""
    name: str = request.param
    return name


@pytest.fixture(scope="module")
def raw_server(server_pool: ServerPool, loop: str) -> Server:
    """asgi_raw:app with lifespan, on each loop (bodies up to 64 MiB)."""
    return raw_on(server_pool, loop, "--max-body", "64m")


# --- talking to the raw application ---------------------------------------------------------------


def get_json(server: Server, target: str) -> Any:  # noqa: ANN401 (whatever JSON the application answered)
    """GET `target` on a new connection; the JSON body of its 200."""
    with RawConnection.to(server) as connection:
        connection.send(request("GET", target))
        response = connection.read_response()
    assert response.status == 200, (target, response.status, response.body[:500])
    return json.loads(response.body)


def records(server: Server, ident: str) -> list[Any]:
    """What request `ident` recorded so far."""
    found: list[Any] = get_json(server, f"/records?id={quote(ident)}")
    return found


def release(server: Server, ident: str) -> None:
    """Let request `ident` go on."""
    with RawConnection.to(server) as connection:
        connection.send(request("GET", f"/release?id={quote(ident)}"))
        assert connection.read_response().status == 200


def wait_records(
    server: Server, ident: str, predicate: Callable[[list[Any]], bool], timeout: float = 10.0
) -> list[Any]:
    """Poll `records(ident)` until `predicate(records)` holds; fail with the last records otherwise."""
    deadline = time.monotonic() + timeout
    found = records(server, ident)
    while not predicate(found):
        if time.monotonic() > deadline:
            pytest.fail(f"records of {ident} never satisfied the condition: {found!r}")
        time.sleep(0.05)
        found = records(server, ident)
    return found


def unique(prefix: str) -> str:
    """An id no other test uses."""
    return f"{prefix}-{time.monotonic_ns()}"


def rss_kib(server: Server) -> int:
    """VmRSS in KiB of the server process and its children (a supervisor's workers), summed."""
    total = 0
    pids = [server.pid]
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children")
    if children.exists():
        pids += [int(pid) for pid in children.read_text().split()]
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def logged(server: Server, text: str, timeout: float = 5.0) -> bool:
    """Whether a stderr line containing `text` appears within `timeout`."""
    return server.stderr.wait_for(lambda line: text in line, timeout) is not None


def logged_with_traceback(server: Server, text: str, timeout: float = 5.0) -> bool:
    """Whether `text` is logged as part of a traceback (the log line names it, or the traceback ends in it)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = list(server.stderr.lines)
        for index, line in enumerate(lines):
            if text in line:
                near = lines[max(0, index - 12) : index + 4]
                if any("Traceback (most recent call last)" in other for other in near):
                    return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def assert_raw_still_serving(server: Server) -> None:
    """The server answers /hello on a new connection."""
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/hello"))
        response = connection.read_response()
    assert (response.status, response.body) == (200, b"hello")


class BackgroundSender:
    """Send `total` bytes of `chunk`s on a socket from a thread, counting what the kernel accepted."""

    def __init__(self, sock: socket.socket, total: int, chunk: bytes) -> None:
        self.sock = sock
        self.total = total
        self.chunk = chunk
        self.sent = 0
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> BackgroundSender:
        """Start sending."""
        self._thread.start()
        return self

    def _run(self) -> None:
        view = memoryview(self.chunk)
        try:
            while self.sent < self.total:
                piece = view[: min(len(view), self.total - self.sent)]
                self.sent += self.sock.send(piece)
        except OSError as exc:
            self.error = exc

    def join(self, timeout: float) -> bool:
        """Whether the thread finished within `timeout`."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stalled_at(self, quiet: float = 0.5, timeout: float = 10.0) -> int:
        """The byte count once it stops growing for `quiet` seconds (or the thread finished)."""
        deadline = time.monotonic() + timeout
        last = -1
        while time.monotonic() < deadline:
            if not self._thread.is_alive():
                return self.sent
            current = self.sent
            if current == last:
                return current
            last = current
            time.sleep(quiet)
        return self.sent
