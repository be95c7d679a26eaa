"""WebTransport over HTTP/3 measured: stream echo, message echo, datagrams, idle sessions; WebSocket beside it.

Usage (with a Python that has aioquic and pytest, e.g. the test venv: tests/requirements-h3.txt):

    python benchmarks/webtransport.py --bin .build/release/peregrine          # every mode, ~3 min
    python benchmarks/webtransport.py --bin PATH --modes message-echo,ws-echo --duration 10
    python benchmarks/webtransport.py --bin PATH --smoke --no-pin             # seconds: the CI check

The server is `peregrine --http3` (one worker) serving `apps.wt_apps:app` (benchmarks/apps/wt_apps.py: stream
chunks and datagrams echoed), pinned to CPU 0; this process is the client (benchmarks/wt_client.py: aioquic,
draft-02, through tests/e2e/wtclient_aioquic.py), pinned to CPU 1. A Python client saturates long before the
server does: the headline is the **server CPU per operation** (its whole process tree, from /proc); the rate
is what this client reached. CPU per operation still falls as the rate rises (one wakeup then serves several
messages): compare WebTransport and WebSocket at the same `--sessions`, and with `--sessions 1`. Modes:

- `stream-echo`: SESSIONS connections with one session each; each session opens bidirectional streams one
  after the other (`--streams-in-flight` at once), sends 64 bytes with FIN and reads the echo to the server's
  FIN: one operation is one stream, one round trip.
- `message-echo`: one long-lived bidirectional stream per session; 64-byte messages ping-pong on it (the
  equivalent of a WebSocket echo).
- `datagram`: each session sends datagrams of each `--datagram-sizes` as fast as its echoes come back
  (at most `--datagram-window` unanswered; when nothing comes back for 50 ms the unanswered ones count as
  lost and the window opens again), the app sends each back. Sent, handled by the app (its /stats), received
  back; server CPU per datagram handled.
- `idle`: for each `--idle` count N, a fresh server; its tree's RSS/PSS, then N sessions opened (each has one
  stream echoed) that then sit idle, and RSS/PSS again: added bytes per session. Twice: one session per
  connection, then `--sessions-per-connection` sessions per connection (the server's limit is 16).
- `ws-echo`: the same app's WebSocket echo over HTTP/1.1 (cleartext: ws_load.c has no TLS) with ws_load.c, as
  `run.py --protocols ws` runs it, with SESSIONS connections and 64-byte messages: server CPU per message.
- `ws-idle`: memory.py's idle WebSocket measurement (one echo each, then idle) on a fresh server, per count.

Every echo is compared byte for byte; any mismatch, error or session lost makes the exit status 1. Results
go to benchmarks/results/webtransport-<time>.json and a table to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import http.client
import importlib.util
import json
import math
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import harness
import memory
from harness import CLIENT_CPU, HOST, SERVER_CPU, App, Environment, log
from wt_client import (
    MESSAGE_SIZE,
    Tally,
    Window,
    check_echo,
    client_cpu_seconds,
    connected,
    datagram_echo,
    message_echo,
    percentile,
    stream_echo,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

E2E_DIR = harness.REPO_DIR / "tests" / "e2e"
#: The app: WebTransport and WebSocket echo at any path (ws_mode "echo": the harness's `ws` mode can load it).
APP = App("wt-echo", "GET", b"", b"", None, "apps.wt_apps:app", nginx=False, ws_mode="echo")
#: The server's bound on WebTransport sessions per connection (TRANSPORT.md, "WebTransport limit").
MAX_SESSIONS_PER_CONNECTION = 16
#: Seconds after the server starts (and after the idle sessions are open) before memory is read.
SETTLE_SECONDS = 2.0
#: Handshakes at once while opening idle sessions.
OPEN_GATE = 20
#: The client is the bottleneck when it uses this much of its core, or more CPU than the server (each has a core
#: of its own, so the one that needs more per operation saturates first).
CLIENT_BOUND = 0.9
SMOKE = {"warmup": 0.3, "duration": 1.0, "sessions": 2, "idle": "4", "sessions_per_connection": 4}


# -- the server ---------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Target:
    """How to start the WebTransport server: executable, certificate, CPU (None: unpinned), scratch directory."""

    executable: str
    tls: harness.TlsFiles
    cpu: int | None
    scratch: Path


def start_server(target: Target) -> harness.Running:
    """Start `peregrine --http3` (one worker) on the app and wait until a WebTransport echo works."""
    port = harness.free_port()
    argv = [
        target.executable, "--host", HOST, "--port", str(port), "--workers", "1", "--log-level", "warning",
        "--protocol", "asgi", "--python-path", str(harness.BENCH_DIR), "--http3",
        "--tls-cert", str(target.tls.cert), "--tls-key", str(target.tls.key),
        # Idle sessions must outlive the measurement (the default idle timeout is 30 s).
        "--quic-idle-timeout", "600000", "--keep-alive", "600000",
        APP.asgi or "",
    ]  # fmt: skip
    log_path = target.scratch / f"peregrine-{port}.log"
    environ = dict(os.environ, PYTHONPATH=str(harness.BENCH_DIR), PYTHONDONTWRITEBYTECODE="1")
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            harness.pinned(target.cpu, argv),
            cwd=harness.BENCH_DIR,
            env=environ,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    running = harness.Running(harness.SERVERS["peregrine-asgi"], APP, process, port, log_path)
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"peregrine exited with {process.returncode}: {harness.tail(log_path)}")
        try:
            app_stats(port)
            asyncio.run(asyncio.wait_for(connected(port, check_echo), 10))
        except (OSError, TimeoutError, http.client.HTTPException) as error:
            if time.monotonic() > deadline:
                harness.stop(running)
                raise RuntimeError(f"no WebTransport echo in 60 s: {error}; {harness.tail(log_path)}") from error
            time.sleep(0.2)
        except harness.ValidationError:
            harness.stop(running)
            raise
        else:
            return running


class AppStats:
    """The app's counters: GET /stats over HTTPS on the TCP port, on one keep-alive connection.

    Read at the edges of a measured interval, blocking the client's event loop on purpose: the client sends
    nothing while the counters are read, so they and the client's own counts cover the same operations
    (give or take what is in flight).
    """

    def __init__(self, port: int) -> None:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        self.connection = http.client.HTTPSConnection(HOST, port, timeout=10, context=context)

    def read(self) -> dict[str, int]:
        """The counters now."""
        self.connection.request("GET", "/stats")
        response = self.connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise harness.ValidationError(f"/stats answered {response.status}")
        stats: dict[str, int] = json.loads(body)
        return stats

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()


def app_stats(port: int) -> dict[str, int]:
    """The app's counters, on a connection of their own."""
    stats = AppStats(port)
    try:
        return stats.read()
    finally:
        stats.close()


def stats_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """What the app counted between two readings."""
    return {key: after[key] - before.get(key, 0) for key in after if key != "sessions_open"}


# -- one load mode --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Plan:
    """How long and how wide: warm-up and measured seconds, sessions, and per-mode knobs."""

    warmup: float
    duration: float
    sessions: int
    streams_in_flight: int
    datagram_window: int


async def run_load(
    running: harness.Running, plan: Plan, worker: Callable[[Any, str, Window, Tally], Awaitable[None]], tasks: int
) -> dict[str, Any]:
    """`plan.sessions` connections of one session, `tasks` copies of `worker` on each; the measured figures."""
    window, tally = Window(), Tally()
    ready = asyncio.Event()
    opened = 0

    async def on_session(session: Any) -> None:  # noqa: ANN401
        nonlocal opened
        opened += 1
        if opened == plan.sessions:
            ready.set()
        tag = f"s{session.session_id}c{id(session) % 10000}"
        runs = [worker(session, f"{tag}t{index}", window, tally) for index in range(tasks)]
        results = await asyncio.gather(*runs, return_exceptions=True)
        tally.errors.extend(f"{type(error).__name__}: {error}" for error in results if isinstance(error, BaseException))

    stats = AppStats(running.port)
    stats_first = stats.read()  # and the TLS handshake, before the measurement
    clients = [asyncio.ensure_future(connected(running.port, on_session)) for _ in range(plan.sessions)]
    await asyncio.wait_for(ready.wait(), 60)
    await asyncio.sleep(plan.warmup)
    stats_before = stats.read()
    server_before, client_before = harness.tree_cpu_seconds(running.pid), client_cpu_seconds()
    began = time.perf_counter()
    window.measuring = True
    await asyncio.sleep(plan.duration)
    window.measuring = False
    seconds = time.perf_counter() - began
    server_seconds = harness.cpu_between(server_before, harness.tree_cpu_seconds(running.pid))
    client_seconds = client_cpu_seconds() - client_before
    stats_after = stats.read()
    window.stopping = True
    finished = await asyncio.wait_for(asyncio.gather(*clients, return_exceptions=True), 60)
    stats_last = stats.read()
    stats.close()
    tally.errors.extend(f"{type(error).__name__}: {error}" for error in finished if isinstance(error, BaseException))
    return {
        "sessions": plan.sessions,
        "seconds": round(seconds, 3),
        "operations": tally.operations,
        "rate": tally.operations / seconds,
        "server_cpu_seconds": round(server_seconds, 3),
        "server_core": server_seconds / seconds,
        "client_core": client_seconds / seconds,
        "client_bound": client_seconds >= server_seconds or client_seconds / seconds >= CLIENT_BOUND,
        "p50_us": percentile(tally.latencies, 0.5),
        "p99_us": percentile(tally.latencies, 0.99),
        "mismatches": tally.mismatches,
        "errors": tally.errors[:10],
        "sent": tally.sent,
        "received": tally.received,
        "loss_timeouts": tally.written_off,
        "app": stats_delta(stats_before, stats_after),
        "run_totals": {
            "client_sent": tally.sent_total,
            "client_received": tally.received_total,
            **stats_delta(stats_first, stats_last),
        },
    }


def per_operation(result: dict[str, Any], count: int) -> None:
    """Add the CPU per operation (µs) of server and client, over `count` operations."""
    result["server_us_per_op"] = result["server_cpu_seconds"] * 1e6 / count if count else None
    result["client_us_per_op"] = result["client_core"] * result["seconds"] * 1e6 / count if count else None


def load_modes(running: harness.Running, plan: Plan, modes: list[str], sizes: list[int]) -> list[dict[str, Any]]:
    """Run the chosen load modes on one server, in order."""
    results: list[dict[str, Any]] = []
    if "stream-echo" in modes:
        result = {"mode": "stream-echo", **asyncio.run(run_load(running, plan, stream_echo, plan.streams_in_flight))}
        per_operation(result, result["operations"])
        results.append(result)
    if "message-echo" in modes:
        result = {"mode": "message-echo", **asyncio.run(run_load(running, plan, message_echo, 1))}
        per_operation(result, result["operations"])
        results.append(result)
    for size in sizes if "datagram" in modes else []:

        async def datagrams(session: Any, tag: str, window: Window, tally: Tally, size: int = size) -> None:  # noqa: ANN401
            await datagram_echo(session, tag, window, tally, size, plan.datagram_window)

        result = {"mode": f"datagram-{size}", **asyncio.run(run_load(running, plan, datagrams, 1))}
        handled = result["app"]["datagrams_received"]
        result["handled"] = handled
        result["echo_rate"] = result["rate"]
        result["rate"] = handled / result["seconds"]  # datagrams the server handled (received and sent back)
        # The client keeps its window full, so a datagram's round trip is mostly its wait in the window.
        result["p50_us"] = result["p99_us"] = None
        # Losses over the whole run (the measured interval's edges have a window of datagrams in flight).
        totals = result["run_totals"]
        result["lost_in"] = 1 - totals["datagrams_received"] / totals["client_sent"] if totals["client_sent"] else None
        echoed = totals["datagrams_sent"]
        result["lost_out"] = 1 - totals["client_received"] / echoed if echoed else None
        per_operation(result, handled)
        results.append(result)
    for result in results:
        log(describe(result))
    return results


def describe(result: dict[str, Any]) -> str:
    """One log line for a load result."""
    server = result.get("server_us_per_op")
    return (
        f"  {result['mode']:16} {result['rate']:9,.0f} op/s  server {server or 0:7.1f} µs/op "
        f"({result['server_core']:.0%} core)  client {result['client_core']:.0%}"
        f"{' (client-bound)' if result['client_bound'] else ''}  mismatches {result['mismatches']} "
        f"errors {len(result['errors'])}"
    )


# -- idle sessions ------------------------------------------------------------------------------------------------


async def hold_sessions(running: harness.Running, count: int, per_connection: int) -> dict[str, Any]:
    """Open `count` sessions (`per_connection` on each connection, one stream echoed on each), measure, close."""
    release = asyncio.Event()
    gate = asyncio.Semaphore(OPEN_GATE)
    opened: list[int] = []
    errors: list[str] = []
    connections = math.ceil(count / per_connection)

    async def connection(index: int) -> None:
        sessions = min(per_connection, count - index * per_connection)
        holding = False

        async def body(session: Any) -> None:  # noqa: ANN401
            nonlocal holding
            await check_echo(session)
            for _ in range(sessions - 1):
                await check_echo(session, await session.open_another_session("/bench"))
            holding = True
            gate.release()
            opened.append(sessions)
            await release.wait()

        await gate.acquire()
        try:
            await connected(running.port, body)
        except Exception as error:  # noqa: BLE001 - counted: every session must open
            errors.append(f"{type(error).__name__}: {error}")
            if not holding:
                gate.release()

    tasks = [asyncio.ensure_future(connection(index)) for index in range(connections)]
    deadline = time.monotonic() + 120
    while len(opened) + len(errors) < connections and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    await asyncio.sleep(SETTLE_SECONDS)
    rss, pss = harness.tree_memory_kib(running.pid)
    server_open = (await asyncio.to_thread(app_stats, running.port))["sessions_open"]
    release.set()
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
    return {"opened": sum(opened), "server_open": server_open, "rss_kib": rss, "pss_kib": pss, "errors": errors[:10]}


def idle_mode(target: Target, counts: list[int], per_connection: int) -> list[dict[str, Any]]:
    """Per count and layout, a fresh server: memory before and with the idle sessions."""
    results = []
    for count in counts:
        for layout in sorted({1, min(per_connection, count)}):
            running = start_server(target)
            try:
                time.sleep(SETTLE_SECONDS)
                before_rss, before_pss = harness.tree_memory_kib(running.pid)
                held = asyncio.run(hold_sessions(running, count, layout))
            finally:
                harness.stop(running)
            result = idle_result(f"wt-idle ({layout}/connection)", count, before_rss, before_pss, held)
            result["sessions_per_connection"] = layout
            results.append(result)
    return results


def idle_result(mode: str, count: int, rss: int, pss: int, held: dict[str, Any]) -> dict[str, Any]:
    """Bytes per idle session (or connection), from the memory before and while they were open."""
    open_now = held["server_open"]
    result = {
        "mode": mode,
        "count": count,
        "idle_rss_kib": rss,
        "idle_pss_kib": pss,
        "loaded_rss_kib": held["rss_kib"],
        "loaded_pss_kib": held["pss_kib"],
        "opened": held["opened"],
        "open": open_now,
        "rss_bytes_each": (held["rss_kib"] - rss) * 1024 / open_now if open_now else None,
        "pss_bytes_each": (held["pss_kib"] - pss) * 1024 / open_now if open_now else None,
        "errors": held["errors"],
        "mismatches": 0,
    }
    each = result["rss_bytes_each"]
    log(f"  {mode:24} {open_now:5} open: {each or 0:8.0f} B RSS each, errors {len(held['errors'])}")
    return result


# -- WebSocket beside it ------------------------------------------------------------------------------------------


def ws_echo(env: Environment, plan: Plan, cpu: int | None, client_cpu: int | None) -> dict[str, Any]:
    """The app's WebSocket echo under ws_load (plan.sessions connections, 64-byte messages): CPU per message."""
    with harness.serving(harness.SERVERS["peregrine-asgi"], APP, env, cpu, harness.WS) as running:
        marks: dict[str, dict[int, float]] = {}

        def on_measure() -> None:
            marks["before"] = harness.tree_cpu_seconds(running.pid)

        load = harness.Load(APP, running.port, harness.WS, connections=plan.sessions, cpu=client_cpu)
        measured = harness.run_ws_load(load, plan.duration, plan.warmup, on_measure, env, message_size=MESSAGE_SIZE)
        server_seconds = harness.cpu_between(marks["before"], harness.tree_cpu_seconds(running.pid))
        harness.validate_ws(APP, running.port)
    result: dict[str, Any] = {
        "mode": "ws-echo",
        "sessions": plan.sessions,
        "seconds": measured.seconds,
        "operations": measured.requests,
        "rate": measured.rps,
        "server_cpu_seconds": round(server_seconds, 3),
        "server_core": server_seconds / measured.seconds,
        "client_core": measured.client_cpu_fraction,
        "client_bound": measured.client_cpu_fraction * measured.seconds >= server_seconds
        or measured.client_cpu_fraction >= CLIENT_BOUND,
        "p50_us": measured.p50_us,
        "p99_us": measured.p99_us,
        "mismatches": 0,
        "errors": [f"{measured.errors} ws_load errors"] if measured.errors else [],
    }
    per_operation(result, measured.requests)
    log(describe(result))
    return result


def ws_idle(env: Environment, counts: list[int]) -> list[dict[str, Any]]:
    """memory.py's idle WebSocket measurement on the app, a fresh server per count."""
    results = []
    for count in counts:
        with harness.serving(harness.SERVERS["peregrine-asgi"], APP, env, None, harness.WS) as running:
            time.sleep(SETTLE_SECONDS)
            rss, pss = harness.tree_memory_kib(running.pid)
            measure = functools.partial(harness.tree_memory_kib, running.pid)
            made, still_open, (loaded_rss, loaded_pss) = asyncio.run(memory.hold(APP, running.port, count, measure))
        held: dict[str, Any] = {"opened": made, "server_open": still_open, "rss_kib": loaded_rss, "pss_kib": loaded_pss}
        held["errors"] = [] if made == count else [f"{count - made} WebSockets failed to open"]
        results.append(idle_result("ws-idle", count, rss, pss, held))
    return results


# -- report -------------------------------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def render(results: list[dict[str, Any]]) -> str:
    """Markdown tables: the load modes, the idle memory, and WebTransport against WebSocket."""
    head = "| mode | sessions | rate (op/s) | server CPU µs/op | server core | client CPU µs/op | client core |"
    lines = [head + " p50 / p99 µs | notes |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for result in results:
        if "rate" not in result:
            continue
        notes = []
        if result["client_bound"]:
            notes.append("client-bound")
        if result["mode"].startswith("datagram"):
            totals = result["run_totals"]
            notes.append(
                f"whole run: sent {totals['client_sent']:,}, app got {totals['datagrams_received']:,}, back "
                f"{totals['client_received']:,} (lost in {_fmt(100 * (result['lost_in'] or 0))}%, out "
                f"{_fmt(100 * (result['lost_out'] or 0))}%)"
            )
        lines.append(
            f"| {result['mode']} | {result['sessions']} | {_fmt(result['rate'], 0)} | "
            f"{_fmt(result['server_us_per_op'], 2)} | {result['server_core']:.0%} | "
            f"{_fmt(result['client_us_per_op'], 1)} | {result['client_core']:.0%} | "
            f"{_fmt(result['p50_us'], 0)} / {_fmt(result['p99_us'], 0)} | {'; '.join(notes)} |"
        )
    idle = [result for result in results if "count" in result]
    if idle:
        lines += [
            "",
            "| idle | count | open (server) | idle RSS MiB | RSS with them MiB | added RSS each | added PSS each |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        lines += [
            f"| {r['mode']} | {r['count']} | {r['open']} | {r['idle_rss_kib'] / 1024:.1f} | "
            f"{r['loaded_rss_kib'] / 1024:.1f} | {_fmt(r['rss_bytes_each'], 0)} B | {_fmt(r['pss_bytes_each'], 0)} B |"
            for r in idle
        ]
    lines += ["", *side_by_side(results)]
    return "\n".join(lines)


def side_by_side(results: list[dict[str, Any]]) -> list[str]:
    """WebTransport message echo against WebSocket echo (CPU per message), idle session against idle WebSocket."""
    by_mode = {result["mode"]: result for result in results if "rate" in result}
    rows = []
    wt, ws = by_mode.get("message-echo"), by_mode.get("ws-echo")
    if wt and ws:
        wt_cpu, ws_cpu = _fmt(wt["server_us_per_op"], 2), _fmt(ws["server_us_per_op"], 2)
        rows.append(f"| server CPU per 64-byte echo | {wt_cpu} µs | {ws_cpu} µs |")
    for count in sorted({r["count"] for r in results if "count" in r}):
        wt_idle = [r for r in results if r.get("count") == count and r["mode"].startswith("wt-idle")]
        ws_idle = [r for r in results if r.get("count") == count and r["mode"] == "ws-idle"]
        for session in wt_idle:
            other = _fmt(ws_idle[0]["rss_bytes_each"], 0) + " B" if ws_idle else "n/a"
            layout = f"{session['sessions_per_connection']} per connection"
            rows.append(f"| RSS per idle session ({layout}) vs per idle WebSocket, {count} of them | "
                        f"{_fmt(session['rss_bytes_each'], 0)} B | {other} |")  # fmt: skip
    if not rows:
        return []
    return ["| WebTransport vs WebSocket | WebTransport (HTTP/3, TLS) | WebSocket (HTTP/1.1, cleartext) |",
            "| --- | ---: | ---: |", *rows]  # fmt: skip


# -- main ---------------------------------------------------------------------------------------------------------

MODES = ("stream-echo", "message-echo", "datagram", "idle", "ws-echo", "ws-idle")


def missing_tools(modes: list[str], executable: str, pin: bool) -> list[str]:
    """What this run needs and does not have, one line each."""
    missing = []
    for module in ("aioquic", "pytest"):
        if importlib.util.find_spec(module) is None:
            missing.append(f"the Python module {module} (pip install -r tests/requirements-h3.txt pytest)")
    if shutil.which(executable) is None:
        missing.append(f"{executable} does not exist or is not executable (--bin)")
    if not harness.have("openssl") and not harness.have_trustme():
        missing.append("openssl (apt-get install openssl) or the trustme package: the server's certificate")
    if "ws-echo" in modes and not harness.have("cc"):
        missing.append("cc (apt-get install gcc): ws-echo compiles benchmarks/ws_load.c")
    if pin and not harness.have("taskset"):
        missing.append("taskset (util-linux), or --no-pin")
    return missing


def main(argv: list[str] | None = None) -> int:
    """Run the chosen modes; write the results JSON and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="the peregrine executable (a release build)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {','.join(MODES)}")
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds per load mode")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds before each")
    parser.add_argument("--sessions", type=int, default=8, help="connections (one session each) in the load modes")
    parser.add_argument("--streams-in-flight", type=int, default=1, help="stream-echo: streams at once per session")
    parser.add_argument("--datagram-sizes", default="64,1000")
    parser.add_argument("--datagram-window", type=int, default=64, help="unanswered datagrams per session")
    parser.add_argument("--idle", default="100,500", help="idle session counts")
    parser.add_argument("--sessions-per-connection", type=int, default=MAX_SESSIONS_PER_CONNECTION)
    parser.add_argument("--no-pin", action="store_true", help="do not pin server and client to CPUs 0 and 1")
    parser.add_argument("--smoke", action="store_true", help="seconds-long run of every mode (CI)")
    parser.add_argument("--output", type=Path, help="default: benchmarks/results/webtransport-<time>.json")
    arguments = parser.parse_args(argv)
    if arguments.smoke:
        for key, value in SMOKE.items():
            setattr(arguments, key, value)
    modes = arguments.modes.split(",")
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown:
        sys.exit(f"unknown modes: {', '.join(unknown)}")
    if not 1 <= arguments.sessions_per_connection <= MAX_SESSIONS_PER_CONNECTION:
        sys.exit(f"--sessions-per-connection: 1 to {MAX_SESSIONS_PER_CONNECTION} (the server's limit)")
    executable = str(Path(arguments.bin).absolute()) if "/" in arguments.bin else arguments.bin
    pin = not arguments.no_pin
    missing = missing_tools(modes, executable, pin)
    if missing:
        log("missing, nothing measured:\n" + "\n".join(f"    {line}" for line in missing))
        return 2
    sys.path.insert(0, str(E2E_DIR))
    return measure(arguments, modes, executable, pin)


def measure(arguments: argparse.Namespace, modes: list[str], executable: str, pin: bool) -> int:
    """Run `modes` (checked) as `arguments` say."""
    counts = [int(count) for count in str(arguments.idle).split(",")]
    sizes = [int(size) for size in arguments.datagram_sizes.split(",")]
    plan = Plan(
        arguments.warmup, arguments.duration, arguments.sessions, arguments.streams_in_flight, arguments.datagram_window
    )
    if pin:
        os.sched_setaffinity(0, {CLIENT_CPU})  # this process is the WebTransport client
    output = arguments.output or harness.RESULTS_DIR / f"webtransport-{time.strftime('%Y%m%d-%H%M%S')}.json"
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "executable": executable,
        "plan": dataclasses.asdict(plan),
        "pinned": pin,
        "load_average_start": list(os.getloadavg()),
    }
    memory.raise_file_limit(max(counts) * 2 + 256)  # a UDP socket per client connection, a TCP one per WebSocket
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-wt-") as scratch_name:
        scratch = Path(scratch_name)
        target = Target(executable, harness.make_certificate(scratch), SERVER_CPU if pin else None, scratch)
        env = Environment(peregrine=executable, keep_alive=600, ws_load=None)
        if "ws-echo" in modes:
            env.ws_load = harness.build_ws_load(scratch)
        if any(mode in modes for mode in ("stream-echo", "message-echo", "datagram")):
            running = start_server(target)
            try:
                results += load_modes(running, plan, modes, sizes)
            finally:
                harness.stop(running)
        if "idle" in modes:
            results += idle_mode(target, counts, arguments.sessions_per_connection)
        if "ws-echo" in modes:
            results.append(ws_echo(env, plan, target.cpu, CLIENT_CPU if pin else None))
        if "ws-idle" in modes:
            results += ws_idle(env, counts)
    report["load_average_end"] = list(os.getloadavg())
    report["results"] = results
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1) + "\n")
    log(f"results: {output}")
    sys.stdout.write(render(results) + "\n")
    failed = [r["mode"] for r in results if r["errors"] or r["mismatches"] or not healthy(r)]
    if failed:
        log(f"FAILED: {', '.join(failed)}")
        return 1
    return 0


def healthy(result: dict[str, Any]) -> bool:
    """Whether a result counted something: operations in a load mode, every session open in an idle one."""
    if "count" in result:
        return bool(result["open"] == result["count"] == result["opened"])
    return bool(result["operations"] > 0)


if __name__ == "__main__":
    sys.exit(main())
