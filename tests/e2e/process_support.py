"""Helpers shared by the process-model end-to-end modules (test_process_*.py, issue 4).

Test modules load the fixture with `pytest_plugins = ("process_support",)`.

- `serve`: like conftest's `start_server` (each server stopped with SIGTERM and checked to exit 0 after the test),
  and afterwards no worker process of that server may be left running: stragglers are SIGKILLed by pid and
  fail the test.
- `workers(server)`: the supervisor's child processes now; `wait_for_workers` waits for a given number of them,
  each having logged its banner.
- `Load`: client threads sending requests while a test signals or kills processes; every request's outcome
  (which worker answered, on which connection, or what went wrong) is kept for the assertions.
- `expect_exit`: the supervisor must exit with a given status on its own (crash loop, start-up failure).

Applications: tests/apps/process_apps.py (`WSGI`, `ASGI`).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from rawhttp import ConnectionClosedError, RawConnection, request

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from conftest import Server

WSGI = "process_apps:wsgi"
ASGI = "process_apps:asgi"
TARGETS = {"wsgi": WSGI, "asgi": ASGI}
#: The log prefix `[date] [PID] [LEVEL]` every line of the server's log starts with.
LOG_PID = re.compile(r"^\[[^\]]+\] \[(\d+)\] \[[A-Z]+\]")
#: A worker's banner: `[date] [PID] [INFO] peregrine VERSION serving MODULE:ATTR ...`.
BANNER = re.compile(r"^\[[^\]]+\] \[(\d+)\] \[INFO\] peregrine \S+ serving ")


# --- processes ---------------------------------------------------------------------------------------------


def children(pid: int) -> set[int]:
    """The child processes of `pid` (empty once it is gone)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found.update(int(word) for word in (task / "children").read_text().split())
    return found


def workers(server: Server) -> set[int]:
    """The supervisor's worker processes now."""
    return children(server.pid)


def alive(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def is_worker_process(pid: int) -> bool:
    """Whether `pid` is a running peregrine worker (its command line has `--worker`)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"--worker" in cmdline and alive(pid)


def logged_pids(server: Server) -> set[int]:
    """Every process id that appears in the server's log prefixes, the supervisor's excepted."""
    found = set()
    for line in list(server.stderr.lines):
        match = LOG_PID.match(line)
        if match:
            found.add(int(match[1]))
    found.discard(server.pid)
    return found


def bannered(server: Server) -> set[int]:
    """Workers that logged their banner."""
    return {int(match[1]) for line in list(server.stderr.lines) if (match := BANNER.match(line))}


def wait_for_workers(server: Server, count: int, timeout: float = 15.0, *, exclude: set[int] | None = None) -> set[int]:
    """Wait until the supervisor has exactly `count` workers, none of `exclude`, all having logged a banner."""
    exclude = exclude or set()
    deadline = time.monotonic() + timeout
    current: set[int] = set()
    while time.monotonic() < deadline:
        current = workers(server)
        if len(current) == count and not current & exclude and current <= bannered(server):
            return current
        time.sleep(0.05)
    pytest.fail(
        f"expected {count} ready workers (not {sorted(exclude)}) within {timeout:.0f}s; have {sorted(current)} "
        f"(bannered: {sorted(bannered(server))}); stderr:\n{server.excerpt(80)}"
    )


def reap_stragglers(server: Server, grace: float = 3.0) -> list[int]:
    """Worker processes of `server` still running after it exited: SIGKILLed by pid; returns them."""
    candidates = logged_pids(server) | children(server.pid)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(is_worker_process(pid) for pid in candidates):
        time.sleep(0.05)
    stragglers = [pid for pid in sorted(candidates) if is_worker_process(pid)]
    for pid in stragglers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return stragglers


@pytest.fixture
def serve(start_server: Callable[..., Server]) -> Iterator[Callable[..., Server]]:
    """`serve(target, *options, cwd=None)`: a fresh server; after the test it must stop cleanly, leaving no worker."""
    servers: list[Server] = []

    def starter(target: str, *options: str, cwd: Path | None = None) -> Server:
        server = start_server(target, *options, cwd=cwd)
        servers.append(server)
        return server

    yield starter
    failures = []
    for server in servers:
        try:
            server.stop()
        except pytest.fail.Exception as failure:
            failures.append(str(failure))
        finally:
            if server.process.poll() is None:  # stop() failed early: do not leave it behind
                server.process.kill()
                server.process.wait()
            stragglers = reap_stragglers(server)
            if stragglers:
                failures.append(f"worker processes {stragglers} outlived the supervisor {server.pid}")
    if failures:
        pytest.fail("\n\n".join(failures))


def expect_exit(server: Server, status: int, timeout: float) -> float:
    """Wait for the supervisor to exit on its own with `status`; returns when it exited (monotonic)."""
    try:
        code = server.process.wait(timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the supervisor did not exit within {timeout:.0f}s; stderr:\n{server.excerpt(80)}")
    exited = time.monotonic()
    server.stopped = True
    server.stderr.join()
    server.stdout.join()
    assert code == status, f"exit status {code}, expected {status}; stderr:\n{server.excerpt(80)}"
    return exited


def stop_with(server: Server, signum: int = signal.SIGTERM, timeout: float = 15.0) -> int:
    """Send `signum` to the supervisor and wait for its exit status (the log is not checked for crash text)."""
    server.process.send_signal(signum)
    try:
        code = server.process.wait(timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the supervisor did not exit within {timeout:.0f}s of signal {signum}:\n{server.excerpt(80)}")
    server.stopped = True
    server.stderr.join()
    server.stdout.join()
    return code


def log_after(server: Server, pattern: str, start: int = 0, timeout: float = 10.0) -> str | None:
    """The first log line from index `start` matching the regular expression `pattern`, waiting up to `timeout`."""
    compiled = re.compile(pattern)
    return server.stderr.wait_for(lambda line: compiled.search(line) is not None, timeout, start)


# --- clients -----------------------------------------------------------------------------------------------


def get_pid(server: Server, target: str = "/pid", timeout: float = 10.0) -> int:
    """GET `target` on a new connection; the worker pid in the 200 response."""
    with RawConnection.to(server, timeout) as connection:
        connection.send(request("GET", target))
        response = connection.read_response()
    assert response.status == 200, (response.status, response.body[:300])
    return int(response.body)


@dataclass
class Outcome:
    """One request sent by a `Load` client."""

    client: str
    connection: int  # a number unique to the client connection the request went on
    first: bool  # the first request on that connection
    previous_pid: int | None  # the worker that answered the previous request on that connection
    started: float
    ended: float
    pid: int | None = None
    error: str | None = None


class Load:
    """Client threads sending GET `path` until stopped.

    - `keepalive` threads each hold an http.client connection open (reopened when the server closes it or a
      request fails); with `reuse=(LOW, HIGH)` each connection is closed by the client after a random number
      of requests in that range;
    - `fresh` threads make a new raw connection per request.

    Every answer must be a 200 whose body is the worker pid; anything else is an `Outcome` with an `error`.
    """

    _connections = 0
    _counter_lock = threading.Lock()

    def __init__(
        self,
        server: Server,
        *,
        keepalive: int = 4,
        fresh: int = 2,
        path: str = "/pid",
        reuse: tuple[int, int] | None = None,
        timeout: float = 15.0,
    ) -> None:
        self.server = server
        self.path = path
        self.reuse = reuse
        self.timeout = timeout
        self.outcomes: list[Outcome] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._keepalive, args=(f"keepalive-{index}", index), daemon=True)
            for index in range(keepalive)
        ] + [threading.Thread(target=self._fresh, args=(f"fresh-{index}",), daemon=True) for index in range(fresh)]

    def __enter__(self) -> Load:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @classmethod
    def _next_connection(cls) -> int:
        with cls._counter_lock:
            cls._connections += 1
            return cls._connections

    def start(self) -> None:
        """Start the client threads."""
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Stop sending; wait for the requests in flight to end."""
        self._stop.set()
        for thread in self._threads:
            thread.join(self.timeout + 5)
        stuck = [thread.name for thread in self._threads if thread.is_alive()]
        assert not stuck, f"client threads still waiting for a response: {stuck}"

    def _add(self, outcome: Outcome) -> None:
        with self._lock:
            self.outcomes.append(outcome)

    def count(self) -> int:
        """Requests finished so far."""
        with self._lock:
            return len(self.outcomes)

    def wait_for_count(self, count: int, timeout: float) -> None:
        """Wait until `count` requests finished."""
        deadline = time.monotonic() + timeout
        while self.count() < count and time.monotonic() < deadline:
            time.sleep(0.02)

    def snapshot(self) -> list[Outcome]:
        """The outcomes so far."""
        with self._lock:
            return list(self.outcomes)

    def _check(self, status: int, body: bytes) -> tuple[int | None, str | None]:
        if status != 200:
            return None, f"status {status}: {body[:200]!r}"
        try:
            return int(body), None
        except ValueError:
            return None, f"unexpected body {body[:200]!r}"

    def _keepalive(self, name: str, index: int) -> None:
        seed = index * 7919 + 17
        connection: http.client.HTTPConnection | None = None
        connection_id, served, previous, limit = 0, 0, None, 0
        while not self._stop.is_set():
            if connection is None or (connection.sock is None and served):
                if connection is not None:
                    connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=self.timeout)
                connection_id, served, previous = self._next_connection(), 0, None
                if self.reuse:
                    seed = (seed * 1103515245 + 12345) % 2**31
                    low, high = self.reuse
                    limit = low + seed % (high - low + 1)
            started = time.monotonic()
            outcome = Outcome(name, connection_id, served == 0, previous, started, started)
            try:
                connection.request("GET", self.path)
                response = connection.getresponse()
                body = response.read()
                outcome.pid, outcome.error = self._check(response.status, body)
            except (OSError, http.client.HTTPException) as error:
                outcome.error = f"{type(error).__name__}: {error}"
            outcome.ended = time.monotonic()
            self._add(outcome)
            served += 1
            previous = outcome.pid
            if outcome.error is not None or (self.reuse and served >= limit):
                connection.close()
                connection = None
        if connection is not None:
            connection.close()

    def _fresh(self, name: str) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            outcome = Outcome(name, self._next_connection(), True, None, started, started)
            try:
                with RawConnection.to(self.server, self.timeout) as connection:
                    connection.send(request("GET", self.path))
                    response = connection.read_response()
                outcome.pid, outcome.error = self._check(response.status, response.body)
            except (OSError, ConnectionClosedError, ValueError) as error:
                outcome.error = f"{type(error).__name__}: {error}"
            outcome.ended = time.monotonic()
            self._add(outcome)


def failures(outcomes: list[Outcome]) -> list[Outcome]:
    """The outcomes that are errors."""
    return [outcome for outcome in outcomes if outcome.error is not None]


def per_worker(outcomes: list[Outcome]) -> dict[int, int]:
    """Successful requests per worker pid."""
    counts: dict[int, int] = {}
    for outcome in outcomes:
        if outcome.pid is not None:
            counts[outcome.pid] = counts.get(outcome.pid, 0) + 1
    return counts


def describe(outcomes: list[Outcome], limit: int = 15) -> str:
    """A few outcomes, one a line, for an assertion message."""
    lines = [
        f"{o.client} conn {o.connection} first={o.first} previous_pid={o.previous_pid} "
        f"t={o.started:.3f}..{o.ended:.3f}: {o.error or o.pid}"
        for o in outcomes[:limit]
    ]
    if len(outcomes) > limit:
        lines.append(f"... {len(outcomes) - limit} more")
    return "\n".join(lines)


def connect_refused(server: Server) -> bool:
    """Whether a new TCP connection to the server is refused."""
    try:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=2)
    except ConnectionRefusedError:
        return True
    sock.close()
    return False
