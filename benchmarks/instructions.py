"""User-space instructions per request of a server (peregrine or a peer), counted with callgrind.

Usage: python3 benchmarks/instructions.py --peregrine PATH [--app hello|12k|echo|fastapi]
                                           [--interface wsgi|asgi] [--protocol h1|h2c|h3] [--python PATH]
                                           [--requests 20000] [--connections 8] [--keep FILE]
       python3 benchmarks/instructions.py --server bjoern|uvicorn|granian-wsgi|granian-asgi [--venv DIR]
                                           [--app ...] [--requests 20000] [--connections 8]
       either, with --cpu-split: no valgrind; user and system CPU seconds over the same load instead

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
With `--protocol h3` the server also serves HTTP/3 with a throwaway
certificate (`--http3`) and the load is `benchmarks/h3load/` (built into the
scratch directory; `-m 4` requests in flight per connection); each run opens
its `--connections` QUIC connections afresh, so their handshakes are in the
count (8 of 20,000 requests by default).

The apps are those of `benchmarks/apps`, the harness's (run.py): `fastapi` is
`apps.fastapi_app:app`, ASGI only, one JSON object from `GET /`. The worker's
embedded CPython takes its packages from the interpreter given by `--python`
(passed as PEREGRINE_PYTHON_EXECUTABLE, as the pip-installed launcher does);
without it, from PEREGRINE_PYTHON_EXECUTABLE if set, else the build's own.
FastAPI is not a dependency of peregrine, so `fastapi` needs an interpreter
that has it: by default the harness's venv, `benchmarks/.venv/bin/python`
(`run.py --setup` creates it).

`--server` measures a peer the same way: the harness's command line for it
(harness.server_command, as run.py starts it: bjoern through
apps/bjoern_run.py, uvicorn on uvloop and httptools, granian with one worker
process and its default threads), from the harness's venv (`--venv`), over
HTTP/1.1, with the same warm-up and load. Every process of the server's tree
runs under callgrind (granian's main process forks its worker; uvicorn and
bjoern are one process) and all of them are zeroed and dumped, each process
counting all of its threads; the figure is their sum, and the per-process
counts are printed beside it. For peregrine that sum includes the idle
supervisor (a few instructions per request).

`--cpu-split` runs the same server and load without valgrind and prints the
tree's user and system CPU time over the measured requests (utime and stime
from /proc/PID/stat, threads included): the kernel's share of a request,
where `perf stat -e instructions:k` is not available (it is not in this
machine's containers). Those are clock-tick samples (10 ms), so give it
enough requests (100,000 or more) for the split to settle.
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
from typing import TYPE_CHECKING

import harness

if TYPE_CHECKING:
    from collections.abc import Callable

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
#: The peers `--server` runs (harness.SERVERS names); their interface is the harness's.
PEERS = ("bjoern", "uvicorn", "granian-wsgi", "granian-asgi")
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


def h3load(program: Path, port: int, count: int, connections: int, body: Path | None) -> None:
    """`count` HTTP/3 requests with benchmarks/h3load/; exits if any failed."""
    command = [str(program), "-c", str(connections), "-m", "4", "-n", str(count)]
    if body is not None:
        command += ["-b", str(body.stat().st_size)]
    done = subprocess.run([*command, f"https://{HOST}:{port}/"], capture_output=True, text=True, check=False)
    result = harness.parse_h3load(done.stdout, 0.0) if done.returncode == 0 else None
    if result is None or result.errors or result.requests < count:
        raise SystemExit("h3load failed:\n" + done.stdout + done.stderr)


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


def wait_until_serving(server: subprocess.Popen[str], port: int, timeout: float = 300.0, tls: bool = False) -> None:
    """Return once a request to `port` succeeds; exit if the server exits first or `timeout` passes."""
    deadline = time.monotonic() + timeout
    url = f"{'https' if tls else 'http'}://{HOST}:{port}/"
    while True:
        # Each probe gives up after 30 s and the next one waits on: a server under valgrind may accept
        # connections long before it answers (granian's listener is up before its worker has started).
        probe = subprocess.run(["curl", "-skf", "-m", "30", "-o", "/dev/null", url], check=False)
        if probe.returncode == 0:
            return
        if server.poll() is not None:
            raise SystemExit(f"the server exited ({server.returncode}):\n{server.communicate()[1]}")
        if time.monotonic() > deadline:
            raise SystemExit("the server did not answer")
        time.sleep(0.5)


def peregrine_command(args: argparse.Namespace, scratch: Path, port: int) -> tuple[list[str], dict[str, str]]:
    """The argument vector for peregrine (a stripped copy under valgrind, else the given one), its environment."""
    wsgi, asgi, _ = APPS[args.app]
    target = wsgi if args.interface == "wsgi" else asgi
    if target is None:
        other = "asgi" if args.interface == "wsgi" else "wsgi"
        raise SystemExit(f"{args.app} has no {args.interface.upper()} application (pass --interface {other})")
    if args.peregrine is None:
        raise SystemExit("--peregrine is required unless --server names a peer")
    python = worker_python(args.app, args.python)
    given = Path(args.peregrine).resolve()
    executable = given if args.cpu_split else stripped_copy(given, scratch)
    http3: list[str] = []
    if args.protocol == "h3":
        tls = harness.make_certificate(scratch)
        http3 = ["--http3", "--tls-cert", str(tls.cert), "--tls-key", str(tls.key)]
    command = [
        str(executable), "--host", HOST, "--port", str(port), "--workers", "1", "--worker-timeout", "0",
        "--log-level", "warning", "--protocol", args.interface, "--python-path", str(BENCHMARKS),
        *http3, *args.server_option, target,
    ]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(BENCHMARKS))
    if python is not None:
        env["PEREGRINE_PYTHON_EXECUTABLE"] = str(python)
    return command, env


def peer_command(args: argparse.Namespace, scratch: Path, port: int) -> tuple[list[str], dict[str, str]]:
    """The harness's argument vector and environment for the peer `args.server` (run.py starts it so)."""
    server = harness.SERVERS[args.server]
    app = harness.APPS[args.app]
    if not server.serves(app):
        raise SystemExit(f"{args.server} does not serve {args.app}")
    if args.protocol != "h1":
        raise SystemExit("the peers are measured over HTTP/1.1 only (--protocol h1)")
    venv = args.venv.resolve()
    if not (venv / "bin" / "python").exists():
        raise SystemExit(f"no harness venv at {venv} (run.py --setup creates it; or pass --venv)")
    job = harness.Job(server, app)
    environment = harness.Environment(peregrine="", venv=venv)
    return harness.server_command(job, port, environment, scratch), harness.server_environment(job, scratch)


def cpu_ticks(root: int) -> dict[int, tuple[int, int]]:
    """(utime, stime) clock ticks of each process in `root`'s tree, all its threads included."""
    ticks: dict[int, tuple[int, int]] = {}
    for pid in harness.descendants(root):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks[pid] = (int(fields[11]), int(fields[12]))
    return ticks


def thread_counts(pids: list[int]) -> dict[int, int]:
    """Threads of each process now (for the report: how a peer is configured)."""
    counts: dict[int, int] = {}
    for pid in pids:
        try:
            counts[pid] = len(list(Path(f"/proc/{pid}/task").iterdir()))
        except OSError:
            continue
    return counts


def serving_tree(server: subprocess.Popen[str], port: int, tls: bool = False) -> list[int]:
    """The server's processes once it answers: its root and, for a supervisor or a granian, the workers."""
    wait_until_serving(server, port, tls=tls)
    if server.poll() is not None:
        raise SystemExit("the server exited")
    return harness.descendants(server.pid)


def count_instructions(
    pids: list[int], scratch: Path, run_load: Callable[[], None], keep: Path | None
) -> dict[int, int]:
    """Zero every callgrind process in `pids`, run the load, dump them; instructions by pid.

    `keep` receives the dump of the busiest process (peregrine's worker, granian's worker).
    """
    zeroed = [
        pid
        for pid in pids
        if subprocess.run(["callgrind_control", "-z", str(pid)], capture_output=True, check=False).returncode == 0
    ]
    if not zeroed:
        raise SystemExit("no process of the server runs under callgrind")
    before = {pid: set(scratch.glob(f"callgrind.{pid}.*")) for pid in zeroed}
    run_load()
    counts: dict[int, int] = {}
    busiest: Path | None = None
    for pid in zeroed:
        subprocess.run(["callgrind_control", "-d", "measured", str(pid)], check=True, capture_output=True)
        dumps = sorted(set(scratch.glob(f"callgrind.{pid}.*")) - before[pid])
        if not dumps:
            raise SystemExit(f"callgrind wrote no dump for {pid}")
        totals = TOTALS.search(dumps[-1].read_text(errors="replace"))
        if totals is None:
            raise SystemExit(f"no totals in the callgrind dump of {pid}")
        counts[pid] = int(totals[1])
        if counts[pid] == max(counts.values()):
            busiest = dumps[-1]
    if keep is not None and busiest is not None:
        shutil.copy(busiest, keep)
    return counts


def measure(args: argparse.Namespace) -> str:
    """One configuration's figures, as the line to print."""
    payload = APPS[args.app][2]
    port = free_port()
    with tempfile.TemporaryDirectory() as directory:
        scratch = Path(directory)
        if args.server == "peregrine":
            command, env = peregrine_command(args, scratch, port)
        else:
            command, env = peer_command(args, scratch, port)
        if not args.cpu_split:
            out = scratch / "callgrind.%p"
            command = ["valgrind", "--tool=callgrind", "--trace-children=yes", f"--callgrind-out-file={out}", *command]
        body = None
        if payload is not None:
            body = scratch / "body"
            body.write_bytes(payload)
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        try:
            if args.server == "peregrine":
                worker_pid(server.pid)
            pids = serving_tree(server, port, tls=args.protocol == "h3")
            program = harness.build_h3load(scratch) if args.protocol == "h3" else None

            def run(count: int) -> None:
                if program is not None:
                    h3load(program, port, count, args.connections, body)
                else:
                    h2load(port, args.protocol, count, args.connections, body)

            run(WARMUP)
            threads = thread_counts(pids)
            shape = ", ".join(f"{pid}: {threads.get(pid, '?')} threads" for pid in pids)

            def load() -> None:
                run(args.requests)

            if args.cpu_split:
                before = cpu_ticks(server.pid)
                load()
                after = cpu_ticks(server.pid)
                user = sum(ticks[0] - before.get(pid, (0, 0))[0] for pid, ticks in after.items())
                system = sum(ticks[1] - before.get(pid, (0, 0))[1] for pid, ticks in after.items())
                per = 1e6 / harness.CLOCK_TICKS / args.requests
                share = system / (user + system) if user + system else 0.0
                return (
                    f"user {user * per:.2f} µs, system {system * per:.2f} µs per request "
                    f"(kernel {share:.0%}; {user}+{system} ticks; {shape})"
                )
            counts = count_instructions(pids, scratch, load, args.keep)
            total = sum(counts.values()) / args.requests
            each = ", ".join(f"{pid}: {count / args.requests:,.0f}" for pid, count in counts.items())
            return f"{total:,.0f} instructions per request ({each}; {shape})"
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()


def main() -> None:
    """Parse the options, measure, print one line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", choices=["peregrine", *PEERS], default="peregrine")
    parser.add_argument("--peregrine", help="the supervisor executable (peregrine-worker beside it)")
    parser.add_argument("--venv", type=Path, default=harness.VENV_DIR, help="the harness's venv, for the peers")
    parser.add_argument("--app", choices=sorted(APPS), default="hello")
    parser.add_argument("--interface", choices=["wsgi", "asgi"], default="wsgi")
    parser.add_argument("--protocol", choices=["h1", "h2c", "h3"], default="h1")
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
    parser.add_argument("--cpu-split", action="store_true", help="no valgrind: user and system CPU time instead")
    args = parser.parse_args()
    if args.server != "peregrine":
        args.interface = harness.SERVERS[args.server].interface
    line = measure(args)
    sys.stdout.write(f"{args.server} {args.interface} {args.app} {args.protocol}: {line}\n")


if __name__ == "__main__":
    main()
