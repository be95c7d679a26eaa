"""Throughput benchmark: peregrine beside its peers, pinned CPUs, interleaved rounds.

Usage: python3 benchmarks/run.py            # full run (sets up benchmarks/.venv on first use)
    python3 benchmarks/run.py --quick    # smoke: peregrine only, one short round, exit 1 on a bad response
    python3 benchmarks/run.py --protocols h1-tls,h2c,h2-tls,tls-handshake   # the TLS and HTTP/2 modes
    python3 benchmarks/run.py --protocols ws     # WebSocket echo and broadcast (benchmarks/ws_load.c)
    python3 benchmarks/run.py --protocols h3,h3-bulk,h2-tls   # HTTP/3 (benchmarks/h3load/) beside HTTP/2 over TLS
    python3 benchmarks/run.py --open-loop   # h1, then fixed-rate latency at 50% of each server's h1 maximum

See BENCHMARKS.md for the method.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import harness
import open_loop
import report
from harness import APPS, PROTOCOLS, SERVERS, App, Environment, Job, Protocol, Server, log

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

#: What a full run measures, in this order; every server that serves an app runs it.
FULL_APPS = ["hello", "12k", "echo", "fastapi"]
QUICK_APPS = ["hello", "12k", "echo"]
#: peregrine-asgi-asyncio: the ASGI server on plain asyncio beside the default install's uvloop (harness.SERVERS).
QUICK_SERVERS = ["peregrine-wsgi", "peregrine-asgi", "peregrine-asgi-asyncio"]
#: The modes a run measures unless --protocols says otherwise: HTTP/1.1 in clear text, as before modes existed.
DEFAULT_PROTOCOLS = ["h1"]
#: The smoke test also runs HTTP/2 (h2c and over TLS) and WebSocket echo briefly, on peregrine's ASGI server,
#: and HTTP/3 `hello` on both peregrine servers and Caddy, and the open-loop client at half the ASGI server's h1 rate.
QUICK_PROTOCOLS = ["h1", "h2c", "h2-tls", "ws", "h3", "h1-openloop"]
QUICK_H2_SERVERS = ["peregrine-asgi"]
QUICK_H3_SERVERS = ["peregrine-wsgi", "peregrine-asgi", "caddy"]
#: Debian packages of the HTTP/3 modes' client side whose versions a result records (gtlsclient validates).
H3_DEBIAN_PACKAGES = [
    "ngtcp2-client",
    "libngtcp2-dev",
    "libngtcp2-crypto-gnutls-dev",
    "libnghttp3-dev",
    "libgnutls28-dev",
]
#: Apps of the HTTP/3 modes: many small requests (`h3`), and the 32 MiB download over 1 and 4 connections.
H3_APPS = ["hello", "12k", "echo"]
H3_BULK_APPS = ["bulk-1", "bulk-4"]
#: Apps of the modes other than h1 (the issue's HTTP/2 and TLS modes are about `hello`).
PROTOCOL_APPS = ["hello"]
#: Apps of the WebSocket mode, in a full run and in the smoke test.
WS_APPS = ["ws-echo", "ws-broadcast"]
QUICK_WS_APPS = ["ws-echo"]
#: Seconds of measured load and of warm-up of a quick HTTP/2 round, and of a quick WebSocket round.
QUICK_H2_DURATION = 1.0
QUICK_H2_WARMUP = 0.5
QUICK_WS_DURATION = 2.0
QUICK_WS_WARMUP = 0.5
#: File in the venv naming the revision its peregrine was built from.
PEREGRINE_REVISION = "peregrine-revision"
#: Packages whose versions a result records.
PACKAGES = [
    "peregrine",
    "uvicorn",
    "uvloop",
    "httptools",
    "granian",
    "gunicorn",
    "bjoern",
    "hypercorn",
    "fastapi",
    "starlette",
    "h2",
    "websockets",
    "aioquic",
]


@dataclasses.dataclass
class Settings:
    """How long and how hard to load each server."""

    rounds: int
    duration: float
    warmup: float
    connections: int
    #: Concurrent streams per HTTP/2 connection (h2load -m).
    streams: int
    #: Concurrent requests per HTTP/3 connection in the `h3` mode (h3load -m; `h3-bulk` has one per connection).
    h3_streams: int
    #: Downloads per connection in a round of `h3-bulk` (each 32 MiB).
    bulk_requests: int
    #: WebSocket broadcast: clients connected, and broadcasts in flight.
    broadcast_clients: int
    broadcast_window: int
    server_cpu: int | None
    client_cpu: int | None
    #: The open-loop mode's rate as a share of each server's closed-loop maximum.
    open_loop_load: float = open_loop.DEFAULT_LOAD


@dataclasses.dataclass
class Block:
    """One mode of a run: its apps and servers, and how long each round loads them."""

    protocol: Protocol
    apps: list[App]
    servers: list[Server]
    duration: float
    warmup: float


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke mode: peregrine only, one short round")
    parser.add_argument("--rounds", type=int, help="interleaved rounds per server (default 3; quick 1)")
    parser.add_argument("--duration", type=float, help="seconds of measured load per round (default 10; quick 2)")
    parser.add_argument("--warmup", type=float, help="seconds of unmeasured load first (default 2; quick 1; 0: none)")
    parser.add_argument("--connections", type=int, default=64, help="wrk/h2load connections (default 64)")
    parser.add_argument("--streams", type=int, default=10, help="h2load streams per connection (default 10)")
    parser.add_argument(
        "--h3-streams", type=int, default=4, help="h3load requests in flight per connection in h3 (default 4)"
    )
    parser.add_argument(
        "--bulk-requests", type=int, default=8, help="h3-bulk: 32 MiB downloads per connection in a round (default 8)"
    )
    parser.add_argument(
        "--broadcast-clients", type=int, default=100, help="ws-broadcast: clients connected (default 100)"
    )
    parser.add_argument(
        "--broadcast-window", type=int, default=8, help="ws-broadcast: broadcasts in flight at once (default 8)"
    )
    parser.add_argument(
        "--protocols",
        help=f"comma-separated modes, of {','.join(PROTOCOLS)} (default h1; quick: {','.join(QUICK_PROTOCOLS)})",
    )
    parser.add_argument(
        "--open-loop",
        action="store_true",
        help="add the h1-openloop mode (and h1 before it, whose maxima set its rates) to the chosen modes",
    )
    parser.add_argument(
        "--open-loop-load",
        type=float,
        default=open_loop.DEFAULT_LOAD,
        help="h1-openloop: the fixed rate as a share of the server's closed-loop maximum (default 0.5)",
    )
    parser.add_argument("--apps", help=f"comma-separated subset of {','.join(APPS)} (other modes than h1: hello)")
    parser.add_argument("--servers", help=f"comma-separated subset of {','.join(SERVERS)}")
    parser.add_argument(
        "--peregrine",
        help="peregrine console script to run (default: the venv's; quick: "
        "$PEREGRINE_BENCH_BIN, else `peregrine` on PATH)",
    )
    parser.add_argument(
        "--baseline",
        help="another peregrine executable (say, the build before a change) measured beside --peregrine in the "
        "same interleaved rounds, as peregrine-wsgi-baseline and peregrine-asgi-baseline",
    )
    parser.add_argument("--setup", action="store_true", help="create/refresh benchmarks/.venv and exit")
    parser.add_argument(
        "--reinstall-peregrine",
        action="store_true",
        help="rebuild and reinstall peregrine from this checkout into benchmarks/.venv first",
    )
    parser.add_argument("--no-pin", action="store_true", help="do not pin server and wrk to CPUs 0 and 1")
    parser.add_argument(
        "--output", type=Path, help="results JSON (default: benchmarks/results/run-<time>.json; quick: none)"
    )
    return parser.parse_args(argv)


def settings_for(arguments: argparse.Namespace) -> Settings:
    """Round count, durations and pinning from the command line."""
    quick = arguments.quick
    pin = not arguments.no_pin and (os.cpu_count() or 1) >= 2 and harness.have("taskset")
    return Settings(
        rounds=arguments.rounds or (1 if quick else 3),
        duration=arguments.duration or (2.0 if quick else 10.0),
        warmup=arguments.warmup if arguments.warmup is not None else (1.0 if quick else 2.0),
        connections=arguments.connections,
        streams=arguments.streams,
        h3_streams=arguments.h3_streams,
        bulk_requests=arguments.bulk_requests,
        broadcast_clients=arguments.broadcast_clients,
        broadcast_window=arguments.broadcast_window,
        server_cpu=harness.SERVER_CPU if pin else None,
        client_cpu=harness.CLIENT_CPU if pin else None,
        open_loop_load=arguments.open_loop_load,
    )


def pip(*arguments: str) -> None:
    """Run the venv's pip."""
    subprocess.run(
        [str(harness.VENV_DIR / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q", *arguments],
        check=True,
    )


def setup_venv(reinstall_peregrine: bool) -> None:
    """Create benchmarks/.venv with the peers and a release build of this checkout, as needed."""
    venv = harness.VENV_DIR
    if not (venv / "bin" / "python").exists():
        log(f"creating {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    peers_installed = all((venv / "bin" / peer).exists() for peer in ("granian", "uvicorn", "hypercorn"))
    if not peers_installed or not any(venv.glob("lib/python*/site-packages/aioquic")):  # hypercorn[h3]'s aioquic
        # bjoern compiles against libev; without its header pip fails deep in a compiler log.
        if not any(Path(d, "ev.h").exists() for d in ("/usr/include", "/usr/include/libev", "/usr/local/include")):
            raise SystemExit("bjoern needs libev's header: apt-get install libev-dev, then run --setup again")
        log("installing the peer servers")
        pip("install", "-r", str(harness.BENCH_DIR / "requirements.txt"))
    if reinstall_peregrine or not (venv / "bin" / "peregrine").exists():
        install_peregrine()


def install_peregrine() -> None:
    """Build the committed HEAD (`git archive`, so work in progress stays out) into the venv; note its revision.

    Installed as a user's `pip install .` installs it, dependencies included (uvloop where it has a wheel), so
    peregrine-asgi measures the default install; the old copy is removed first rather than force-reinstalled,
    which would reinstall the peers' shared dependencies too.
    """
    revision = harness.command_output(["git", "-C", str(harness.REPO_DIR), "rev-parse", "HEAD"])
    log(f"building and installing peregrine {revision[:12]} (a release build: a few minutes)")
    with tempfile.TemporaryDirectory(prefix="peregrine-src-") as source:
        archive = subprocess.run(
            ["git", "-C", str(harness.REPO_DIR), "archive", "--format=tar", "HEAD"], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", source], input=archive, check=True)
        pip("uninstall", "--yes", "peregrine")
        pip("install", source)
    (harness.VENV_DIR / PEREGRINE_REVISION).write_text(revision + "\n")


def check_tools(blocks: list[Block]) -> None:
    """Stop early, with the apt command, if a tool a mode needs is missing."""
    packages = {
        "wrk": "wrk",
        "h2load": "nghttp2-client",
        "curl": "curl",
        "openssl": "openssl",
        "cc": "gcc",
        "gtlsclient": "ngtcp2-client",
        "caddy": "caddy",
    }
    needed = set()
    for block in blocks:
        if block.protocol.http3:
            needed |= {"cc", "gtlsclient"}  # h3load is compiled; gtlsclient validates the responses
        elif block.protocol.open_loop:
            needed |= {"cc", "wrk"}  # openloop is compiled; wrk probes a maximum the run did not measure
        else:
            needed.add("cc" if block.protocol.websocket else block.protocol.client)
        if any(server.name == "caddy" for server in block.servers):
            needed.add("caddy")
        if block.protocol.http2:
            needed.add("curl")
        if block.protocol.tls and not harness.have_trustme():
            needed.add("openssl")  # makes the certificate (trustme, when importable, can instead)
        if block.protocol.new_connection_per_request and block.protocol.tls:
            needed.add("cc")
        if any(server.name == "nginx" for server in block.servers):
            needed.add("nginx")
    packages["nginx"] = "nginx-light"
    missing = [packages[tool] for tool in sorted(needed) if not harness.have(tool)]
    if missing:
        sys.exit(
            f"missing {', '.join(missing)}: apt-get install {' '.join(missing)} (bjoern also needs libev-dev; "
            "h3load libngtcp2-dev libngtcp2-crypto-gnutls-dev libnghttp3-dev libgnutls28-dev)"
        )


#: The share of a peer's HTTP/3 requests whose connection the peer closed that still leaves its round measured.
PEER_H3_ERROR_SHARE = 0.01


def measure_once(
    job: Job, env: Environment, settings: Settings, block: Block, maximum: float | None = None
) -> dict[str, object]:
    """Start the job's server, validate, warm up, measure one round, validate again, stop. Failures are recorded.

    The open-loop mode loads the server at `settings.open_loop_load` x `maximum` (its closed-loop req/s in this
    run), or x what a short wrk probe of the same server process finds when `maximum` is None.
    """
    server, app, protocol = job.server, job.app, job.protocol
    record: dict[str, object] = {
        "server": server.name,
        "app": app.name,
        "protocol": protocol.name,
        "client": protocol.client,
        "started": time.time(),
        "load_average": os.getloadavg()[0],
    }
    try:
        with harness.serving(server, app, env, settings.server_cpu, protocol) as running:
            record["tls"] = harness.check(protocol, app, running.port, env)
            load = load_for(app, protocol, running.port, settings)
            marks: dict[str, object] = {}

            def mark() -> None:
                marks["cpu"] = harness.tree_cpu_seconds(running.pid)
                marks["time"] = time.monotonic()

            if protocol.open_loop:
                rate = open_loop.choose_rate(load, env, maximum, settings.open_loop_load, record)
                result: harness.LoadResult = open_loop.run(load, rate, (block.duration, block.warmup), mark, env)
            else:
                result = run_load(load, block, mark, env)
            after = harness.tree_cpu_seconds(running.pid)
            if "time" not in marks:
                raise RuntimeError(f"{protocol.client} ended before its warm-up was over")
            wall = time.monotonic() - float(marks["time"])  # type: ignore[arg-type]
            cpu = harness.cpu_between(marks["cpu"], after)  # type: ignore[arg-type]
            harness.check(protocol, app, running.port, env)
            record["processes"] = len(harness.descendants(running.pid))
    except (OSError, RuntimeError, harness.ValidationError) as error:
        record.update(ok=False, error=f"{type(error).__name__}: {error}")
        log(f"  {protocol.name:13} {server.name:22} {app.name:8} FAILED: {error}")
        return record
    record.update(dataclasses.asdict(result))
    # wrk's socket errors are counted but do not fail a round (as before); h2load's failed requests do (and
    # ws_load's errors, though those end it with a failure first).
    failed = result.errors if result.client != "wrk" else 0
    # A peer whose HTTP/3 server drops a few connections under this load (hypercorn does: its connections
    # close under 256 requests in flight) is still measured, with its errors on record; peregrine never is.
    tolerated = (
        result.client == "h3load"
        and not server.name.startswith("peregrine")
        and result.non_2xx == 0
        and 0 < failed <= PEER_H3_ERROR_SHARE * max(result.requests, 1)
    )
    record.update(
        ok=result.non_2xx == 0 and (failed == 0 or tolerated),
        server_cpu_seconds=cpu,
        server_cpu_fraction=cpu / wall,
        cpu_us_per_request=cpu / result.requests * 1e6 if result.requests else None,
    )
    if result.body_bytes is not None and protocol.bulk:
        record.update(bulk_figures(result.body_bytes, result.seconds, cpu))
    if tolerated:
        record["tolerated_errors"] = failed
    elif result.non_2xx or failed:
        what = "2xx" if result.client == "h3load" else "2xx/3xx"
        record["error"] = f"{result.non_2xx} responses were not {what}, {failed} requests failed"
    latency = (
        f"p99 {result.p99_us / 1000:6.2f} ms"
        if result.p99_us is not None
        else f"mean {(result.mean_us or 0) / 1000:6.2f} ms"
    )
    unit = "msg" if protocol.websocket else "req"
    log(
        f"  {protocol.name:13} {server.name:22} {app.name:8} {result.rps:9.0f} {unit}/s  "
        f"{record['cpu_us_per_request'] or 0:6.1f} µs CPU/{unit}  {latency}  server CPU {cpu / wall:4.0%}  "
        f"{result.client} CPU {result.client_cpu_fraction:4.0%}"
        + (f"  errors {result.errors}" if result.errors else "")
    )
    return record


def run_load(load: harness.Load, block: Block, mark: Callable[[], None], env: Environment) -> harness.LoadResult:
    """One closed-loop round of the block's client (`mark` called when its warm-up is over)."""
    protocol = load.protocol
    if protocol.client == "h2load":
        return harness.run_h2load(load, block.duration, block.warmup, mark)
    if protocol.client == "h3load":
        return harness.run_h3load(load, block.duration, block.warmup, mark, env)
    if protocol.websocket:
        return harness.run_ws_load(load, block.duration, block.warmup, mark, env)
    if block.warmup > 0:
        harness.run_wrk(load, block.warmup, env)
    mark()
    return harness.run_wrk(load, block.duration, env)


def load_for(app: App, protocol: Protocol, port: int, settings: Settings) -> harness.Load:
    """How a round loads `app` in `protocol`'s mode: connections and requests (or messages) in flight on each."""
    if app.ws_mode == "broadcast":
        connections, streams = settings.broadcast_clients, settings.broadcast_window
    elif app.bulk_connections is not None:
        connections = app.bulk_connections
        return harness.Load(
            app, port, protocol, connections, 1, settings.client_cpu, connections * settings.bulk_requests
        )
    elif protocol.http3:
        connections, streams = settings.connections, settings.h3_streams
    else:
        connections, streams = settings.connections, settings.streams
    return harness.Load(app, port, protocol, connections, streams, settings.client_cpu)


def bulk_figures(body_bytes: int, seconds: float, cpu: float) -> dict[str, float | None]:
    """Throughput of a round in MiB/s and Gbit/s, server CPU ms per MiB, and Gbit/s per second of server CPU.

    `seconds` is the client's measured time (its body bytes are counted in it); `cpu` the server's CPU seconds
    over the same run. Gbit/s per core is the bytes over the server's CPU time: what a fully busy core moves.
    """
    mib = body_bytes / (1 << 20)
    per_second = body_bytes / seconds if seconds > 0 else 0.0
    return {
        "mib_per_s": per_second / (1 << 20),
        "gbit_per_s": per_second * 8 / 1e9,
        "cpu_ms_per_mib": cpu / mib * 1000 if mib else None,
        "gbit_per_s_per_core": body_bytes * 8 / 1e9 / cpu if cpu > 0 else None,
    }


def run_rounds(blocks: list[Block], env: Environment, settings: Settings) -> list[dict[str, object]]:
    """For each mode and app, `rounds` interleaved rounds over its servers (the order rotates each round)."""
    records: list[dict[str, object]] = []
    for block in blocks:
        for app in block.apps:
            contenders = [server for server in block.servers if server.serves(app)]
            for round_index in range(settings.rounds):
                shift = round_index % len(contenders) if contenders else 0
                order = contenders[shift:] + contenders[:shift]
                log(f"{block.protocol.name} {app.name}: round {round_index + 1}/{settings.rounds}")
                for server in order:
                    maximum = (
                        open_loop.maximum_rate(records, server.name, app.name) if block.protocol.open_loop else None
                    )
                    record = measure_once(Job(server, app, block.protocol), env, settings, block, maximum=maximum)
                    record["round"] = round_index + 1
                    records.append(record)
    return records


def plan(arguments: argparse.Namespace, settings: Settings) -> list[Block]:
    """The modes to run, each with its apps, servers and durations, from the command line."""
    quick = arguments.quick
    protocols = choose(arguments.protocols, QUICK_PROTOCOLS if quick else DEFAULT_PROTOCOLS, PROTOCOLS)
    protocols = open_loop.with_mode(protocols, added=arguments.open_loop)
    blocks = []
    for name in protocols:
        protocol = PROTOCOLS[name]
        h1 = name == "h1"
        if protocol.websocket:
            default_apps = QUICK_WS_APPS if quick else WS_APPS
        elif protocol.bulk:
            default_apps = H3_BULK_APPS
        elif protocol.http3:
            default_apps = PROTOCOL_APPS if quick else H3_APPS
        else:
            default_apps = (QUICK_APPS if quick else FULL_APPS) if h1 else PROTOCOL_APPS
            default_apps = open_loop.APPS if protocol.open_loop and not quick else default_apps
        if quick:
            default_servers = QUICK_SERVERS if h1 else QUICK_H3_SERVERS if protocol.http3 else QUICK_H2_SERVERS
        else:
            default_servers = open_loop.SERVERS if protocol.open_loop else list(SERVERS)
        default_servers = [server for server in default_servers if server not in harness.BASELINE_SERVERS]
        # WebSocket apps run in the ws mode only, bulk downloads in h3-bulk only, and the other apps elsewhere.
        apps = [
            APPS[app]
            for app in choose(arguments.apps, default_apps, APPS)
            if APPS[app].websocket == protocol.websocket
            and APPS[app].bulk == protocol.bulk
            and (APPS[app].method == "GET" or not protocol.open_loop)  # openloop sends GETs
        ]
        names = choose(arguments.servers, default_servers, SERVERS)
        # The baseline runs beside each peregrine server that runs, and only when one is given.
        if arguments.baseline:
            names += [base for base, ours in harness.BASELINE_SERVERS.items() if ours in names and base not in names]
        chosen = [SERVERS[server] for server in names]
        servers = [server for server in chosen if server.speaks(protocol)]
        if not servers or not apps:
            log(f"{name}: none of the chosen {'servers' if not servers else 'apps'} is run in this mode; skipped")
            continue
        short = quick and not h1 and arguments.duration is None
        short_duration, short_warmup = (
            (QUICK_WS_DURATION, QUICK_WS_WARMUP) if protocol.websocket else (QUICK_H2_DURATION, QUICK_H2_WARMUP)
        )
        blocks.append(
            Block(
                protocol,
                apps,
                servers,
                duration=short_duration if short else settings.duration,
                warmup=short_warmup if short and arguments.warmup is None else settings.warmup,
            )
        )
    return blocks


def git_revision(quick: bool, peregrine: str | None = None) -> dict[str, str]:
    """HEAD of the checkout (with "+dirty" if sources are modified), and the revision the venv's peregrine is of.

    With `peregrine` (a binary given on the command line) the venv's revision says nothing about it: its path and
    modification time are recorded instead.
    """
    revision = harness.command_output(["git", "-C", str(harness.REPO_DIR), "rev-parse", "HEAD"])
    dirty = subprocess.run(
        ["git", "-C", str(harness.REPO_DIR), "diff", "--quiet", "HEAD", "--", "Sources", "python", "Package.swift"],
        check=False,
    ).returncode
    found = {"checkout": revision + ("+dirty" if dirty else "")}
    if dirty:
        found["modified_sources"] = " ".join(
            harness.command_lines(
                [
                    "git",
                    "-C",
                    str(harness.REPO_DIR),
                    "diff",
                    "--name-only",
                    "HEAD",
                    "--",
                    "Sources",
                    "python",
                    "Package.swift",
                ]
            )
        )
    marker = harness.VENV_DIR / PEREGRINE_REVISION
    if peregrine is not None:
        modified = datetime.datetime.fromtimestamp(Path(peregrine).stat().st_mtime, datetime.UTC)
        found["peregrine_binary"] = f"{peregrine} (modified {modified.isoformat(timespec='seconds')})"
    elif not quick and marker.exists():
        found["peregrine_built_from"] = marker.read_text().strip()
    return found


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def machine() -> dict[str, object]:
    """What the results were measured on."""
    return {
        "nproc": os.cpu_count(),
        "cpu_model": cpu_model(),
        "kernel": platform.release(),
        "os": harness.command_output(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"]),
        "load_average_start": list(os.getloadavg()),
    }


def versions(env: Environment, quick: bool, blocks: list[Block]) -> dict[str, str]:
    """Versions of Python, every server, and the tools the modes use."""
    found: dict[str, str] = {"peregrine_cli": harness.command_output([env.peregrine, "--version"])}
    clients = {block.protocol.client for block in blocks}
    if "wrk" in clients:
        found["wrk"] = harness.command_output(["wrk", "-v"])
    if "h2load" in clients:
        found["h2load"] = harness.command_output(["h2load", "--version"])
        found["curl"] = harness.command_output(["curl", "--version"])
    if "openloop" in clients:
        found["openloop"] = "benchmarks/openloop/, " + harness.command_output(["cc", "--version"])
        found.setdefault("wrk", harness.command_output(["wrk", "-v"]))
    if "ws_load" in clients:
        found["ws_load"] = "benchmarks/ws_load.c, " + harness.command_output(["cc", "--version"])
    if "h3load" in clients:
        found["h3load"] = "benchmarks/h3load/, " + harness.command_output(["cc", "--version"])
        found["h3_libraries"] = ", ".join(
            harness.command_lines(["dpkg-query", "-W", "-f=${Package} ${Version}\n", *H3_DEBIAN_PACKAGES])
        )
    if harness.have("caddy") and any(server.name == "caddy" for block in blocks for server in block.servers):
        found["caddy"] = harness.command_output(["caddy", "version"])
    if any(block.protocol.tls for block in blocks):
        found["openssl"] = harness.command_output(["openssl", "version"])
    if harness.have("nginx") and any(server.name == "nginx" for block in blocks for server in block.servers):
        found["nginx"] = harness.command_output(["nginx", "-v"])
    python = env.tool("python") if not quick else sys.executable
    found["python"] = harness.command_output([python, "-c", "import sys; print(sys.version)"])
    found["peregrine_requires"] = peregrine_requires(env.peregrine)
    if not quick:
        listed = subprocess.run(
            [python, "-m", "pip", "list", "--format", "json"], capture_output=True, text=True, check=False
        ).stdout
        for package in json.loads(listed or "[]"):
            if package["name"].lower() in PACKAGES:
                found[package["name"].lower()] = package["version"]
    return found


#: Prints the installed peregrine's Requires-Dist, "; "-separated ("nothing": none; "not installed").
REQUIRES_PROBE = (
    "import importlib.metadata as m\n"
    "try:\n"
    "    print('; '.join(m.requires('peregrine') or []) or 'nothing')\n"
    "except m.PackageNotFoundError:\n"
    "    print('not installed')\n"
)


def peregrine_requires(peregrine: str) -> str:
    """What the measured peregrine's install declared it needs (uvloop, unless built free-threaded or opted out).

    Asked of the console script's interpreter (its shebang); "unknown" for a bare binary.
    """
    try:
        with Path(peregrine).open("rb") as head:
            first = head.readline()
    except OSError as error:
        return f"unknown ({error.strerror})"
    if not (first.startswith(b"#!") and b"python" in first):
        return "unknown (not a console script)"
    return harness.command_output([first[2:].decode().strip(), "-c", REQUIRES_PROBE])


def choose(names: str | None, default: list[str], known: Mapping[str, object]) -> list[str]:
    """A comma-separated selection, checked against the known names."""
    chosen = names.split(",") if names else default
    unknown = [name for name in chosen if name not in known]
    if unknown:
        sys.exit(f"unknown: {', '.join(unknown)} (known: {', '.join(known)})")
    return chosen


def peregrine_path(arguments: argparse.Namespace) -> str:
    """The peregrine console script to benchmark."""
    if arguments.peregrine:
        found = shutil.which(arguments.peregrine)
        if not found:
            sys.exit(f"no executable peregrine at {arguments.peregrine}")
        return str(Path(found).absolute())
    if arguments.quick:
        found = os.environ.get("PEREGRINE_BENCH_BIN") or shutil.which("peregrine")
        if not found:
            sys.exit("no peregrine: install it, or pass --peregrine PATH or set PEREGRINE_BENCH_BIN")
        return found
    return str(harness.VENV_DIR / "bin" / "peregrine")


def prepare(
    blocks: list[Block], env: Environment, settings: Settings, scratch: Path, result: dict[str, object]
) -> None:
    """What the modes need before the first round: certificate, shims and load generators, the aioquic script."""
    if any(block.protocol.tls for block in blocks):
        env.tls = harness.make_certificate(scratch)
        result["certificate"] = (
            "self-signed ECDSA P-256 (prime256v1), made by the openssl CLI for this run"
            if harness.have("openssl")
            else "ECDSA P-256 issued by a throwaway trustme CA for this run"
        )
    handshake = [block for block in blocks if block.protocol.new_connection_per_request and block.protocol.tls]
    if handshake:
        env.no_resume = harness.build_no_resume(scratch)
        try:
            result["handshake_check"] = harness.verify_full_handshakes(env, settings.client_cpu)
        except (OSError, RuntimeError, subprocess.SubprocessError) as error:
            sys.exit(f"the handshake mode cannot run: {error}")
        log(f"handshake client check: {result['handshake_check']}")
    if any(block.protocol.websocket for block in blocks):
        env.ws_load = harness.build_ws_load(scratch)
    if any(block.protocol.open_loop for block in blocks):
        try:
            env.openloop = open_loop.build(scratch)
        except (OSError, RuntimeError, subprocess.CalledProcessError) as error:
            sys.exit(f"the open-loop mode cannot run: openloop did not build: {error} {getattr(error, 'stderr', '')}")
    if any(block.protocol.http3 for block in blocks):
        try:
            env.h3load = harness.build_h3load(scratch)
        except (OSError, RuntimeError, subprocess.CalledProcessError) as error:
            detail = getattr(error, "stderr", b"") or b""
            sys.exit(f"the HTTP/3 modes cannot run: h3load did not build: {error} {detail.decode()[-1500:]}")
    if any(server.name == "aioquic" for block in blocks for server in block.servers):
        env.aioquic_server = harness.fetch_aioquic_server(env)
        result["aioquic_example"] = str(env.aioquic_server)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; return 1 if any response failed validation."""
    arguments = parse_arguments(argv)
    if arguments.setup or arguments.reinstall_peregrine or (not arguments.quick and not harness.VENV_DIR.exists()):
        setup_venv(arguments.reinstall_peregrine)
        if arguments.setup:
            return 0
    settings = settings_for(arguments)
    blocks = plan(arguments, settings)
    check_tools(blocks)
    baseline = None
    if arguments.baseline:
        baseline = shutil.which(arguments.baseline)
        if not baseline:
            sys.exit(f"no executable peregrine at {arguments.baseline}")
        baseline = str(Path(baseline).absolute())
    env = Environment(peregrine=peregrine_path(arguments), baseline=baseline)
    result: dict[str, object] = {
        "kind": "quick" if arguments.quick else "full",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git_revision": git_revision(arguments.quick, env.peregrine if arguments.peregrine else None),
        "machine": machine(),
        "versions": versions(env, arguments.quick, blocks),
        "settings": dataclasses.asdict(settings),
        "modes": [
            {
                "protocol": block.protocol.name,
                "apps": [app.name for app in block.apps],
                "servers": [server.name for server in block.servers],
                "duration": block.duration,
                "warmup": block.warmup,
            }
            for block in blocks
        ],
    }
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-tls-") as scratch:
        prepare(blocks, env, settings, Path(scratch), result)
        records = run_rounds(blocks, env, settings)
    result["records"] = records
    result["elapsed_seconds"] = round(time.monotonic() - began, 1)
    result["machine"]["load_average_end"] = list(os.getloadavg())  # type: ignore[index]
    result["summary"] = report.summarize(records)
    output = arguments.output or (
        None if arguments.quick else harness.RESULTS_DIR / f"run-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(result, indent=1) + "\n")
        log(f"results: {output}")
    sys.stdout.write(report.render_run(result) + "\n")
    failures = [record for record in records if not record.get("ok")]
    for record in failures:
        log(
            f"FAILED {record['protocol']} {record['server']} {record['app']} round {record['round']}: "
            f"{record.get('error')}"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
