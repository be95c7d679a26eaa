"""Fixtures that run the real `peregrine` on an ephemeral port (or a unix socket) for the e2e suite.

A `Server` is one running process: its port, the lines it printed (stderr:
the log; stdout: the access log), and the state directory its applications
record events in (tests/apps/wsgi_apps.py). Servers are started by

- `server_pool` (session): `server_pool.get(target, *options)` starts one
  server per (target, options) and shares it between tests; after every test
  each shared server is checked to be alive (a crash fails the test that
  caused it), and at the end of the session each is stopped with SIGTERM
  and must exit 0 without crash text;
- `start_server` (function): a fresh server for a test that needs its own
  state (timeouts, connection limits, memory); stopped and checked the same
  way when the test ends.

With `PEREGRINE_TEST_WORKER_THREADS=N` (the free-threaded leg of
scripts/test.sh) every server runs as `--free-threaded --workers N` unless
its test chose the process model (`--workers`, `--free-threaded`, or
PEREGRINE_WORKER_CONTEXTS); `two_worker_threads` starts one with two worker
threads on any build.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from installed import peregrine_command, server_python_facts  # noqa: E402  (needs the sys.path entry above)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

APPS = TESTS / "apps"
STARTUP_TIMEOUT = 15.0
STOP_TIMEOUT = 15.0
#: Text that means the Swift host crashed rather than failing cleanly.
CRASH_MARKERS = (
    "Fatal error",
    "Segmentation",
    "Stack dump",
    "Current stack trace",
    "Illegal instruction",
    "Aborted",
    "SIGSEGV",
    "SIGABRT",
)
LISTENING = re.compile(r"listening on (?:https?://(?:\[[^\]]+\]|[^\s:/]+):(?P<port>\d+)|unix:(?P<unix>\S+))")
#: The worker's banner ("peregrine V serving APP with Python ..."), naming its worker threads when there are several.
BANNER = re.compile(r"peregrine \S+ serving \S+ with Python ")
BANNER_THREADS = re.compile(r" in (\d+) worker (?:threads|contexts) ")


class Lines:
    """Lines read from a pipe by a background thread, so the pipe never fills."""

    def __init__(self, pipe: IO[str]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._pump, args=(pipe,), daemon=True)
        self._thread.start()
        self.closed = False

    def _pump(self, pipe: IO[str]) -> None:
        for line in pipe:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self.closed = True
            self._changed.notify_all()

    def text(self) -> str:
        """Everything read so far."""
        with self._changed:
            return "\n".join(self.lines)

    def wait_for(self, predicate: Callable[[str], bool], timeout: float, start: int = 0) -> str | None:
        """First line (from index `start`) satisfying `predicate`, waiting up to `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            index = start
            while True:
                while index < len(self.lines):
                    if predicate(self.lines[index]):
                        return self.lines[index]
                    index += 1
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.closed:
                    return None
                self._changed.wait(remaining)

    def join(self, timeout: float = 5.0) -> None:
        """Wait until the pipe reached EOF."""
        self._thread.join(timeout)


@dataclass
class Server:
    """A running peregrine process."""

    process: subprocess.Popen[str]
    args: list[str]
    state: Path
    stderr: Lines
    stdout: Lines
    port: int = 0
    unix_path: str | None = None
    stopped: bool = field(default=False)

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self.process.pid

    def connect(self, timeout: float = 10.0) -> socket.socket:
        """A new client socket connected to the server."""
        if self.unix_path is not None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(self.unix_path)
            return sock
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    @property
    def worker_threads(self) -> int:
        """How many worker threads the (first) worker process serves with: 1 unless its banner names more."""
        line = self.stderr.wait_for(lambda text: BANNER.search(text) is not None, 5)
        match = BANNER_THREADS.search(line or "")
        return int(match[1]) if match else 1

    @property
    def own_threads(self) -> set[str]:
        """The thread kinds (tests/apps/thread_kind.py) of the server's own threads: where its event loops run."""
        return {"main"} if self.worker_threads == 1 else {"main", "server"}

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:PORT."""
        return f"http://127.0.0.1:{self.port}"

    def events(self) -> list[str]:
        """The lines the applications recorded so far."""
        path = self.state / "events.log"
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []

    def calls(self) -> list[str]:
        """The `call METHOD PATH` events."""
        return [event for event in self.events() if event.startswith("call ")]

    def wait_for_event(self, event: str, timeout: float = 10.0) -> bool:
        """Whether `event` was recorded within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if event in self.events():
                return True
            time.sleep(0.05)
        return event in self.events()

    def vm_kib(self, field_name: str) -> int:
        """A VmRSS/VmHWM-style field of /proc/PID/status, in KiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
        raise KeyError(field_name)

    def crash_text(self) -> str | None:
        """The first line of stderr that shows a crash of the host, if any."""
        for line in list(self.stderr.lines):
            if any(marker in line for marker in CRASH_MARKERS):
                return line
        return None

    def excerpt(self, limit: int = 40) -> str:
        """The server's stderr, long crash dumps cut to their first `limit` lines."""
        lines = list(self.stderr.lines)
        if len(lines) <= limit:
            return "\n".join(lines)
        return "\n".join([*lines[:limit], f"... ({len(lines) - limit} more lines)"])

    def check_alive(self) -> None:
        """Fail the test if the server has died or printed crash text."""
        code = self.process.poll()
        crash = self.crash_text()
        if code is not None or crash is not None:
            self.stderr.join(2)
            pytest.fail(
                f"server {' '.join(self.args)} died (exit {code}) or crashed ({crash!r}); stderr:\n" + self.excerpt()
            )

    def stop(self) -> int:
        """SIGTERM, wait, and fail the test unless it exited 0 without crash text."""
        if self.stopped:
            return self.process.returncode
        self.stopped = True
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                pytest.fail(f"server {' '.join(self.args)} did not stop within {STOP_TIMEOUT:.0f}s of SIGTERM")
        self.stderr.join()
        self.stdout.join()
        code = self.process.returncode
        crash = self.crash_text()
        if code != 0 or crash is not None:
            pytest.fail(
                f"server {' '.join(self.args)} exited with {code} after SIGTERM (crash text: {crash!r}); "
                f"stderr:\n{self.excerpt()}"
            )
        return code


#: `PEREGRINE_TEST_WORKER_THREADS=N`: every server the tests start runs as
#: `--free-threaded --workers N` (N worker threads in one process, on a
#: free-threaded CPython) unless the test picks its own process model.
WORKER_THREADS_VARIABLE = "PEREGRINE_TEST_WORKER_THREADS"
#: Options and variables by which a test picks its own process model.
PROCESS_MODEL_OPTIONS = frozenset({"--workers", "--free-threaded"})
PROCESS_MODEL_VARIABLES = ("PEREGRINE_WORKER_CONTEXTS",)


def worker_threads() -> int:
    """N of $PEREGRINE_TEST_WORKER_THREADS, or 0 when the servers keep their default process model."""
    value = os.environ.get(WORKER_THREADS_VARIABLE, "")
    return int(value) if value else 0


def process_model(options: tuple[str, ...], environment: dict[str, str]) -> tuple[str, ...]:
    """`--free-threaded --workers N` for a server whose test did not choose its process model, if asked for."""
    threads = worker_threads()
    if threads == 0 or PROCESS_MODEL_OPTIONS.intersection(options):
        return ()
    if any(environment.get(name) for name in PROCESS_MODEL_VARIABLES):
        return ()
    return ("--free-threaded", "--workers", str(threads))


def launch(
    target: str,
    *options: str,
    state: Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    preexec_fn: Callable[[], object] | None = None,
) -> tuple[subprocess.Popen[str], list[str]]:
    """Start `peregrine [options] target` with tests/apps on its path; do not wait.

    `preexec_fn` runs in the child before exec (e.g. to lower a resource limit).

    Under $PEREGRINE_TEST_WORKER_THREADS the server runs free-threaded in that
    many worker threads unless `options` or `env` choose the process model.
    """
    environment = dict(os.environ if env is None else env)
    model = process_model(options, environment)
    args = [*peregrine_command(), "--python-path", str(APPS), *model, *options, target]
    environment["PEREGRINE_TEST_STATE"] = str(state)
    environment.setdefault("PYTHONUNBUFFERED", "1")
    process = subprocess.Popen(
        args,
        cwd=cwd or state,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        preexec_fn=preexec_fn,  # noqa: PLW1509 - callers pass a C function (resource.setrlimit): no lock in the child
    )
    return process, args


def start(
    target: str,
    *options: str,
    state: Path,
    cwd: Path | None = None,
    preexec_fn: Callable[[], object] | None = None,
) -> Server:
    """Start a server and wait for its `listening on` line (binds 127.0.0.1:0 unless --unix/--port given)."""
    if "--unix" not in options and "--port" not in options:
        options = ("--host", "127.0.0.1", "--port", "0", *options)
    process, args = launch(target, *options, state=state, cwd=cwd, preexec_fn=preexec_fn)
    assert process.stderr is not None
    assert process.stdout is not None
    server = Server(process=process, args=args, state=state, stderr=Lines(process.stderr), stdout=Lines(process.stdout))
    line = server.stderr.wait_for(lambda text: LISTENING.search(text) is not None, STARTUP_TIMEOUT)
    if line is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait()
        server.stderr.join()
        pytest.fail(
            f"{' '.join(args)} did not log 'listening on' within {STARTUP_TIMEOUT:.0f}s "
            f"(exit {process.returncode}); stderr:\n{server.stderr.text()}"
        )
    match = LISTENING.search(line)
    assert match is not None
    if match["unix"]:
        server.unix_path = match["unix"]
    else:
        server.port = int(match["port"])
    return server


class ServerPool:
    """Servers shared across tests, one per (target, options)."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self._factory = factory
        self._servers: dict[tuple[str, ...], Server] = {}

    def get(self, target: str, *options: str) -> Server:
        """The shared server for `target` with `options`, started on first use."""
        key = (target, *options)
        server = self._servers.get(key)
        if server is None:
            server = start(target, *options, state=self._factory.mktemp("server"))
            self._servers[key] = server
        return server

    def check_all(self) -> None:
        """Fail if any shared server died."""
        for server in self._servers.values():
            server.check_alive()

    def stop_all(self) -> None:
        """Stop every shared server; report every failure."""
        failures = []
        for server in self._servers.values():
            try:
                server.stop()
            except pytest.fail.Exception as failure:
                failures.append(str(failure))
        if failures:
            pytest.fail("\n\n".join(failures))


@pytest.fixture(scope="session")
def server_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerPool]:
    """Shared servers for the session; each must stop cleanly at the end."""
    pool = ServerPool(tmp_path_factory)
    yield pool
    pool.stop_all()


@pytest.fixture(autouse=True)
def _shared_servers_survive(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test that used shared servers, they must all still be running."""
    yield
    if "server_pool" in request.fixturenames:
        pool: ServerPool = request.getfixturevalue("server_pool")
        pool.check_all()


@pytest.fixture
def start_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Server]]:
    """Start fresh servers for one test: `start_server(target, *options)`; stopped and checked after it."""
    servers: list[Server] = []

    def starter(
        target: str, *options: str, cwd: Path | None = None, preexec_fn: Callable[[], object] | None = None
    ) -> Server:
        server = start(target, *options, state=tmp_path_factory.mktemp("server"), cwd=cwd, preexec_fn=preexec_fn)
        servers.append(server)
        return server

    yield starter
    failures = []
    for server in servers:
        try:
            server.stop()
        except pytest.fail.Exception as failure:
            failures.append(str(failure))
    if failures:
        pytest.fail("\n\n".join(failures))


@pytest.fixture
def two_worker_threads(start_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Server]:
    """Start `target` with two worker threads in one process: `two_worker_threads(target, *options)`.

    `--free-threaded --workers 2` when the server's Python is free-threaded
    (the threads in parallel), else the internal PEREGRINE_WORKER_CONTEXTS=2
    (the same threads taking turns on the GIL).
    """

    def starter(target: str, *options: str) -> Server:
        if server_python_facts()["free_threaded"]:
            server = start_server(target, "--free-threaded", "--workers", "2", *options)
            words = "in 2 worker threads"
        else:
            monkeypatch.setenv("PEREGRINE_WORKER_CONTEXTS", "2")
            server = start_server(target, *options)
            words = "in 2 worker contexts"
        assert server.stderr.wait_for(lambda line: words in line, 10) is not None, server.excerpt()
        return server

    return starter


@pytest.fixture(scope="session")
def wsgi_server(server_pool: ServerPool) -> Server:
    """The router of tests/apps/wsgi_apps.py with default options."""
    return server_pool.get("wsgi_apps:app")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every e2e test gets a timeout (pytest-timeout) unless it sets its own."""
    for item in items:
        if "e2e" in item.path.parts and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(60))
