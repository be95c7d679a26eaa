"""A server started by `peregrine.run(..., block=False)`: its address, its log, and stopping it.

The server learns its own port (`port=0` picks a free one) and says so: once
its first worker is ready, the supervisor logs `listening on URL` for each
listener. The handle reads the server's standard error through a pipe, echoes
every line to this process's standard error, keeps the last lines for error
messages, and is ready at that line: the port is the one the server bound, not
one picked here beforehand (which another process could take in between).

With a log level that hides that line (warning, error or silent, given as
`log_level` or $PEREGRINE_LOG_LEVEL), the port is read from the kernel instead:
the TCP socket the supervisor listens on, in /proc (Linux). Ready then means
listening; a request sent before a worker is ready waits in the backlog.

A server does not outlive the interpreter that started it: its log pipe would
have no reader. Servers still running at exit are stopped (SIGTERM) then.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import re
import signal
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ._binary import PeregrineError

if TYPE_CHECKING:
    from types import TracebackType

#: `listening on http://127.0.0.1:8000`, `https://[::1]:8443`, `unix:/run/app.sock` (also inside a JSON log line).
LISTENING = re.compile(
    r"listening on (?:(?P<url>https?://(?:\[[^\]]+\]|[^\s:/\"]+):(?P<port>\d+))|unix:(?P<unix>[^\s\"]+))"
)
#: Log levels at which the server does not log `listening on`.
QUIET_LEVELS = frozenset({"warning", "error", "silent"})
#: Server log lines kept for `ServerProcess.log` and error messages.
KEPT_LINES = 1000
#: /proc/net/tcp state of a listening socket.
TCP_LISTEN = "0A"


#: Servers started by this interpreter and not yet seen to exit, stopped at exit.
_RUNNING: weakref.WeakSet[ServerProcess] = weakref.WeakSet()


@atexit.register
def _stop_running_servers() -> None:
    for server in list(_RUNNING):
        server.stop()


class ServerStartError(PeregrineError):
    """The server exited, or did not become ready in time; `log` holds what it wrote to standard error."""

    def __init__(self, message: str, log: list[str], returncode: int | None) -> None:
        tail = "\n".join(log[-40:]) or "(nothing)"
        super().__init__(f"{message}; the server's log:\n{tail}")
        self.log = log
        self.returncode = returncode


def listening_port(pid: int) -> int | None:
    """The port of a TCP socket process `pid` listens on, from /proc; None if it has none (yet)."""
    inodes: set[str] = set()
    with contextlib.suppress(OSError):
        for descriptor in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                link = descriptor.readlink().name
                if link.startswith("socket:["):
                    inodes.add(link[len("socket:[") : -1])
    for table in ("tcp", "tcp6"):
        try:
            rows = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            # sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
            if len(fields) > 9 and fields[3] == TCP_LISTEN and fields[9] in inodes:
                return int(fields[1].rsplit(":", 1)[1], 16)
    return None


class ServerProcess:
    """A running server: `.url`, `.port`, `.pid`, `.stop()`, `.wait()`; a context manager that stops it.

    Usage: `with peregrine.run("app:app", port=0, block=False) as server: httpx.get(server.url)`.
    """

    def __init__(self, process: subprocess.Popen[bytes], args: list[str], *, quiet: bool, fallback_url: str) -> None:
        self._process = process
        #: The server's command line (program name first).
        self.args = args
        self._quiet = quiet
        self._fallback_url = fallback_url
        self._lines: collections.deque[str] = collections.deque(maxlen=KEPT_LINES)
        self._changed = threading.Condition()
        self._eof = False
        self._url: str | None = None
        self._port: int | None = None
        assert process.stderr is not None  # noqa: S101 (started with stderr=PIPE)
        self._reader = threading.Thread(
            target=self._pump, args=(process.stderr,), name=f"peregrine {process.pid} stderr", daemon=True
        )
        self._reader.start()
        _RUNNING.add(self)

    def _pump(self, pipe: IO[bytes]) -> None:
        for raw in pipe:
            line = raw.decode("utf-8", "replace")
            if sys.stderr is not None:
                with contextlib.suppress(OSError, ValueError):
                    sys.stderr.write(line)
                    sys.stderr.flush()
            with self._changed:
                self._lines.append(line.rstrip("\n"))
                match = LISTENING.search(line) if self._url is None else None
                if match is not None:
                    self._url = match["url"] or f"unix:{match['unix']}"
                    self._port = int(match["port"]) if match["port"] else None
                self._changed.notify_all()
        with self._changed:
            self._eof = True
            self._changed.notify_all()

    def _found_quietly(self) -> bool:
        """With the `listening on` line hidden: whether the kernel shows the listening socket yet."""
        if self._fallback_url.startswith("unix:"):
            if Path(self._fallback_url.removeprefix("unix:")).is_socket():
                self._url = self._fallback_url
                return True
            return False
        port = listening_port(self._process.pid)
        if port is None:
            return False
        self._port = port
        self._url = f"{self._fallback_url}:{port}"
        return True

    def wait_ready(self, timeout: float) -> None:
        """Wait until the server listens; ServerStartError (with its log) if it exits or `timeout` passes."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._url is None:
                if self._quiet and self._found_quietly():
                    return
                if self._process.poll() is not None:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._changed.wait(min(remaining, 0.05))
            if self._url is not None:
                return
        code = self._process.poll()
        if code is not None:
            self._reader.join(1.0)
            raise ServerStartError(f"the server exited with status {code} before it was ready", self.log, code)
        self.stop()
        hint = "" if self._quiet else " (if a config file sets a log level above info, pass log_level to run())"
        raise ServerStartError(
            f"the server did not start listening within {timeout:g} s (stopped it){hint}", self.log, self.returncode
        )

    @property
    def pid(self) -> int:
        """The server's (supervisor's) process id."""
        return self._process.pid

    @property
    def url(self) -> str:
        """Where it listens: `http://127.0.0.1:PORT`, `https://...` with TLS, `unix:PATH` on a unix socket."""
        if self._url is None:
            raise PeregrineError("the server is not listening yet")
        return self._url

    @property
    def port(self) -> int:
        """The TCP port the server bound (the one it picked for `port=0`)."""
        if self._port is None:
            raise PeregrineError(f"the server has no TCP port (it listens on {self._url or 'nothing yet'})")
        return self._port

    @property
    def returncode(self) -> int | None:
        """The exit status once it exited (as `subprocess`: -N after signal N), else None."""
        return self._process.poll()

    @property
    def log(self) -> list[str]:
        """The last lines the server wrote to standard error."""
        with self._changed:
            return list(self._lines)

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the server to exit and return its status; TimeoutError if it runs past `timeout` seconds."""
        try:
            code = self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"the server (pid {self.pid}) still runs after {timeout:g} s") from None
        self._reader.join(1.0)
        _RUNNING.discard(self)
        return code

    def stop(self, timeout: float = 15.0) -> int:
        """Stop gracefully: SIGTERM, then SIGKILL if it still runs after `timeout` seconds. Returns the status."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                return self.wait(timeout)
            except TimeoutError:
                self._process.kill()
        return self.wait()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.returncode is None else f"exited {self.returncode}"
        return f"<peregrine.ServerProcess pid={self.pid} {self._url or 'not listening yet'} {state}>"
