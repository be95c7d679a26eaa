"""Worker threads against worker processes on a free-threaded CPython (issue #16 point 7, BENCHMARKS.md).

Usage: python3 benchmarks/threads.py --peregrine-ft PATH [--peregrine-gil PATH] [--rounds 3] [--seconds 5]

PATH is the `peregrine` console script of a venv: --peregrine-ft of a free-threaded 3.13t venv (with Django
and FastAPI installed for the memory rows), --peregrine-gil of a GIL build of the same CPython version, for
the per-request cost of the free-threaded build on one worker.

Throughput rows (each configuration started fresh per round, rounds interleaved, the median reported):

- `threads`: `--free-threaded --workers 2`; `processes`: `--workers 2` (same 3.13t build); `one thread`:
  `--free-threaded --workers 1`; for hello WSGI/ASGI and a CPU-bound view (benchmarks/apps/cpu_apps.py, a
  fixed amount of pure-Python work per request, about 2 ms).
- `gil, one worker` and `free-threaded, one worker`: `--workers 1` of each build on the hello applications,
  the server pinned to CPU 0 and wrk to CPU 1: the per-request cost of the free-threaded build.

Two workers use both cores, which wrk shares with them: both sides of a threads/processes ratio pay that.
Every row reports requests per second and the server's CPU time per request (its whole process tree).

Memory rows: the whole tree's PSS (and RSS) of Django (WSGI and ASGI handlers) and FastAPI applications,
2 threads against 2 processes, after 200 requests.

Results go to benchmarks/results/threads-STAMP/ (results.json, summary.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

from harness import (
    BENCH_DIR,
    HOST,
    RESULTS_DIR,
    cpu_between,
    free_port,
    log,
    parse_wrk,
    pinned,
    tree_cpu_seconds,
    tree_memory_kib,
)

APPS = BENCH_DIR / "apps"
#: The CPU-bound view's work per request: fixed, so that every configuration does the same work.
CPU_ROUNDS = "11245"

THREADS = ("--free-threaded", "--workers", "2")
PROCESSES = ("--workers", "2")
ONE_THREAD = ("--free-threaded", "--workers", "1")
ONE = ("--workers", "1")


@dataclass
class Row:
    """One measured configuration."""

    name: str
    app: str
    options: list[str]
    build: str
    rps: list[float]
    cpu_us_per_request: list[float]

    @property
    def median_rps(self) -> float:
        """The median requests per second over the rounds."""
        return statistics.median(self.rps)

    @property
    def median_cpu_us(self) -> float:
        """The median server CPU microseconds per request over the rounds."""
        return statistics.median(self.cpu_us_per_request)


def start(peregrine: str, app: str, options: tuple[str, ...], cpu: int | None) -> tuple[subprocess.Popen[bytes], int]:
    """Start a server and wait until it answers; (process, port)."""
    port = free_port()
    environ = dict(os.environ, CPU_APP_ROUNDS=CPU_ROUNDS)
    argv = [peregrine, "--host", HOST, "--port", str(port), "--python-path", str(APPS)]
    process = subprocess.Popen(
        pinned(cpu, [*argv, *options, app]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=environ,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        probe = subprocess.run(
            ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", f"http://{HOST}:{port}/"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.stdout == "200":
            return process, port
        time.sleep(0.2)
    stop(process)
    raise RuntimeError(f"{app} {' '.join(options)} did not answer within 60 s")


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's group and wait for it."""
    with_group = os.getpgid(process.pid)
    os.killpg(with_group, 15)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(with_group, 9)
        process.wait()


def measure(
    peregrine: str,
    app: str,
    options: tuple[str, ...],
    seconds: float,
    cpus: tuple[int | None, int | None],
) -> tuple[float, float]:
    """(requests per second, server CPU microseconds per request) of one fresh server under wrk.

    `cpus`: (the server's, wrk's) CPU to pin to, or None.
    """
    server_cpu, client_cpu = cpus
    process, port = start(peregrine, app, options, server_cpu)
    try:
        # Warm up (imports finish, caches fill), then measure.
        subprocess.run(
            pinned(client_cpu, ["wrk", "-t1", "-c16", "-d1s", f"http://{HOST}:{port}/"]),
            capture_output=True,
            check=True,
        )
        before = tree_cpu_seconds(process.pid)
        out = subprocess.run(
            pinned(client_cpu, ["wrk", "-t1", "-c16", f"-d{int(seconds)}s", "--latency", f"http://{HOST}:{port}/"]),
            capture_output=True,
            text=True,
            check=True,
        )
        used = cpu_between(before, tree_cpu_seconds(process.pid))
    finally:
        stop(process)
    result = parse_wrk(out.stdout, 0.0)
    if result.errors or result.non_2xx:
        raise RuntimeError(f"{app} {' '.join(options)}: {result.errors} errors, {result.non_2xx} non-2xx")
    return result.rps, used / max(result.requests, 1) * 1e6


def memory(peregrine: str, app: str, options: tuple[str, ...]) -> tuple[int, int]:
    """(RSS, PSS) in KiB of the whole tree after 200 requests."""
    process, port = start(peregrine, app, options, None)
    try:
        subprocess.run(["wrk", "-t1", "-c4", "-d1s", f"http://{HOST}:{port}/"], capture_output=True, check=True)
        time.sleep(1.0)
        return tree_memory_kib(process.pid)
    finally:
        stop(process)


def main() -> int:
    """Measure every row, write results.json and summary.md."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peregrine-ft", required=True, help="peregrine of a free-threaded venv")
    parser.add_argument("--peregrine-gil", help="peregrine of a GIL venv of the same CPython version")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--skip-memory", action="store_true")
    args = parser.parse_args()

    ft, gil = args.peregrine_ft, args.peregrine_gil
    plan: list[tuple[str, str, tuple[str, ...], str, str, int | None, int | None]] = []
    for label, app in (
        ("hello WSGI", "wsgi_apps:hello"),
        ("hello ASGI", "asgi_apps:hello"),
        ("CPU-bound WSGI", "cpu_apps:wsgi"),
        ("CPU-bound ASGI", "cpu_apps:asgi"),
    ):
        plan.append((f"{label}, 2 threads", app, THREADS, "ft", ft, None, None))
        plan.append((f"{label}, 2 processes", app, PROCESSES, "ft", ft, None, None))
        plan.append((f"{label}, 1 thread", app, ONE_THREAD, "ft", ft, None, None))
    for label, app in (("hello WSGI", "wsgi_apps:hello"), ("hello ASGI", "asgi_apps:hello")):
        plan.append((f"{label}, free-threaded, one worker pinned", app, ONE, "ft", ft, 0, 1))
        if gil:
            plan.append((f"{label}, GIL, one worker pinned", app, ONE, "gil", gil, 0, 1))

    rows = {name: Row(name, app, list(options), build, [], []) for name, app, options, build, *_ in plan}
    load = os.getloadavg()
    for round_index in range(args.rounds):
        for name, app, options, _build, peregrine, server_cpu, client_cpu in plan:
            rps, cpu_us = measure(peregrine, app, options, args.seconds, (server_cpu, client_cpu))
            rows[name].rps.append(rps)
            rows[name].cpu_us_per_request.append(cpu_us)
            log(f"round {round_index + 1}: {name}: {rps:,.0f} req/s, {cpu_us:.1f} µs CPU/request")

    memory_rows: list[dict[str, object]] = []
    if not args.skip_memory:
        for label, app in (
            ("Django WSGI", "django_apps:wsgi"),
            ("Django ASGI", "django_apps:asgi"),
            ("FastAPI", "fastapi_app:app"),
        ):
            threads_kib = memory(ft, app, THREADS)
            processes_kib = memory(ft, app, PROCESSES)
            memory_rows.append({"app": label, "threads_kib": threads_kib, "processes_kib": processes_kib})
            log(
                f"{label}: PSS 2 threads {threads_kib[1] / 1024:.1f} MiB, 2 processes {processes_kib[1] / 1024:.1f} MiB"
            )

    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_dir = RESULTS_DIR / f"threads-{stamp}"
    out_dir.mkdir(parents=True)
    (out_dir / "results.json").write_text(
        json.dumps(
            {
                "load_average_before": load,
                "load_average_after": os.getloadavg(),
                "python": sys.version,
                "rows": [asdict(row) for row in rows.values()],
                "memory": memory_rows,
            },
            indent=2,
        )
    )
    lines = [
        f"# Worker threads against processes ({stamp}, {args.rounds} rounds of {args.seconds:.0f} s)",
        "",
        f"Load average before {load[0]:.2f}, after {os.getloadavg()[0]:.2f}.",
        "",
        "| configuration | req/s (median) | server CPU µs/request (median) |",
        "| --- | ---: | ---: |",
    ]
    lines += [f"| {row.name} | {row.median_rps:,.0f} | {row.median_cpu_us:.1f} |" for row in rows.values()]
    lines += ["", "| ratio | req/s |", "| --- | ---: |"]
    for label in ("hello WSGI", "hello ASGI", "CPU-bound WSGI", "CPU-bound ASGI"):
        threads, processes, one = (rows[f"{label}, {kind}"] for kind in ("2 threads", "2 processes", "1 thread"))
        lines.append(f"| {label}: 2 threads / 2 processes | {threads.median_rps / processes.median_rps:.2f} |")
        lines.append(f"| {label}: 2 threads / 1 thread | {threads.median_rps / one.median_rps:.2f} |")
    if gil:
        for label in ("hello WSGI", "hello ASGI"):
            free = rows[f"{label}, free-threaded, one worker pinned"]
            held = rows[f"{label}, GIL, one worker pinned"]
            lines.append(
                f"| {label}: free-threaded / GIL CPU per request, one worker | "
                f"{free.median_cpu_us / held.median_cpu_us:.2f} |"
            )
    if memory_rows:
        lines += [
            "",
            "| application | PSS 2 threads | PSS 2 processes | threads / processes |",
            "| --- | ---: | ---: | ---: |",
        ]
        for entry in memory_rows:
            threads_pss = entry["threads_kib"][1]  # type: ignore[index]
            processes_pss = entry["processes_kib"][1]  # type: ignore[index]
            lines.append(
                f"| {entry['app']} | {threads_pss / 1024:.1f} MiB | {processes_pss / 1024:.1f} MiB | "
                f"{threads_pss / processes_pss:.0%} |"
            )
    (out_dir / "summary.md").write_text("\n".join(lines) + "\n")
    sys.stdout.write("\n".join(lines) + f"\n\nresults in {out_dir}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
