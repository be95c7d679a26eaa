"""Resident memory of each server (whole process tree) idle, and with 1,000 idle keep-alive connections.

Usage: python3 benchmarks/memory.py [--connections 1000] [--servers a,b] [--output FILE]
       python3 benchmarks/memory.py --websocket     # 1,000 idle WebSocket connections instead

The servers come from benchmarks/.venv, which `python3 benchmarks/run.py --setup` creates (nginx from apt).
If an executable is missing, nothing is started: the script says what to install and exits with 2. It exits
with 1 if no server could be measured, 0 otherwise (servers that failed are listed, and their error is in the
results file).

Each server serves the `hello` application. After start-up, 100 connections at once each make one request and
close (so that "idle" is a server that has served such a burst: the code requests run is resident, and the heap is
what the burst grew), and after a short settle the RSS and PSS of its process tree are read from /proc; then
1,000 connections each make one keep-alive request and stay open, idle, and the memory is read again. The
difference over the connections still open is the per-connection cost.

With --websocket, the ASGI servers of the WebSocket benchmark serve the `ws-echo` application instead, and each
of the 1,000 connections completes the WebSocket handshake, has one 32-byte text message echoed, and idles.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import harness
from harness import APPS, H1, HOST, SERVERS, WS, App, Environment, log

if TYPE_CHECKING:
    from collections.abc import Callable

#: Idle keep-alive timeout asked of servers that have one, so that the connections outlive the measurement.
KEEP_ALIVE_SECONDS = 300
SETTLE_SECONDS = 2.0
#: Connections opened at once (as many as `hold` opens at a time), each making one request, and closed before the
#: idle reading: "idle" is a server that has served such a burst and waits, with the code its requests ran resident
#: and the heap the burst grew, so that the per-connection figure counts what an idle connection holds and not the
#: first faults of that code or what the burst's requests left in the allocators.
WARM_UP_CONNECTIONS = 100
#: Connections `hold` has opening at a time.
OPEN_AT_ONCE = 100
OPEN_TIMEOUT_SECONDS = 30.0


async def _one(
    app: App, port: int, gate: asyncio.Semaphore
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    """Open a connection, make one request, read the whole response; keep the connection."""
    async with gate:
        try:
            reader, writer = await asyncio.open_connection(HOST, port)
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
    app: App, port: int, count: int, measure: Callable[[], tuple[int, int]]
) -> tuple[int, int, tuple[int, int]]:
    """Open `count` connections (one request each), measure while they idle; (made, still open, memory)."""
    gate = asyncio.Semaphore(OPEN_AT_ONCE)
    opener = _one_ws if app.websocket else _one
    tasks = [asyncio.ensure_future(opener(app, port, gate)) for _ in range(count)]
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


def measure_server(name: str, env: Environment, connections: int, websocket: bool = False) -> dict[str, object]:
    """Idle and loaded memory of one server on `hello` (or, with `websocket`, on `ws-echo`)."""
    app = APPS["ws-echo" if websocket else "hello"]
    with harness.serving(SERVERS[name], app, env, cpu=None, protocol=WS if websocket else H1) as running:
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


def missing_executables(names: list[str], env: Environment, websocket: bool) -> dict[str, str]:
    """The executable each chosen server would be started with, for those that do not exist (name: path)."""
    app = APPS["ws-echo" if websocket else "hello"]
    protocol = WS if websocket else H1
    missing: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as scratch:
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


def main(argv: list[str] | None = None) -> int:
    """Measure every (or the chosen) server; write the results JSON and print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--servers", help=f"comma-separated subset of {','.join(SERVERS)}")
    parser.add_argument("--peregrine", help="peregrine console script (default: the one in benchmarks/.venv)")
    parser.add_argument(
        "--websocket", action="store_true", help="idle WebSocket connections (ws-echo) on the ws mode's servers"
    )
    parser.add_argument(
        "--output", type=Path, help="default: benchmarks/results/memory-<time>.json (--websocket: ws-memory-<time>)"
    )
    arguments = parser.parse_args(argv)
    websocket = bool(arguments.websocket)
    default = [name for name, server in SERVERS.items() if server.speaks(WS)] if websocket else list(SERVERS)
    names = arguments.servers.split(",") if arguments.servers else default
    unknown = [name for name in names if name not in SERVERS or (websocket and not SERVERS[name].speaks(WS))]
    if unknown:
        sys.exit(f"not measured{' with --websocket' if websocket else ''}: {', '.join(unknown)}")
    peregrine = str(Path(arguments.peregrine).absolute()) if arguments.peregrine else None
    env = Environment(
        peregrine=peregrine or str(harness.VENV_DIR / "bin" / "peregrine"),
        venv=harness.VENV_DIR,
        keep_alive=KEEP_ALIVE_SECONDS,
    )
    missing = missing_executables(names, env, websocket)
    if missing:
        listed = "\n".join(f"    {name}: {executable}" for name, executable in missing.items())
        log(f"not installed, nothing measured:\n{listed}\nto install them:\n{how_to_install(missing, env)}")
        return 2
    raise_file_limit(arguments.connections * 2 + 256)
    result: dict[str, object] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "connections": arguments.connections,
        "mode": "websocket" if websocket else "http",
        "load_average_start": list(os.getloadavg()),
    }
    servers: dict[str, object] = {}
    for name in names:
        try:
            servers[name] = measure_server(name, env, arguments.connections, websocket)
        except (OSError, RuntimeError, harness.ValidationError) as error:
            servers[name] = {"error": str(error)[:300]}
            log(f"  {name:15} FAILED: {error}")
    result["servers"] = servers
    prefix = "ws-memory" if websocket else "memory"
    output = arguments.output or harness.RESULTS_DIR / f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}.json"
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
