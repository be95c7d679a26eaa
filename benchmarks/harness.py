"""Shared pieces of the benchmark harness: applications, servers, processes, validation, wrk.

`run.py` (throughput) and `memory.py` (resident memory) build on this module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from apps.payloads import BIG, ECHO, HELLO, JSON

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
VENV_DIR = BENCH_DIR / ".venv"
RESULTS_DIR = BENCH_DIR / "results"
POST_SCRIPT = BENCH_DIR / "post.lua"
HOST = "127.0.0.1"
SERVER_CPU = 0
CLIENT_CPU = 1
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def log(message: str) -> None:
    """Progress for the person running the harness (stderr, so stdout stays for reports)."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


@dataclasses.dataclass(frozen=True)
class App:
    """One application: what to send, what must come back, and its target per interface."""

    name: str
    method: str
    body: bytes
    expected: bytes
    wsgi: str | None
    asgi: str | None
    nginx: bool

    @property
    def wrk_script(self) -> Path | None:
        """The wrk Lua script that shapes the request, if it is not a plain GET."""
        return POST_SCRIPT if self.method == "POST" else None


APPS: dict[str, App] = {
    app.name: app
    for app in (
        App("hello", "GET", b"", HELLO, "apps.wsgi_apps:hello", "apps.asgi_apps:hello", nginx=True),
        App("12k", "GET", b"", BIG, "apps.wsgi_apps:big", "apps.asgi_apps:big", nginx=True),
        App("echo", "POST", ECHO, ECHO, "apps.wsgi_apps:echo", "apps.asgi_apps:echo", nginx=False),
        App("fastapi", "GET", b"", JSON, None, "apps.fastapi_app:app", nginx=False),
    )
}


@dataclasses.dataclass(frozen=True)
class Server:
    """A server under test; `interface` is wsgi, asgi or static (nginx)."""

    name: str
    interface: str

    def serves(self, app: App) -> bool:
        """Whether this server runs `app` in the harness."""
        if self.interface == "static":
            return app.nginx
        return (app.wsgi if self.interface == "wsgi" else app.asgi) is not None

    def target(self, app: App) -> str:
        """MODULE:ATTR of `app` for this server's interface."""
        target = app.wsgi if self.interface == "wsgi" else app.asgi
        if target is None:
            raise ValueError(f"{self.name} does not serve {app.name}")
        return target


SERVERS: dict[str, Server] = {
    server.name: server
    for server in (
        Server("nginx", "static"),
        Server("peregrine-wsgi", "wsgi"),
        Server("bjoern", "wsgi"),
        Server("granian-wsgi", "wsgi"),
        Server("gunicorn-sync", "wsgi"),
        Server("peregrine-asgi", "asgi"),
        Server("uvicorn", "asgi"),
        Server("granian-asgi", "asgi"),
        Server("hypercorn", "asgi"),
    )
}


@dataclasses.dataclass
class Environment:
    """Where the executables come from."""

    peregrine: str
    venv: Path = VENV_DIR
    #: Idle keep-alive timeout to ask of servers that have one (seconds; None: their default).
    keep_alive: int | None = None

    def tool(self, name: str) -> str:
        """Path of a console script or interpreter in the peer venv."""
        return str(self.venv / "bin" / name)


def nginx_config(directory: Path, app: App, port: int) -> Path:
    """Write an nginx configuration serving `app`'s fixed response with one worker; return its path."""
    # `return 200 "text"` is nginx's cheapest fixed response, but a configuration parameter is limited to
    # 4 KiB: larger bodies are served from a file (sendfile; open_file_cache keeps it open).
    if len(app.expected) < 4000:
        location = f'return 200 "{app.expected.decode()}";'
    else:
        (directory / "body").write_bytes(app.expected)
        (directory / "body").chmod(0o644)
        directory.chmod(0o755)  # the worker runs as an unprivileged user
        location = f"root {directory}; try_files /body =404;"
    config = f"""
daemon off;
master_process on;
worker_processes 1;
pid {directory}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    keepalive_timeout 300s;
    keepalive_requests 100000000;
    default_type text/plain;
    sendfile on;
    open_file_cache max=16;
    etag off;
    client_body_temp_path {directory}/body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
    server {{
        listen {HOST}:{port} backlog=2048;
        location / {{ {location} }}
    }}
}}
"""
    path = directory / "nginx.conf"
    path.write_text(config)
    return path


def server_command(server: Server, app: App, port: int, env: Environment, scratch: Path) -> list[str]:
    """The argument vector that starts `server` serving `app` on `port`."""
    ka = env.keep_alive
    builders: dict[str, Callable[[], list[str]]] = {
        "nginx": lambda: ["nginx", "-p", str(scratch), "-e", "stderr", "-c", str(nginx_config(scratch, app, port))],
        "peregrine-wsgi": lambda: [
            env.peregrine,
            "--host",
            HOST,
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--protocol",
            "wsgi",
            "--python-path",
            str(BENCH_DIR),
            *(["--keep-alive", str(ka * 1000)] if ka else []),
            server.target(app),
        ],
        "peregrine-asgi": lambda: [
            env.peregrine,
            "--host",
            HOST,
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--protocol",
            "asgi",
            "--python-path",
            str(BENCH_DIR),
            *(["--keep-alive", str(ka * 1000)] if ka else []),
            server.target(app),
        ],
        "bjoern": lambda: [
            env.tool("python"),
            str(BENCH_DIR / "apps" / "bjoern_run.py"),
            server.target(app),
            HOST,
            str(port),
        ],
        "granian-wsgi": lambda: [env.tool("granian"), "--interface", "wsgi", *_granian(port), server.target(app)],
        "granian-asgi": lambda: [env.tool("granian"), "--interface", "asgi", *_granian(port), server.target(app)],
        "gunicorn-sync": lambda: [
            env.tool("gunicorn"),
            "--workers",
            "1",
            "--worker-class",
            "sync",
            "--bind",
            f"{HOST}:{port}",
            "--log-level",
            "warning",
            server.target(app),
        ],
        "uvicorn": lambda: [
            env.tool("uvicorn"),
            "--host",
            HOST,
            "--port",
            str(port),
            "--loop",
            "uvloop",
            "--http",
            "httptools",
            "--interface",
            "asgi3",
            "--no-access-log",
            "--log-level",
            "warning",
            *(["--timeout-keep-alive", str(ka)] if ka else []),
            server.target(app),
        ],
        "hypercorn": lambda: [
            env.tool("hypercorn"),
            "--workers",
            "1",
            "--worker-class",
            "uvloop",
            "--bind",
            f"{HOST}:{port}",
            "--log-level",
            "warning",
            *(["--keep-alive", str(ka)] if ka else []),
            server.target(app),
        ],
    }
    return builders[server.name]()


def _granian(port: int) -> list[str]:
    return ["--host", HOST, "--port", str(port), "--workers", "1", "--http", "1", "--no-ws", "--log-level", "warning"]


def free_port() -> int:
    """A TCP port on HOST that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def pinned(cpu: int | None, argv: list[str]) -> list[str]:
    """`argv` run under `taskset -c CPU` (unchanged when `cpu` is None)."""
    return argv if cpu is None else ["taskset", "-c", str(cpu), *argv]


@dataclasses.dataclass
class Running:
    """A started server: its process (the root of its tree), port and log file."""

    server: Server
    app: App
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def pid(self) -> int:
        """Process id of the tree's root."""
        return self.process.pid


def descendants(root: int) -> list[int]:
    """`root` and every process below it (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    tree, pending = [], [root]
    while pending:
        pid = pending.pop()
        tree.append(pid)
        pending.extend(children.get(pid, []))
    return tree


def tree_cpu_seconds(root: int) -> dict[int, float]:
    """user+sys CPU seconds of each process in `root`'s tree (threads included), by pid."""
    result: dict[int, float] = {}
    for pid in descendants(root):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            # After the command name: state is fields[0], so utime (14th) is [11] and stime (15th) is [12].
            result[pid] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return result


def cpu_between(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds spent between two `tree_cpu_seconds` snapshots (processes new since count fully)."""
    return sum(value - before.get(pid, 0.0) for pid, value in after.items())


def _status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def tree_memory_kib(root: int) -> tuple[int, int]:
    """(sum of VmRSS, sum of Pss) over `root`'s process tree, in KiB."""
    rss = pss = 0
    for pid in descendants(root):
        with contextlib.suppress(OSError, ValueError):
            rss += _status_kib(pid, "VmRSS")
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1])
    return rss, pss


class ValidationError(Exception):
    """A response was not what the application sends."""


def _read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ValidationError(f"connection closed before the end of the response head ({len(data)} bytes)")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ValidationError(f"bad status line {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" not in headers:
        raise ValidationError(f"no Content-Length in the response (headers: {sorted(headers)})")
    length = int(headers["content-length"])
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ValidationError(f"connection closed after {len(rest)} of {length} body bytes")
        rest += chunk
    return int(parts[1]), headers, rest


def request_bytes(app: App, port: int) -> bytes:
    """The HTTP/1.1 keep-alive request the harness sends to `app`."""
    head = f"{app.method} / HTTP/1.1\r\nHost: {HOST}:{port}\r\nUser-Agent: peregrine-bench\r\n"
    if app.method == "POST":
        head += f"Content-Type: application/octet-stream\r\nContent-Length: {len(app.body)}\r\n"
    return head.encode() + b"\r\n" + app.body


def validate(app: App, port: int, requests: int = 3) -> None:
    """Send `requests` requests on one keep-alive connection; raise ValidationError unless each is exact."""
    with socket.create_connection((HOST, port), timeout=10) as sock:
        for _ in range(requests):
            sock.sendall(request_bytes(app, port))
            status, headers, body = _read_response(sock)
            if status != 200:
                raise ValidationError(f"{app.name}: status {status}, expected 200")
            if body != app.expected:
                raise ValidationError(
                    f"{app.name}: body of {len(body)} bytes differs from the expected {len(app.expected)}"
                )
            if headers.get("connection", "").lower() == "close":
                return  # gunicorn's sync worker closes after each response; one exact response is enough


def start(server: Server, app: App, env: Environment, cpu: int | None, scratch: Path) -> Running:
    """Start `server` serving `app` (pinned to `cpu`) and wait until a request is answered exactly."""
    port = free_port()
    argv = pinned(cpu, server_command(server, app, port, env, scratch))
    log_path = scratch / f"{server.name}-{app.name}.log"
    environ = dict(os.environ, PYTHONPATH=str(BENCH_DIR), PYTHONDONTWRITEBYTECODE="1")
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            argv,
            cwd=BENCH_DIR,
            env=environ,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    running = Running(server, app, process, port, log_path)
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{server.name} exited with {process.returncode}: {tail(log_path)}")
        try:
            validate(app, port, requests=1)
        except ValidationError:
            stop(running)
            raise
        except OSError as error:
            if time.monotonic() > deadline:
                stop(running)
                message = f"{server.name} did not answer {app.name} in 60 s: {error}; {tail(log_path)}"
                raise RuntimeError(message) from error
            time.sleep(0.1)
        else:
            return running


def tail(path: Path, lines: int = 8) -> str:
    """The last lines of a log file, for error messages."""
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def stop(running: Running) -> None:
    """Stop the server's whole process group: SIGTERM, then SIGKILL after 10 s."""
    pgid = running.process.pid  # start_new_session: the group is the one this harness created
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    try:
        running.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        running.process.wait()
    # Workers of multi-process servers may outlive the master by a moment.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


@contextlib.contextmanager
def serving(server: Server, app: App, env: Environment, cpu: int | None) -> Iterator[Running]:
    """Run `server` on `app` for the duration of the block, in its own scratch directory."""
    with tempfile.TemporaryDirectory(prefix=f"bench-{server.name}-") as scratch:
        running = start(server, app, env, cpu, Path(scratch))
        try:
            yield running
        finally:
            stop(running)


@dataclasses.dataclass
class WrkResult:
    """What one wrk run measured."""

    requests: int
    seconds: float
    rps: float
    p50_us: float
    p99_us: float
    errors: int
    non_2xx: int
    wrk_cpu_fraction: float


_UNITS = {"us": 1.0, "ms": 1000.0, "s": 1_000_000.0}


def _latency(text: str, percent: str) -> float:
    match = re.search(rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)\s*$", text, re.MULTILINE)
    return float(match.group(1)) * _UNITS[match.group(2)] if match else float("nan")


def parse_wrk(text: str, wrk_cpu_fraction: float) -> WrkResult:
    """Read the figures out of `wrk --latency` output."""
    done = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", text)
    rate = re.search(r"Requests/sec:\s+([\d.]+)", text)
    if not done or not rate:
        raise RuntimeError(f"unexpected wrk output: {text!r}")
    seconds = float(done.group(2)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[done.group(3)]
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    return WrkResult(
        requests=int(done.group(1)),
        seconds=seconds,
        rps=float(rate.group(1)),
        p50_us=_latency(text, "50"),
        p99_us=_latency(text, "99"),
        errors=sum(int(value) for value in socket_errors.groups()) if socket_errors else 0,
        non_2xx=int(non_2xx.group(1)) if non_2xx else 0,
        wrk_cpu_fraction=wrk_cpu_fraction,
    )


def run_wrk(app: App, port: int, seconds: float, connections: int, cpu: int | None) -> WrkResult:
    """Run `wrk -t1` on `app` for `seconds` (whole, at least 1), pinned to `cpu`; also measure wrk's own CPU use."""
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency", "--timeout", "5s"]
    if app.wrk_script is not None:
        argv += ["-s", str(app.wrk_script)]
    argv.append(f"http://{HOST}:{port}/")
    with tempfile.TemporaryFile() as output:
        began = time.monotonic()
        process = subprocess.Popen(pinned(cpu, argv), stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - began
        process.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        text = output.read().decode(errors="replace")
    if process.returncode != 0:
        raise RuntimeError(f"wrk failed ({process.returncode}): {text}")
    # wrk's startup/teardown is a few ms: the fraction of its load phase it spent on a CPU.
    return parse_wrk(text, (usage.ru_utime + usage.ru_stime) / max(wall, 1e-9))


def have(executable: str) -> bool:
    """Whether `executable` is on PATH (or is an existing path)."""
    return shutil.which(executable) is not None


def command_output(argv: list[str]) -> str:
    """First line of a command's output (stdout, else stderr), or "" if it cannot run."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else ""
