"""The pywebtransport WebTransport client (current draft: draft-ietf-webtrans-http3) for the end-to-end tests.

pywebtransport needs CPython >= 3.12 and the test venv is 3.11, so it runs as a subprocess in a venv of its own
(scripts/pywebtransport-venv.sh makes it, in ~/.cache/peregrine/venv-pywebtransport; scripts/test.sh calls it)
running tests/e2e/pywebtransport_runner.py, JSON in and out. `pywebtransport_echo()` runs the common echo
scenario (wtclient_aioquic.echo_scenario's spec and result); `pywebtransport_echo_server()` runs
pywebtransport's own server side as a reference echo server, to validate the client without peregrine.

`PYWEBTRANSPORT_PYTHON` overrides the interpreter; `PYWEBTRANSPORT` is None (with `MISSING`, the reason) when
there is none, for a skip.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

RUNNER = Path(__file__).resolve().parent / "pywebtransport_runner.py"
DEFAULT_VENV = Path.home() / ".cache" / "peregrine" / "venv-pywebtransport"


def _find_python() -> tuple[str | None, str]:
    override = os.environ.get("PYWEBTRANSPORT_PYTHON")
    python = Path(override) if override else DEFAULT_VENV / "bin" / "python"
    if not python.exists():
        return None, f"no pywebtransport venv at {python} (run scripts/pywebtransport-venv.sh)"
    probe = subprocess.run([str(python), "-c", "import pywebtransport"], capture_output=True, check=False)
    if probe.returncode != 0:
        return None, f"{python} cannot import pywebtransport: {probe.stderr.decode(errors='replace')[-300:]}"
    return str(python), ""


PYWEBTRANSPORT, MISSING = _find_python()


def pywebtransport_echo(port: int, path: str, spec: dict[str, Any], *, timeout: float = 20.0) -> dict[str, Any]:
    """Run the echo scenario with pywebtransport's client against https://127.0.0.1:`port``path`."""
    assert PYWEBTRANSPORT is not None, MISSING
    request = {"mode": "client", "url": f"https://127.0.0.1:{port}{path}", "spec": spec, "timeout": timeout}
    done = subprocess.run(
        [PYWEBTRANSPORT, str(RUNNER)],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        timeout=timeout + 15,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise AssertionError(f"pywebtransport client failed ({done.returncode}): {done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


class ReferenceServer:
    """pywebtransport's echo server in a subprocess: its port and the session closes it reported."""

    def __init__(self, process: subprocess.Popen[str], port: int) -> None:
        self.process = process
        self.port = port
        self.closes: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        assert process.stdout is not None
        threading.Thread(target=self._read, args=(process.stdout,), daemon=True).start()

    def _read(self, stdout: IO[str]) -> None:
        for line in stdout:
            with self._changed:
                self.closes.append(json.loads(line)["closed"])
                self._changed.notify_all()

    def wait_close(self, timeout: float = 10.0) -> dict[str, Any] | None:
        """The oldest close not taken yet, waiting up to `timeout` seconds for one."""
        with self._changed:
            self._changed.wait_for(lambda: bool(self.closes), timeout)
            return self.closes.pop(0) if self.closes else None


@contextlib.contextmanager
def pywebtransport_echo_server(certificate: Path, key: Path) -> Iterator[ReferenceServer]:
    """Run pywebtransport's server as the reference echo server (paths as wtserver_aioquic's)."""
    assert PYWEBTRANSPORT is not None, MISSING
    process = subprocess.Popen(
        [PYWEBTRANSPORT, str(RUNNER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr, text=True
    )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(json.dumps({"mode": "server", "certfile": str(certificate), "keyfile": str(key)}) + "\n")
    process.stdin.flush()
    try:
        port = int(json.loads(process.stdout.readline())["port"])
        yield ReferenceServer(process, port)
    finally:
        process.stdin.close()  # the runner serves until its stdin closes
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
