"""User-space instructions per request of a peregrine worker, counted with callgrind.

Usage: python3 benchmarks/instructions.py --peregrine PATH [--app hello|12k|echo|fastapi]
                                           [--interface wsgi|asgi] [--protocol h1|h2c] [--python PATH]
                                           [--requests 20000] [--connections 8] [--keep FILE]

Requests per second move with whatever else the machine runs; instructions do
not: callgrind counts the same total for the same binary and load whatever
the other core is doing. So this is the figure to compare two builds by on a
busy machine (BENCHMARKS.md, optimisation log), next to the harness's
side-by-side rounds.

The worker runs under `valgrind --tool=callgrind` (the supervisor too, which
is idle), from copies of the two executables without their DWARF debug
information (valgrind 3.19 cannot read the DWARF 5 forms the Swift toolchain
writes, and gives up on the whole process). After start-up and a warm-up of 2,000 requests the worker's counters
are zeroed (`callgrind_control -z`), then `--requests` requests are sent with
h2load (`--h1` for HTTP/1.1, prior-knowledge h2c otherwise) and the counters
dumped; the total divided by the requests is the cost of one request,
start-up excluded. The kernel's share is not counted (see `perf` for that).

The apps are those of `benchmarks/apps`, the harness's (run.py): `fastapi` is
`apps.fastapi_app:app`, ASGI only, one JSON object from `GET /`. The worker's
embedded CPython takes its packages from the interpreter given by `--python`
(passed as PEREGRINE_PYTHON_EXECUTABLE, as the pip-installed launcher does);
without it, from PEREGRINE_PYTHON_EXECUTABLE if set, else the build's own.
FastAPI is not a dependency of peregrine, so `fastapi` needs an interpreter
that has it: by default the harness's venv, `benchmarks/.venv/bin/python`
(`run.py --setup` creates it).
"""

from __future__ import annotations

import argparse
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

BENCHMARKS = Path(__file__).resolve().parent
HOST = "127.0.0.1"
WARMUP = 2_000
#: Name: (WSGI target, ASGI target, request body); every app answers `/`.
APPS: dict[str, tuple[str | None, str | None, bytes | None]] = {
    "hello": ("apps.wsgi_apps:hello", "apps.asgi_apps:hello", None),
    "12k": ("apps.wsgi_apps:big", "apps.asgi_apps:big", None),
    "echo": ("apps.wsgi_apps:echo", "apps.asgi_apps:echo", b"x" * 1024),
    "fastapi": (None, "apps.fastapi_app:app", None),
}
#: The harness's venv (run.py --setup), which has FastAPI; the default `--python` for apps that need it.
HARNESS_PYTHON = BENCHMARKS / ".venv" / "bin" / "python"
#: Apps that import packages peregrine does not depend on (and the module to check for).
NEEDS_PACKAGE = {"fastapi": "fastapi"}
SUCCEEDED = re.compile(r"requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded")
LISTENING = re.compile(r"listening on https?://[^\s]*:(\d+)")
TOTALS = re.compile(r"^(?:summary|totals):\s+(\d+)", re.MULTILINE)


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def worker_pid(supervisor: int, timeout: float = 60.0) -> int:
    """The pid of the supervisor's (only) worker."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = Path(f"/proc/{supervisor}/task/{supervisor}/children")
        pids = children.read_text().split() if children.exists() else []
        if pids:
            return int(pids[0])
        time.sleep(0.1)
    raise SystemExit("no worker appeared")


def h2load(port: int, protocol: str, count: int, connections: int, body: Path | None) -> None:
    """`count` requests; exits if any failed."""
    command = ["h2load", "-c", str(connections), "-t", "1", "-n", str(count)]
    command += ["--h1", "-m", "1"] if protocol == "h1" else ["-m", "10"]
    if body is not None:
        command += ["-d", str(body)]
    done = subprocess.run([*command, f"http://{HOST}:{port}/"], capture_output=True, text=True, check=False)
    match = SUCCEEDED.search(done.stdout)
    if match is None or int(match[2]) != count:
        raise SystemExit("h2load failed:\n" + done.stdout + done.stderr)


def stripped_copy(supervisor: Path, into: Path) -> Path:
    """Copies of `peregrine` and the `peregrine-worker` beside it, without debug information."""
    for name in (supervisor.name, "peregrine-worker"):
        source = supervisor.parent / name
        subprocess.run(["objcopy", "--strip-debug", str(source), str(into / name)], check=True)
        shutil.copymode(source, into / name)
    return into / supervisor.name


def worker_python(app: str, given: Path | None) -> Path | None:
    """The interpreter whose packages the worker imports (None: the environment's or the build's).

    Exits if `app` needs a package that interpreter does not have, rather than waiting for a server that
    cannot start.
    """
    python = given
    if python is None and "PEREGRINE_PYTHON_EXECUTABLE" in os.environ:
        python = Path(os.environ["PEREGRINE_PYTHON_EXECUTABLE"])
    module = NEEDS_PACKAGE.get(app)
    if module is None:
        return python
    if python is None:
        python = HARNESS_PYTHON
    if not python.exists():
        raise SystemExit(f"{app} needs an interpreter with {module}: {python} does not exist (pass --python)")
    found = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True, check=False)
    if found.returncode != 0:
        raise SystemExit(f"{app} needs {module}, which {python} cannot import (pass --python)")
    return python


def wait_until_serving(server: subprocess.Popen[str], port: int, timeout: float = 120.0) -> None:
    """Return once a request to `port` succeeds; exit if the server exits first or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while True:
        probe = subprocess.run(["curl", "-sf", "-o", "/dev/null", f"http://{HOST}:{port}/"], check=False, timeout=60)
        if probe.returncode == 0:
            return
        if server.poll() is not None:
            raise SystemExit(f"the server exited ({server.returncode}):\n{server.communicate()[1]}")
        if time.monotonic() > deadline:
            raise SystemExit("the server did not answer")
        time.sleep(0.5)


def measure(args: argparse.Namespace) -> float:
    """Instructions per request for one configuration."""
    wsgi, asgi, payload = APPS[args.app]
    target = wsgi if args.interface == "wsgi" else asgi
    if target is None:
        other = "asgi" if args.interface == "wsgi" else "wsgi"
        raise SystemExit(f"{args.app} has no {args.interface.upper()} application (pass --interface {other})")
    python = worker_python(args.app, args.python)
    port = free_port()
    with tempfile.TemporaryDirectory() as scratch:
        executable = stripped_copy(Path(args.peregrine).resolve(), Path(scratch))
        out = Path(scratch) / "callgrind.%p"
        body = None
        if payload is not None:
            body = Path(scratch) / "body"
            body.write_bytes(payload)
        command = [
            "valgrind", "--tool=callgrind", "--trace-children=yes", f"--callgrind-out-file={out}",
            str(executable), "--host", HOST, "--port", str(port), "--workers", "1", "--worker-timeout", "0",
            "--log-level", "warning", "--protocol", args.interface, "--python-path", str(BENCHMARKS),
            *args.server_option, target,
        ]  # fmt: skip
        env = dict(os.environ, PYTHONPATH=str(BENCHMARKS))
        if python is not None:
            env["PEREGRINE_PYTHON_EXECUTABLE"] = str(python)
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        try:
            pid = worker_pid(server.pid)
            wait_until_serving(server, port)
            h2load(port, args.protocol, WARMUP, args.connections, body)
            subprocess.run(["callgrind_control", "-z", str(pid)], check=True, capture_output=True)
            h2load(port, args.protocol, args.requests, args.connections, body)
            subprocess.run(["callgrind_control", "-d", "measured", str(pid)], check=True, capture_output=True)
            dumps = sorted(Path(scratch).glob(f"callgrind.{pid}.*"))
            if not dumps:
                raise SystemExit("callgrind wrote no dump for the worker")
            if args.keep is not None:
                shutil.copy(dumps[-1], args.keep)
            totals = TOTALS.search(dumps[-1].read_text(errors="replace"))
            if totals is None:
                raise SystemExit("no totals in the callgrind dump")
            return int(totals[1]) / int(args.requests)
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()


def main() -> None:
    """Parse the options, measure, print one line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peregrine", required=True, help="the supervisor executable (peregrine-worker beside it)")
    parser.add_argument("--app", choices=sorted(APPS), default="hello")
    parser.add_argument("--interface", choices=["wsgi", "asgi"], default="wsgi")
    parser.add_argument("--protocol", choices=["h1", "h2c"], default="h1")
    parser.add_argument(
        "--python",
        type=Path,
        help="interpreter whose packages the worker imports (PEREGRINE_PYTHON_EXECUTABLE; "
        f"fastapi's default: {HARNESS_PYTHON})",
    )
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument(
        "--server-option",
        action="append",
        default=[],
        help="an extra argument for peregrine (repeatable), e.g. --server-option=--metrics-port --server-option=9100",
    )
    parser.add_argument("--keep", type=Path, help="copy the measured callgrind dump here (for callgrind_annotate)")
    args = parser.parse_args()
    per_request = measure(args)
    sys.stdout.write(f"{args.interface} {args.app} {args.protocol}: {per_request:,.0f} instructions per request\n")


if __name__ == "__main__":
    main()
