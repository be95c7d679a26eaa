"""Helpers to find or make an installed `peregrine` for end-to-end tests.

Other test modules get the server command with `peregrine_command()`:

    from installed import peregrine_command
    with RunningServer([*peregrine_command(), "--port", "0", "app:app"], cwd=app_dir) as server:
        status, body = http_get(server.port)

It honours $PEREGRINE_BIN (a path to the `peregrine` console script or to the
binary itself), then the console script beside the interpreter running the
tests (its venv), then `peregrine` on PATH. test_install.py uses
`make_venv`/`pip_install` to install into fresh venvs itself.
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: Long enough for a cold release build of the server on two cores.
INSTALL_TIMEOUT = 3600.0


def peregrine_command() -> list[str]:
    """Command that starts the installed server, or skip the test with how to get one."""
    explicit = os.environ.get("PEREGRINE_BIN")
    if explicit:
        return [explicit]
    beside = Path(sys.executable).parent / "peregrine"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("peregrine")
    if found:
        return [found]
    pytest.skip("no installed peregrine: run `pip install .` in this venv or set PEREGRINE_BIN")


def server_executable() -> Path:
    """The `peregrine` supervisor executable itself (not the console script), with `peregrine-worker` beside it."""
    command = Path(peregrine_command()[0])
    with command.open("rb") as head:
        if head.read(4) == b"\x7fELF":
            return command.resolve()
    # A console script: ask its interpreter where the package keeps the binary.
    interpreter = command.read_text().splitlines()[0].removeprefix("#!").strip()
    found = subprocess.run(
        [interpreter, "-c", "import peregrine; print(peregrine.binary_path())"],
        capture_output=True,
        text=True,
        check=True,
        env={key: value for key, value in os.environ.items() if key != "PEREGRINE_BINARY"},
    )
    return Path(found.stdout.strip())


def server_python() -> Path:
    """The interpreter whose environment the server's applications see.

    The console script's interpreter (its shebang), which may differ from the
    one running the tests: the free-threaded CI leg serves from a 3.13t venv
    while the clients (trustme, h2, websockets) run on the test venv. A bare
    binary embeds the interpreter named by $PEREGRINE_PYTHON_EXECUTABLE (what
    the console script sets for it; scripts/tsan-stress.sh sets it), else the
    one running the tests.
    """
    explicit = os.environ.get("PEREGRINE_PYTHON_EXECUTABLE")
    if explicit:
        return Path(explicit)
    command = Path(peregrine_command()[0])
    with command.open("rb") as head:
        first = head.readline()
    if first.startswith(b"#!") and b"python" in first:
        return Path(first[2:].decode().strip())
    return Path(sys.executable)


@functools.cache
def server_python_facts() -> dict[str, bool]:
    """What tests ask of the server's interpreter: `free_threaded` (built without the GIL), `uvloop` (importable)."""
    probe = (
        "import importlib.util, json, sysconfig; print(json.dumps({"
        "'free_threaded': bool(sysconfig.get_config_var('Py_GIL_DISABLED')), "
        "'uvloop': importlib.util.find_spec('uvloop') is not None}))"
    )
    found = subprocess.run([str(server_python()), "-c", probe], capture_output=True, text=True, check=True)
    facts: dict[str, bool] = json.loads(found.stdout)
    return facts


@dataclass(frozen=True, kw_only=True)
class Venv:
    """A virtual environment made for a test."""

    root: Path

    @property
    def python(self) -> Path:
        """The venv's interpreter."""
        return self.root / "bin" / "python"

    @property
    def peregrine(self) -> Path:
        """The `peregrine` console script pip put in the venv."""
        return self.root / "bin" / "peregrine"

    def run(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 600.0
    ) -> subprocess.CompletedProcess[str]:
        """Run the venv's python with `args`, capturing text output."""
        return subprocess.run(
            [str(self.python), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
        )


#: Variables a test's interpreters and installs do not inherit: another interpreter's paths, a chosen binary,
#: and PEREGRINE_NO_UVLOOP (an install made here gets the dependencies a newcomer's would).
_NOT_INHERITED = frozenset(
    {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONNOUSERSITE", "PEREGRINE_BINARY", "PEREGRINE_NO_UVLOOP"}
)


def clean_environment(**extra: str) -> dict[str, str]:
    """os.environ without anything that would make one interpreter see another's packages."""
    environment = {key: value for key, value in os.environ.items() if key not in _NOT_INHERITED}
    environment["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    environment["PIP_NO_INPUT"] = "1"
    environment.update(extra)
    return environment


def make_venv(base_python: Path, root: Path) -> Venv:
    """Create a venv from `base_python` (skip if it cannot make one)."""
    result = subprocess.run([str(base_python), "-m", "venv", str(root)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.skip(
            f"{base_python} cannot create a venv (Debian: apt-get install python3-venv): "
            f"{result.stderr.strip().splitlines()[-1:]}"
        )
    return Venv(root=root)


def pip_install(venv: Venv, *requirements: str, env: dict[str, str] | None = None) -> None:
    """`pip install` into the venv; fail the test with pip's output tail if it fails."""
    result = venv.run("-m", "pip", "install", *requirements, env=env or clean_environment(), timeout=INSTALL_TIMEOUT)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-60:])
        pytest.fail(f"pip install {' '.join(requirements)} failed:\n{tail}")


def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


#: The server's start-up log line naming the bound address (with --port 0, the port chosen).
LISTENING = re.compile(r"listening on https?://\S*:(\d+)")


class RunningServer:
    """A server process started with `--port 0`; the port is read from its log.

    with RunningServer([*peregrine_command(), "--port", "0", "app:app"], cwd=app_dir) as server:
        status, body = http_get(server.port)
    """

    def __init__(
        self, command: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 30.0
    ) -> None:
        self.process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env if env is not None else clean_environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._port: int | None = None
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._ready.wait(timeout) or self._port is None:
            self.stop()
            pytest.fail(f"server did not report a listening port within {timeout:.0f}s:\n{self.output}")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            match = LISTENING.search(line)
            if match and self._port is None:
                self._port = int(match.group(1))
                self._ready.set()
        self._ready.set()

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        assert self._port is not None
        return self._port

    @property
    def output(self) -> str:
        """Everything the server printed so far (stdout and stderr)."""
        return "".join(self.lines)

    def stop(self) -> int:
        """SIGTERM, then SIGKILL after 15 s; return the exit status."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(timeout=5)
        return self.process.returncode

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def http_get(port: int, path: str = "/", timeout: float = 10.0) -> tuple[int, str]:
    """GET `path` from 127.0.0.1:`port` on a new connection; return the status and the body text."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()
