"""Markdown tables and target checks from the harness's results JSON.

Usage: python3 benchmarks/report.py [RUN.json] [MEMORY.json]   # default: the newest of each in benchmarks/results/
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
import sys
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"
#: wrk's single thread counts as saturated from this share of a core on.
WRK_SATURATED = 0.90
#: Below this share of its core, a server was held back by something else (wrk, or the machine's other work).
SERVER_SATURATED = 0.85
SERVER_ORDER = [
    "nginx",
    "peregrine-wsgi",
    "bjoern",
    "granian-wsgi",
    "gunicorn-sync",
    "peregrine-asgi",
    "uvicorn",
    "granian-asgi",
    "hypercorn",
]
APP_ORDER = ["hello", "12k", "echo", "fastapi"]

Record = dict[str, object]


def _number(record: Record, key: str) -> float:
    value = record.get(key)
    return float(value) if isinstance(value, int | float) else math.nan


def summarize(records: list[Record]) -> dict[str, dict[str, Record]]:
    """Per app and server: medians over the good rounds, the spread of req/s, failures and wrk saturation."""
    summary: dict[str, dict[str, Record]] = {}
    for app in dict.fromkeys(str(record["app"]) for record in records):
        for server in dict.fromkeys(str(record["server"]) for record in records if record["app"] == app):
            rounds = [record for record in records if record["app"] == app and record["server"] == server]
            good = [record for record in rounds if record.get("ok")]
            entry: Record = {"rounds": len(rounds), "failed": len(rounds) - len(good)}
            if good:
                rps = [_number(record, "rps") for record in good]
                median = statistics.median(rps)
                entry.update(
                    rps=median,
                    rps_min=min(rps),
                    rps_max=max(rps),
                    spread=(max(rps) - min(rps)) / median if median else math.nan,
                    cpu_us_per_request=statistics.median(_number(record, "cpu_us_per_request") for record in good),
                    p50_us=statistics.median(_number(record, "p50_us") for record in good),
                    p99_us=statistics.median(_number(record, "p99_us") for record in good),
                    server_cpu_fraction=statistics.median(_number(record, "server_cpu_fraction") for record in good),
                    wrk_cpu_fraction=statistics.median(_number(record, "wrk_cpu_fraction") for record in good),
                    socket_errors=sum(int(_number(record, "errors")) for record in good),
                )
                entry["wrk_saturated"] = float(entry["wrk_cpu_fraction"]) >= WRK_SATURATED  # type: ignore[arg-type]
            summary.setdefault(app, {})[server] = entry
    return summary


def _ordered(names: list[str], order: list[str]) -> list[str]:
    return sorted(names, key=lambda name: order.index(name) if name in order else len(order))


def render_table(summary: dict[str, dict[str, Record]]) -> str:
    """One markdown table: a row per app and server."""
    lines = [
        "| app | server | req/s (median) | spread | CPU µs/request | p50 ms | p99 ms | server CPU | wrk CPU | notes |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for app in _ordered(list(summary), APP_ORDER):
        for server in _ordered(list(summary[app]), SERVER_ORDER):
            entry = summary[app][server]
            if "rps" not in entry:
                lines.append(f"| {app} | {server} | failed | | | | | | | {entry['failed']} failed round(s) |")
                continue
            notes = []
            if entry.get("wrk_saturated"):
                notes.append("wrk-bound")
            if entry.get("failed"):
                notes.append(f"{entry['failed']} failed round(s)")
            if entry.get("socket_errors"):
                notes.append(f"{entry['socket_errors']} socket errors")
            lines.append(
                f"| {app} | {server} | {float(entry['rps']):,.0f} | {float(entry['spread']):.0%} "  # type: ignore[arg-type]
                f"| {float(entry['cpu_us_per_request']):.1f} | {float(entry['p50_us']) / 1000:.2f} "  # type: ignore[arg-type]
                f"| {float(entry['p99_us']) / 1000:.2f} | {float(entry['server_cpu_fraction']):.0%} "  # type: ignore[arg-type]
                f"| {float(entry['wrk_cpu_fraction']):.0%} | {', '.join(notes)} |"  # type: ignore[arg-type]
            )
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class Target:
    """peregrine's `server` must reach `factor` x the peer (in req/s, or in CPU per request when `cpu_only`)."""

    label: str
    app: str
    server: str
    peer: str
    factor: float
    cpu_only: bool = False


def throughput_targets() -> list[Target]:
    """Item 4's throughput targets."""
    targets = [
        Target("ASGI ≥ 2.0x uvicorn", "hello", "peregrine-asgi", "uvicorn", 2.0),
        Target("ASGI ≥ 1.4x granian ASGI", "hello", "peregrine-asgi", "granian-asgi", 1.4),
        Target("ASGI CPU/request ≤ ½ uvicorn's", "hello", "peregrine-asgi", "uvicorn", 2.0, cpu_only=True),
        Target("ASGI ≥ 50% of nginx", "hello", "peregrine-asgi", "nginx", 0.5),
        Target("WSGI ≥ 1.0x bjoern", "hello", "peregrine-wsgi", "bjoern", 1.0),
        Target("WSGI ≥ 2.0x granian WSGI", "hello", "peregrine-wsgi", "granian-wsgi", 2.0),
        Target("WSGI ≥ 15x gunicorn sync", "hello", "peregrine-wsgi", "gunicorn-sync", 15.0),
        Target("WSGI ≥ 85% of nginx", "hello", "peregrine-wsgi", "nginx", 0.85),
    ]
    for app in ("12k", "echo"):
        targets += [
            Target(f"{app}: WSGI ahead of {peer}", app, "peregrine-wsgi", peer, 1.0)
            for peer in ("bjoern", "granian-wsgi", "gunicorn-sync")
        ]
        targets += [
            Target(f"{app}: ASGI ahead of {peer}", app, "peregrine-asgi", peer, 1.0)
            for peer in ("uvicorn", "granian-asgi", "hypercorn")
        ]
    targets.append(Target("FastAPI ≥ 1.3x uvicorn", "fastapi", "peregrine-asgi", "uvicorn", 1.3))
    return targets


def judge(target: Target, summary: dict[str, dict[str, Record]]) -> tuple[str, str, str]:
    """(req/s ratio, CPU ratio, verdict) for one target. The CPU ratio is the peer's CPU/request over ours.

    req/s compares servers only when each kept its own core busy (server CPU ≥ 85%) and wrk's core did not
    saturate. Otherwise the rate measured the load generator or the other work on the machine, and the verdict
    rests on server CPU per request, which is what the request rate of a saturated core is the inverse of.
    """
    ours = summary.get(target.app, {}).get(target.server, {})
    theirs = summary.get(target.app, {}).get(target.peer, {})
    if "rps" not in ours or "rps" not in theirs:
        return "", "", "not measured"
    rps_ratio = float(ours["rps"]) / float(theirs["rps"])  # type: ignore[arg-type]
    cpu_ratio = float(theirs["cpu_us_per_request"]) / float(ours["cpu_us_per_request"])  # type: ignore[arg-type]
    figures = f"{rps_ratio:.2f}x", f"{cpu_ratio:.2f}x"
    if target.cpu_only:
        return *figures, "pass" if cpu_ratio >= target.factor else "FAIL"
    wrk_bound = bool(ours.get("wrk_saturated") or theirs.get("wrk_saturated"))
    starved = min(float(ours["server_cpu_fraction"]), float(theirs["server_cpu_fraction"])) < SERVER_SATURATED  # type: ignore[arg-type]
    if not wrk_bound and not starved:
        return *figures, "pass" if rps_ratio >= target.factor else "FAIL"
    reason = "wrk-bound" if wrk_bound else "a server core not saturated"
    verdict = "pass" if cpu_ratio >= target.factor else "FAIL"
    agrees = (rps_ratio >= target.factor) == (cpu_ratio >= target.factor)
    return *figures, f"{verdict} (on CPU/request: {reason}{'' if agrees else '; req/s disagrees'})"


def render_targets(summary: dict[str, dict[str, Record]]) -> str:
    """The throughput targets with their ratios and pass/fail."""
    lines = [
        "| target | req/s ratio | CPU/request ratio (peer ÷ ours) | verdict |",
        "| --- | ---: | ---: | --- |",
    ]
    for target in throughput_targets():
        rps_ratio, cpu_ratio, verdict = judge(target, summary)
        if verdict == "not measured":
            continue
        lines.append(f"| {target.label} | {rps_ratio} | {cpu_ratio} | {verdict} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def render_run(result: dict[str, object]) -> str:
    """The results table and the target checks of one run, with its machine and settings."""
    machine = result.get("machine", {})
    assert isinstance(machine, dict)  # noqa: S101 - the harness writes it so
    revision = result.get("git_revision")
    if isinstance(revision, dict):
        built = revision.get("peregrine_built_from")
        revision = built if built else f"(unknown build; checkout at {str(revision.get('checkout'))[:12]})"
    header = (
        f"Run of {result.get('date')}, peregrine {str(revision)[:12]}, {machine.get('nproc')} x "
        f"{machine.get('cpu_model')}, kernel {machine.get('kernel')}, load average "
        f"{_load(machine.get('load_average_start'))} at the start and {_load(machine.get('load_average_end'))} "
        f"at the end; settings {result.get('settings')}."
    )
    summary = result.get("summary")
    assert isinstance(summary, dict)  # noqa: S101
    return "\n\n".join(part for part in (header, render_table(summary), render_targets(summary)) if part)


def _load(value: object) -> str:
    return " / ".join(f"{float(item):.2f}" for item in value) if isinstance(value, list) else "?"


def render_memory(result: dict[str, object]) -> str:
    """The memory table and its two targets."""
    servers = result.get("servers", {})
    assert isinstance(servers, dict)  # noqa: S101
    lines = [
        (
            "| server | idle RSS MiB | idle PSS MiB | RSS with 1,000 idle connections MiB | added per connection "
            "| connections still open | processes |"
        ),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in _ordered(list(servers), SERVER_ORDER):
        entry = servers[name]
        if "error" in entry:
            lines.append(f"| {name} | failed: {entry['error']} | | | | | |")
            continue
        per = entry.get("per_connection_bytes")
        per_text = f"{per / 1024:.2f} KiB" if isinstance(per, int | float) else "n/a"
        lines.append(
            f"| {name} | {entry['idle_rss_kib'] / 1024:.1f} | {entry['idle_pss_kib'] / 1024:.1f} "
            f"| {entry['loaded_rss_kib'] / 1024:.1f} | {per_text} | {entry['open_connections']} "
            f"| {entry['processes']} |"
        )
    lines += ["", "| target | figures | verdict |", "| --- | --- | --- |"]
    ours, uvicorn = servers.get("peregrine-asgi", {}), servers.get("uvicorn", {})
    if "idle_rss_kib" in ours and "idle_rss_kib" in uvicorn:
        verdict = "pass" if ours["idle_rss_kib"] <= uvicorn["idle_rss_kib"] else "FAIL"
        lines.append(
            f"| ASGI idle RSS ≤ uvicorn's | {ours['idle_rss_kib'] / 1024:.1f} vs "
            f"{uvicorn['idle_rss_kib'] / 1024:.1f} MiB | {verdict} |"
        )
    for name in ("peregrine-wsgi", "peregrine-asgi"):
        entry = servers.get(name, {})
        per = entry.get("per_connection_bytes")
        if isinstance(per, int | float):
            verdict = "pass" if per <= 1024 and entry["open_connections"] >= 990 else "FAIL"
            lines.append(
                f"| {name}: 1,000 idle connections add ≤ 1 MiB | "
                f"{(entry['loaded_rss_kib'] - entry['idle_rss_kib']) / 1024:.2f} MiB, "
                f"{per:.0f} B each | {verdict} |"
            )
    return "\n".join(lines)


def newest(prefix: str) -> Path | None:
    """The newest results file whose name starts with `prefix`."""
    found = sorted(RESULTS_DIR.glob(f"{prefix}-*.json"))
    return found[-1] if found else None


def main(argv: list[str]) -> int:
    """Print the tables for the given (or newest) results files."""
    run_path = Path(argv[0]) if argv else newest("run")
    memory_path = Path(argv[1]) if len(argv) > 1 else newest("memory")
    parts = []
    if run_path is not None:
        parts.append(render_run(json.loads(run_path.read_text())))
    if memory_path is not None:
        parts.append(render_memory(json.loads(memory_path.read_text())))
    sys.stdout.write("\n\n".join(parts) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
