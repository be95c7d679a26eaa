"""Throughput benchmark: peregrine beside its peers, pinned CPUs, interleaved rounds.

Usage: python3 benchmarks/run.py            # full run (sets up benchmarks/.venv on first use)
    python3 benchmarks/run.py --quick    # smoke: peregrine only, one short round, exit 1 on a bad response

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
import report
from harness import APPS, SERVERS, App, Environment, Server, log

if TYPE_CHECKING:
    from collections.abc import Mapping

#: What a full run measures, in this order; every server that serves an app runs it.
FULL_APPS = ["hello", "12k", "echo", "fastapi"]
QUICK_APPS = ["hello", "12k", "echo"]
QUICK_SERVERS = ["peregrine-wsgi", "peregrine-asgi"]
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
]


@dataclasses.dataclass
class Settings:
    """How long and how hard to load each server."""

    rounds: int
    duration: float
    warmup: float
    connections: int
    server_cpu: int | None
    client_cpu: int | None


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke mode: peregrine only, one short round")
    parser.add_argument("--rounds", type=int, help="interleaved rounds per server (default 3; quick 1)")
    parser.add_argument("--duration", type=float, help="seconds of measured load per round (default 10; quick 2)")
    parser.add_argument("--warmup", type=float, help="seconds of unmeasured load first (default 2; quick 1; 0: none)")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections (default 64)")
    parser.add_argument("--apps", help=f"comma-separated subset of {','.join(APPS)}")
    parser.add_argument("--servers", help=f"comma-separated subset of {','.join(SERVERS)}")
    parser.add_argument(
        "--peregrine",
        help="peregrine console script to run (default: the venv's; quick: "
        "$PEREGRINE_BENCH_BIN, else `peregrine` on PATH)",
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
        server_cpu=harness.SERVER_CPU if pin else None,
        client_cpu=harness.CLIENT_CPU if pin else None,
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
    if not (venv / "bin" / "granian").exists() or not (venv / "bin" / "uvicorn").exists():
        log("installing the peer servers (bjoern needs apt's libev-dev)")
        pip("install", "-r", str(harness.BENCH_DIR / "requirements.txt"))
    if reinstall_peregrine or not (venv / "bin" / "peregrine").exists():
        install_peregrine()


def install_peregrine() -> None:
    """Build the committed HEAD (`git archive`, so work in progress stays out) into the venv; note its revision."""
    revision = harness.command_output(["git", "-C", str(harness.REPO_DIR), "rev-parse", "HEAD"])
    log(f"building and installing peregrine {revision[:12]} (a release build: a few minutes)")
    with tempfile.TemporaryDirectory(prefix="peregrine-src-") as source:
        archive = subprocess.run(
            ["git", "-C", str(harness.REPO_DIR), "archive", "--format=tar", "HEAD"], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", source], input=archive, check=True)
        pip("install", "--force-reinstall", "--no-deps", source)
    (harness.VENV_DIR / PEREGRINE_REVISION).write_text(revision + "\n")


def check_tools(servers: list[Server]) -> None:
    """Stop early, with the apt command, if wrk or nginx is missing."""
    missing = ["wrk"] if not harness.have("wrk") else []
    if any(server.name == "nginx" for server in servers) and not harness.have("nginx"):
        missing.append("nginx-light")
    if missing:
        sys.exit(f"missing {', '.join(missing)}: apt-get install {' '.join(missing)} (bjoern also needs libev-dev)")


def measure_once(server: Server, app: App, env: Environment, settings: Settings) -> dict[str, object]:
    """Start `server`, validate, warm up, measure one round, validate again, stop. Failures are recorded."""
    record: dict[str, object] = {"server": server.name, "app": app.name, "started": time.time()}
    try:
        with harness.serving(server, app, env, settings.server_cpu) as running:
            harness.validate(app, running.port)
            if settings.warmup > 0:
                harness.run_wrk(app, running.port, settings.warmup, settings.connections, settings.client_cpu)
            before = harness.tree_cpu_seconds(running.pid)
            began = time.monotonic()
            wrk = harness.run_wrk(app, running.port, settings.duration, settings.connections, settings.client_cpu)
            wall = time.monotonic() - began
            cpu = harness.cpu_between(before, harness.tree_cpu_seconds(running.pid))
            harness.validate(app, running.port)
            record["processes"] = len(harness.descendants(running.pid))
    except (OSError, RuntimeError, harness.ValidationError) as error:
        record.update(ok=False, error=f"{type(error).__name__}: {error}")
        log(f"  {server.name:15} {app.name:8} FAILED: {error}")
        return record
    record.update(dataclasses.asdict(wrk))
    record.update(
        ok=wrk.non_2xx == 0,
        server_cpu_seconds=cpu,
        server_cpu_fraction=cpu / wall,
        cpu_us_per_request=cpu / wrk.requests * 1e6 if wrk.requests else None,
    )
    if wrk.non_2xx:
        record["error"] = f"{wrk.non_2xx} responses were not 2xx/3xx"
    log(
        f"  {server.name:15} {app.name:8} {wrk.rps:9.0f} req/s  {record['cpu_us_per_request'] or 0:6.1f} µs CPU/req  "
        f"p99 {wrk.p99_us / 1000:6.2f} ms  server CPU {cpu / wall:4.0%}  wrk CPU {wrk.wrk_cpu_fraction:4.0%}"
        + (f"  socket errors {wrk.errors}" if wrk.errors else "")
    )
    return record


def run_rounds(apps: list[App], servers: list[Server], env: Environment, settings: Settings) -> list[dict[str, object]]:
    """For each app, `rounds` interleaved rounds over its servers (the order rotates each round)."""
    records: list[dict[str, object]] = []
    for app in apps:
        contenders = [server for server in servers if server.serves(app)]
        for round_index in range(settings.rounds):
            shift = round_index % len(contenders) if contenders else 0
            order = contenders[shift:] + contenders[:shift]
            log(f"{app.name}: round {round_index + 1}/{settings.rounds}")
            for server in order:
                record = measure_once(server, app, env, settings)
                record["round"] = round_index + 1
                records.append(record)
    return records


def git_revision(quick: bool) -> dict[str, str]:
    """HEAD of the checkout (with "+dirty" if sources are modified), and the revision the venv's peregrine is of."""
    revision = harness.command_output(["git", "-C", str(harness.REPO_DIR), "rev-parse", "HEAD"])
    dirty = subprocess.run(
        ["git", "-C", str(harness.REPO_DIR), "diff", "--quiet", "HEAD", "--", "Sources", "python", "Package.swift"],
        check=False,
    ).returncode
    found = {"checkout": revision + ("+dirty" if dirty else "")}
    marker = harness.VENV_DIR / PEREGRINE_REVISION
    if not quick and marker.exists():
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


def versions(env: Environment, quick: bool) -> dict[str, str]:
    """Versions of Python, every server and wrk."""
    found: dict[str, str] = {
        "peregrine_cli": harness.command_output([env.peregrine, "--version"]),
        "wrk": harness.command_output(["wrk", "-v"]),
    }
    if harness.have("nginx"):
        found["nginx"] = harness.command_output(["nginx", "-v"])
    python = env.tool("python") if not quick else sys.executable
    found["python"] = harness.command_output([python, "-c", "import sys; print(sys.version)"])
    if not quick:
        listed = subprocess.run(
            [python, "-m", "pip", "list", "--format", "json"], capture_output=True, text=True, check=False
        ).stdout
        for package in json.loads(listed or "[]"):
            if package["name"].lower() in PACKAGES:
                found[package["name"].lower()] = package["version"]
    return found


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


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; return 1 if any response failed validation."""
    arguments = parse_arguments(argv)
    if arguments.setup or arguments.reinstall_peregrine or (not arguments.quick and not harness.VENV_DIR.exists()):
        setup_venv(arguments.reinstall_peregrine)
        if arguments.setup:
            return 0
    settings = settings_for(arguments)
    apps = [APPS[name] for name in choose(arguments.apps, QUICK_APPS if arguments.quick else FULL_APPS, APPS)]
    servers = [
        SERVERS[name]
        for name in choose(arguments.servers, QUICK_SERVERS if arguments.quick else list(SERVERS), SERVERS)
    ]
    check_tools(servers)
    env = Environment(peregrine=peregrine_path(arguments))
    result: dict[str, object] = {
        "kind": "quick" if arguments.quick else "full",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git_revision": git_revision(arguments.quick),
        "machine": machine(),
        "versions": versions(env, arguments.quick),
        "settings": dataclasses.asdict(settings),
    }
    began = time.monotonic()
    records = run_rounds(apps, servers, env, settings)
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
        log(f"FAILED {record['server']} {record['app']} round {record['round']}: {record.get('error')}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
