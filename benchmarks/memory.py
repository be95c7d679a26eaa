"""Resident memory of each server (whole process tree) idle, and with 1,000 idle keep-alive connections.

Usage: python3 benchmarks/memory.py [--connections 1000] [--servers a,b] [--output FILE]
       python3 benchmarks/memory.py --app fastapi   # the ASGI servers on the FastAPI app instead of `hello`
       python3 benchmarks/memory.py --websocket     # 1,000 idle WebSocket connections instead
       python3 benchmarks/memory.py --h3            # 1,000 idle HTTP/3 connections (h3load --idle), and TLS's share

The servers come from benchmarks/.venv, which `python3 benchmarks/run.py --setup` creates (nginx from apt).
If an executable is missing, nothing is started: the script says what to install and exits with 2. It exits
with 1 if no server could be measured, 0 otherwise (servers that failed are listed, and their error is in the
results file).

Each server serves the `hello` application. After start-up, 100 connections at once each make one request and
close (so that "idle" is a server that has served such a burst: the code requests run is resident, and the heap is
what the burst grew), and after a short settle the RSS and PSS of its process tree are read from /proc; then
1,000 connections each make one keep-alive request and stay open, idle, and the memory is read again. The
difference over the connections still open is the per-connection cost. What it counts (for peregrine): the
worker's heap growth, which is the connection objects beyond the burst's (the first 100 of the 1,000 reuse the
objects the burst's connections left in the worker's connection table, so the figure is about 0.9 of a fresh
connection's object plus its peer addresses), and, for ASGI, 50-170 KiB that the Python allocator keeps from the
requests opened 100 at a time (not per connection: 52 KiB with 300 connections, 80-170 with 1,000 and 2,000), which is
what makes the ASGI figure vary by ~100 B between runs. Whether the burst runs before or not does not change it
(WSGI, December 2026: 648 KiB of heap growth without it, 652 with it): a per-connection figure that moved between
sessions moved with the code (the exchange layer put an `HTTPExchange` and more in the connection object:
593 bytes until the per-request state moved to a pooled object).

With --app fastapi, the ASGI servers only (a WSGI server named in --servers is an error) serve the harness's FastAPI
application instead (apps.fastapi_app:app, run.py's `fastapi` app), the same way: the burst's and the 1,000
connections' request is its `GET /`. The results go to fastapi-memory-<time>.json, with targets of their own
(peregrine-asgi's idle PSS against uvicorn's and granian-asgi's, issue 20 point 3).

With --websocket, the ASGI servers of the WebSocket benchmark serve the `ws-echo` application instead, and each
of the 1,000 connections completes the WebSocket handshake, has one 32-byte text message echoed, and idles.

With --h3, the HTTP/3 servers (peregrine with --http3, hypercorn, aioquic's example server, Caddy) serve `hello`
and `h3load --idle N --hold S` opens the N QUIC connections, completes one request on each and holds them idle;
as for HTTP/1.1, a burst of WARM_UP_CONNECTIONS such connections, closed, comes before the idle reading (the code
the first QUIC handshakes fault in is nobody's per-connection cost: for peregrine it moved the idle reading by
2.3-2.8 MiB, and the per-connection figure with 1,000 by 2.5-2.9 KiB, which the runs before 3 December 2026 count).
For peregrine the share of that which is TLS state is estimated as well: the same server started for HTTP/1.1
over TLS and for HTTP/1.1 in clear text, N idle keep-alive connections each (one request made); the difference
of the two per-connection costs is what a TLS connection's state (OpenSSL's SSL object and its buffers) adds,
and the HTTP/3 cost beyond it is the per-connection HTTP/3 cost minus that.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import resource
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import harness
from harness import APPS, H1, H3, HOST, PROTOCOLS, SERVERS, WS, App, Environment, log

if TYPE_CHECKING:
    import ssl
    from collections.abc import Callable

#: Idle keep-alive timeout asked of servers that have one, so that the connections outlive the measurement.
KEEP_ALIVE_SECONDS = 300
SETTLE_SECONDS = 2.0
#: How long the idle HTTP/3 connections stay quiet before the reading: peregrine gives back what a connection's busy
#: moments grew (buffers, the packet keys' libcrypto contexts) once it has been quiet for 2 s (TRANSPORT.md, "What an
#: idle HTTP/3 connection holds"), so the reading waits past that for the last connection to have its response; the
#: peers get the same wait.
H3_SETTLE_SECONDS = 5.0
#: Connections opened at once (as many as `hold` opens at a time), each making one request, and closed before the
#: idle reading: "idle" is a server that has served such a burst and waits, with the code its requests ran resident
#: and the heap the burst grew, so that the per-connection figure counts what an idle connection holds and not the
#: first faults of that code or what the burst's requests left in the allocators.
WARM_UP_CONNECTIONS = 100
#: Connections `hold` has opening at a time.
OPEN_AT_ONCE = 100
OPEN_TIMEOUT_SECONDS = 30.0


async def _one(
    app: App, port: int, gate: asyncio.Semaphore, tls: ssl.SSLContext | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    """Open a connection (over TLS with `tls`), make one request, read the whole response; keep the connection."""
    async with gate:
        try:
            if tls is None:
                reader, writer = await asyncio.open_connection(HOST, port)
            else:
                reader, writer = await asyncio.open_connection(HOST, port, ssl=tls, server_hostname=HOST)
            writer.write(harness.request_bytes(app, port))
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = await reader.readexactly(length)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return None
        if body != app.expected:
            writer.close()
            return None
        return reader, writer


async def _one_ws(
    app: App, port: int, gate: asyncio.Semaphore
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    """Open a WebSocket (handshake checked), have one message echoed; keep the connection."""
    async with gate:
        try:
            reader, writer = await asyncio.open_connection(HOST, port)
            request, accept = harness.ws_handshake(port)
            writer.write(request)
            await writer.drain()
            harness.ws_check_head((await reader.readuntil(b"\r\n\r\n"))[:-4], accept)
            message = harness.ws_message(0, "idle")
            writer.write(harness.ws_frame(message))
            await writer.drain()
            buffer = b""
            while (frame := harness.ws_parse(buffer)) is None:
                chunk = await reader.read(65536)
                if not chunk:
                    return None
                buffer += chunk
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, harness.ValidationError):
            return None
        if frame[1] != message or app.ws_mode != "echo":
            writer.close()
            return None
        return reader, writer


async def warm_up(app: App, port: int, count: int = WARM_UP_CONNECTIONS) -> int:
    """Open `count` connections at once, each making one request, then close them; the number that worked."""
    gate = asyncio.Semaphore(count)
    opener = _one_ws if app.websocket else _one
    finished = await asyncio.gather(*(opener(app, port, gate) for _ in range(count)))
    connections = [connection for connection in finished if connection is not None]
    for _, writer in connections:
        writer.close()
    for _, writer in connections:
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return len(connections)


def _still_open(connection: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> bool:
    """Whether the server has not closed this connection (the loop has seen no EOF on it)."""
    reader, writer = connection
    return not reader.at_eof() and not writer.is_closing()


async def hold(
    app: App, port: int, count: int, measure: Callable[[], tuple[int, int]], tls: ssl.SSLContext | None = None
) -> tuple[int, int, tuple[int, int]]:
    """Open `count` connections (one request each), measure while they idle; (made, still open, memory)."""
    gate = asyncio.Semaphore(OPEN_AT_ONCE)
    tasks = [
        asyncio.ensure_future(_one_ws(app, port, gate) if app.websocket else _one(app, port, gate, tls))
        for _ in range(count)
    ]
    await asyncio.wait(tasks, timeout=OPEN_TIMEOUT_SECONDS)
    for task in tasks:
        task.cancel()  # gunicorn's sync worker, for one, serves one connection at a time and can stall here
    finished = [task.result() for task in tasks if task.done() and not task.cancelled()]
    connections = [connection for connection in finished if connection is not None]
    await asyncio.sleep(SETTLE_SECONDS)
    memory = measure()
    await asyncio.sleep(0.1)
    still_open = sum(1 for connection in connections if _still_open(connection))
    writers = [writer for _, writer in connections]
    for writer in writers:
        writer.close()
    for writer in writers:
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return len(connections), still_open, memory


def measure_server(name: str, env: Environment, connections: int, app: App) -> dict[str, object]:
    """Idle and loaded memory of one server on `app` (`hello`, `fastapi`, or `ws-echo` over WebSockets)."""
    with harness.serving(SERVERS[name], app, env, cpu=None, protocol=WS if app.websocket else H1) as running:
        asyncio.run(warm_up(app, running.port))
        time.sleep(SETTLE_SECONDS)
        idle_rss, idle_pss = harness.tree_memory_kib(running.pid)
        processes = len(harness.descendants(running.pid))
        made, still_open, (loaded_rss, loaded_pss) = asyncio.run(
            hold(app, running.port, connections, lambda: harness.tree_memory_kib(running.pid))
        )
    entry: dict[str, object] = {
        "idle_rss_kib": idle_rss,
        "idle_pss_kib": idle_pss,
        "loaded_rss_kib": loaded_rss,
        "loaded_pss_kib": loaded_pss,
        "connections_made": made,
        "open_connections": still_open,
        "processes": processes,
        "per_connection_bytes": (loaded_rss - idle_rss) * 1024 / still_open if still_open else None,
    }
    per = entry["per_connection_bytes"]
    log(
        f"  {name:15} idle {idle_rss / 1024:6.1f} MiB RSS ({idle_pss / 1024:6.1f} PSS), with {still_open} open "
        f"{loaded_rss / 1024:6.1f} MiB" + (f", {per:.0f} B per connection" if isinstance(per, float) else "")
    )
    return entry


#: How long h3load may take to open the idle HTTP/3 connections (Python servers handshake slowly).
H3_READY_SECONDS = 180.0


def warm_up_h3(port: int, env: Environment, count: int = WARM_UP_CONNECTIONS) -> None:
    """`h3load --idle COUNT` for a moment: the HTTP/3 burst served and closed before the idle reading.

    As `warm_up` for HTTP/1.1 (see WARM_UP_CONNECTIONS): the first QUIC handshakes fault in the code they run
    (libcrypto's, the Swift runtime's, the worker's QUIC and HTTP/3 code), once, which is no idle connection's cost.
    Connections that fail are not an error here; the measured burst reports its own.
    """
    if env.h3load is None:
        raise ValueError("--h3 needs the compiled h3load (Environment.h3load)")
    argv = [str(env.h3load), "--idle", str(count), "--hold", "1", f"https://{HOST}:{port}/"]
    limit = H3_READY_SECONDS + 30
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=limit, check=False)


def hold_h3(port: int, count: int, env: Environment, measure: Callable[[], tuple[int, int]]) -> tuple[int, int, int]:
    """`h3load --idle COUNT --hold S` against `port`: measure once every connection has its response and idles.

    h3load prints `ready` on stderr when all `count` connections have completed their request; they then idle
    (QUIC PINGs only as the server's idle timeout needs) until the hold ends and h3load prints its JSON. Returns
    (connections that completed a request, RSS KiB, PSS KiB). Raises RuntimeError if they never got ready.
    """
    if env.h3load is None:
        raise ValueError("--h3 needs the compiled h3load (Environment.h3load)")
    hold_seconds = H3_SETTLE_SECONDS + 3
    argv = [str(env.h3load), "--idle", str(count), "--hold", f"{hold_seconds:g}", f"https://{HOST}:{port}/"]
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.PIPE)
        try:
            ready = _wait_for_ready(process, H3_READY_SECONDS)
            if not ready:
                raise RuntimeError(f"h3load --idle {count}: not ready in {H3_READY_SECONDS:.0f} s")
            time.sleep(H3_SETTLE_SECONDS)
            rss, pss = measure()
            process.wait(timeout=hold_seconds + 60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        output.seek(0)
        report_text = output.read().decode(errors="replace")
    result = harness.parse_h3load(report_text, 0.0)
    if result.errors:
        raise RuntimeError(f"h3load --idle {count}: {result.errors} connections failed")
    return result.requests, rss, pss


def _wait_for_ready(process: subprocess.Popen[bytes], limit: float) -> bool:
    """Whether `process` printed `ready` on stderr within `limit` seconds (False if it exited or time ran out)."""
    assert process.stderr is not None  # noqa: S101 - started with stderr=PIPE
    deadline = time.monotonic() + limit
    descriptor = process.stderr.fileno()
    pending = b""
    while time.monotonic() < deadline:
        readable, _, _ = select.select([descriptor], [], [], 0.1)
        if not readable:
            continue
        chunk = os.read(descriptor, 4096)
        if not chunk:
            return False  # h3load exited
        pending += chunk
        if b"ready\n" in pending:
            return True
    return False


def measure_h3_server(name: str, env: Environment, connections: int) -> dict[str, object]:
    """Idle memory of one HTTP/3 server on `hello`, and with `connections` idle HTTP/3 connections.

    For peregrine, also the per-connection cost of idle HTTP/1.1 connections over TLS and in clear text, whose
    difference estimates a TLS connection's state (see the module docstring).
    """
    app = APPS["hello"]
    with harness.serving(SERVERS[name], app, env, cpu=None, protocol=H3) as running:
        warm_up_h3(running.port, env)
        time.sleep(SETTLE_SECONDS)
        idle_rss, idle_pss = harness.tree_memory_kib(running.pid)
        processes = len(harness.descendants(running.pid))
        opened, loaded_rss, loaded_pss = hold_h3(
            running.port, connections, env, lambda: harness.tree_memory_kib(running.pid)
        )
    per = (loaded_rss - idle_rss) * 1024 / opened if opened else None
    entry: dict[str, object] = {
        "idle_rss_kib": idle_rss,
        "idle_pss_kib": idle_pss,
        "loaded_rss_kib": loaded_rss,
        "loaded_pss_kib": loaded_pss,
        "open_connections": opened,
        "processes": processes,
        "per_connection_bytes": per,
    }
    if name.startswith("peregrine-") and env.tls is not None:
        context = harness.client_context(env.tls, ["http/1.1"])
        tls_cost = _tcp_per_connection(name, env, connections, PROTOCOLS["h1-tls"], context)
        clear_cost = _tcp_per_connection(name, env, connections, H1, None)
        entry.update(h1_tls_per_connection_bytes=tls_cost, h1_per_connection_bytes=clear_cost)
        if tls_cost is not None and clear_cost is not None:
            entry["tls_state_bytes"] = tls_cost - clear_cost
            if isinstance(per, float):
                entry["beyond_tls_bytes"] = per - (tls_cost - clear_cost)
    log(
        f"  {name:15} idle {idle_rss / 1024:6.1f} MiB RSS ({idle_pss / 1024:6.1f} PSS), with {opened} idle HTTP/3 "
        f"{loaded_rss / 1024:6.1f} MiB"
        + (f", {per:.0f} B per connection" if isinstance(per, float) else "")
        + (f", TLS state ~{entry['tls_state_bytes']:.0f} B" if "tls_state_bytes" in entry else "")
    )
    return entry


def _tcp_per_connection(
    name: str, env: Environment, connections: int, protocol: harness.Protocol, tls: ssl.SSLContext | None
) -> float | None:
    """RSS bytes per idle HTTP/1.1 keep-alive connection (over TLS with `tls`) of `name` on `hello`."""
    app = APPS["hello"]
    with harness.serving(SERVERS[name], app, env, cpu=None, protocol=protocol) as running:
        time.sleep(SETTLE_SECONDS)
        idle_rss, _ = harness.tree_memory_kib(running.pid)
        _, still_open, (loaded_rss, _) = asyncio.run(
            hold(app, running.port, connections, lambda: harness.tree_memory_kib(running.pid), tls)
        )
    return (loaded_rss - idle_rss) * 1024 / still_open if still_open else None


def prepare_h3(env: Environment, names: list[str], scratch: Path, result: dict[str, object]) -> None:
    """The certificate, h3load and (if it is measured) aioquic's example server, for --h3."""
    env.tls = harness.make_certificate(scratch)
    try:
        env.h3load = harness.build_h3load(scratch)
    except (OSError, RuntimeError, subprocess.CalledProcessError) as error:
        sys.exit(f"--h3 cannot run: h3load did not build: {error}")
    if "aioquic" in names:
        env.aioquic_server = harness.fetch_aioquic_server(env)
    result["h3load"] = "benchmarks/h3load/ --idle N --hold S"
    result["tls_estimate"] = (
        "peregrine only: RSS per idle HTTP/1.1 keep-alive connection over TLS minus the same in clear text"
    )


def missing_executables(
    names: list[str], env: Environment, app: App, protocol: harness.Protocol | None = None
) -> dict[str, str]:
    """The executable each chosen server would be started with, serving `app`, for those that do not exist."""
    protocol = protocol or (WS if app.websocket else H1)
    missing: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as scratch:
        if protocol.tls and env.tls is None:  # only named in the command line: a placeholder path will do
            placeholder = Path(scratch) / "cert.pem"
            env = dataclasses.replace(env, tls=harness.TlsFiles(cert=placeholder, key=placeholder, ca=placeholder))
        if protocol.http3 and env.aioquic_server is None:
            env = dataclasses.replace(env, aioquic_server=Path(scratch) / "http3_server.py")
        for name in names:
            executable = harness.server_command(harness.Job(SERVERS[name], app, protocol), 0, env, Path(scratch))[0]
            if shutil.which(executable) is None:
                missing[name] = executable
    return missing


def how_to_install(missing: dict[str, str], env: Environment) -> str:
    """What to run so that the missing executables exist, one line each."""
    steps = []
    if any(Path(executable).is_relative_to(env.venv) for executable in missing.values()):
        steps.append(
            f"python3 benchmarks/run.py --setup    # creates {env.venv}: the peers and a release build of "
            "peregrine (or pass --peregrine PATH --servers peregrine-wsgi,peregrine-asgi)"
        )
    if "nginx" in missing:
        steps.append("apt-get install nginx-light")
    steps.extend(
        f"{executable} does not exist or is not executable (--peregrine)"
        for name, executable in missing.items()
        if name != "nginx" and not Path(executable).is_relative_to(env.venv)
    )
    return "\n".join(f"    {step}" for step in steps)


def raise_file_limit(needed: int) -> None:
    """Lift the soft limit on open files to the hard limit (servers inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < needed:
        sys.exit(f"need {needed} open files; raise the hard limit (ulimit -Hn)")


#: The applications --app chooses from: `hello` (every HTTP/1.1 server) and `fastapi` (the ASGI servers).
MEMORY_APPS = ("hello", "fastapi")


def chosen_app(app: str, websocket: bool, h3: bool) -> App:
    """The application measured: `ws-echo` with --websocket, else --app's (`fastapi` only over HTTP/1.1)."""
    if app != "hello" and (websocket or h3):
        sys.exit(f"--app {app} measures idle HTTP/1.1 keep-alive connections: not with --websocket or --h3")
    return APPS["ws-echo" if websocket else app]


def chosen_servers(servers: str | None, app: App, protocol: harness.Protocol) -> list[str]:
    """--servers (comma-separated), or every server of the mode that serves `app`; exits naming any it cannot run.

    Baseline builds (run.py --baseline) are never chosen by default. With --app fastapi that is the ASGI servers;
    a WSGI (or static) server named for it is an error, since it cannot serve an ASGI application.
    """
    flag = " with --websocket" if protocol.websocket else " with --h3" if protocol.http3 else ""
    default = [
        name
        for name, server in SERVERS.items()
        if server.speaks(protocol) and server.serves(app) and "baseline" not in name
    ]
    names = servers.split(",") if servers else default
    unknown = [name for name in names if name not in SERVERS or not SERVERS[name].speaks(protocol)]
    if unknown:
        sys.exit(f"not measured{flag}: {', '.join(unknown)}")
    cannot = [name for name in names if not SERVERS[name].serves(app)]
    if cannot:
        sys.exit(
            f"--app {app.name} is an ASGI application; {', '.join(cannot)} cannot serve it "
            f"(the servers that can: {', '.join(default)})"
        )
    return names


def results_prefix(app: App, h3: bool) -> str:
    """The results file's name before its time: `memory` for hello, its own prefix for every other measurement.

    report.py shows the newest `memory-*` file as the hello table, so a FastAPI run is `fastapi-memory-*` (as the
    WebSocket and HTTP/3 runs are `ws-memory-*` and `h3-memory-*`) and never hides the newest hello run.
    """
    if app.websocket:
        return "ws-memory"
    if h3:
        return "h3-memory"
    return "memory" if app.name == "hello" else f"{app.name}-memory"


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--servers", help=f"comma-separated subset of {','.join(SERVERS)}")
    parser.add_argument(
        "--app",
        choices=MEMORY_APPS,
        default="hello",
        help="the application served (default hello; fastapi: apps.fastapi_app:app on the ASGI servers only)",
    )
    parser.add_argument("--peregrine", help="peregrine console script (default: the one in benchmarks/.venv)")
    parser.add_argument(
        "--websocket", action="store_true", help="idle WebSocket connections (ws-echo) on the ws mode's servers"
    )
    parser.add_argument(
        "--h3",
        action="store_true",
        help="idle HTTP/3 connections (h3load --idle) on the HTTP/3 servers, and TLS's share",
    )
    parser.add_argument(
        "--output",
        type=Path,
        help=(
            "default: benchmarks/results/memory-<time>.json (--app fastapi: fastapi-memory-<time>, "
            "--websocket: ws-memory-<time>, --h3: h3-memory-<time>)"
        ),
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Measure every (or the chosen) server; write the results JSON and print the table."""
    arguments = parse_arguments(argv)
    websocket, h3 = bool(arguments.websocket), bool(arguments.h3)
    if websocket and h3:
        sys.exit("--websocket or --h3, not both")
    protocol = WS if websocket else H3 if h3 else H1
    app = chosen_app(str(arguments.app), websocket, h3)
    names = chosen_servers(arguments.servers, app, protocol)
    peregrine = str(Path(arguments.peregrine).absolute()) if arguments.peregrine else None
    env = Environment(
        peregrine=peregrine or str(harness.VENV_DIR / "bin" / "peregrine"),
        venv=harness.VENV_DIR,
        keep_alive=KEEP_ALIVE_SECONDS,
    )
    missing = missing_executables(names, env, app, protocol)
    if missing:
        listed = "\n".join(f"    {name}: {executable}" for name, executable in missing.items())
        log(f"not installed, nothing measured:\n{listed}\nto install them:\n{how_to_install(missing, env)}")
        return 2
    raise_file_limit(arguments.connections * 2 + 256)
    result: dict[str, object] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "connections": arguments.connections,
        "mode": "websocket" if websocket else "http3" if h3 else "http",
        "app": app.name,
        "load_average_start": list(os.getloadavg()),
    }
    servers: dict[str, object] = {}
    log(f"memory: {', '.join(names)} serving {app.name}, {arguments.connections:,} idle connections")
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as scratch:
        if h3:
            prepare_h3(env, names, Path(scratch), result)
        for name in names:
            try:
                if h3:
                    servers[name] = measure_h3_server(name, env, arguments.connections)
                else:
                    servers[name] = measure_server(name, env, arguments.connections, app)
            except (OSError, RuntimeError, harness.ValidationError) as error:
                servers[name] = {"error": str(error)[:300]}
                log(f"  {name:15} FAILED: {error}")
    result["servers"] = servers
    stamp = time.strftime("%Y%m%d-%H%M%S")
    output = arguments.output or harness.RESULTS_DIR / f"{results_prefix(app, h3)}-{stamp}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=1) + "\n")
    log(f"results: {output}")
    import report  # noqa: PLC0415 - only needed for the final table

    sys.stdout.write(report.render_memory(result) + "\n")
    failed = [name for name, entry in servers.items() if isinstance(entry, dict) and "error" in entry]
    if len(failed) == len(servers):
        log("nothing was measured: every server failed")
        return 1
    if failed:
        log(f"not measured (see above): {', '.join(failed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
