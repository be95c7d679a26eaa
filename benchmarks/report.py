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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

RESULTS_DIR = Path(__file__).resolve().parent / "results"
#: The load generator's single thread (wrk, h2load) counts as saturated from this share of a core on.
CLIENT_SATURATED = 0.90
#: Below this share of its core, a server was held back by something else (wrk, or the machine's other work).
SERVER_SATURATED = 0.85
SERVER_ORDER = [
    "nginx",
    "peregrine-wsgi",
    "peregrine-wsgi-baseline",
    "bjoern",
    "granian-wsgi",
    "gunicorn-sync",
    "peregrine-asgi",
    "peregrine-asgi-baseline",
    "peregrine-asgi-asyncio",
    "uvicorn",
    "granian-asgi",
    "hypercorn",
    "aioquic",
    "caddy",
]
APP_ORDER = ["hello", "12k", "echo", "fastapi", "bulk-1", "bulk-4"]
PROTOCOL_ORDER = ["h1", "h1-tls", "h2c", "h2-tls", "tls-handshake", "ws", "h3", "h3-bulk"]
#: The HTTP/3 bulk-download apps, and how many connections share the download in each.
BULK_APPS = {"bulk-1": 1, "bulk-4": 4}
#: Issue 15's bulk target: at least this many Gbit/s per second of server CPU.
BULK_GBIT_PER_CORE = 2.0
#: What the request rate is in each mode.
RATE_MEANING = {"tls-handshake": "new TLS connections/s"}
#: The WebSocket apps, and what their rate counts.
WS_APP_ORDER = ["ws-echo", "ws-broadcast"]
WS_RATE_MEANING = {"ws-echo": "round trips/s", "ws-broadcast": "deliveries/s"}

Record = dict[str, object]


def _number(record: Record, key: str) -> float:
    value = record.get(key)
    return float(value) if isinstance(value, int | float) else math.nan


def _median(records: list[Record], key: str) -> float:
    """Median of a figure over rounds, leaving out rounds that lack it (nan if none has it)."""
    values = [value for value in (_number(record, key) for record in records) if not math.isnan(value)]
    return statistics.median(values) if values else math.nan


def protocol_of(record: Record) -> str:
    """The mode a record was measured in (results from before the protocol dimension are all h1)."""
    return str(record.get("protocol") or "h1")


def group_key(protocol: str, app: str) -> str:
    """Summary key of an app in a mode: the app's name for h1 (as before modes existed), else `mode:app`."""
    return app if protocol == "h1" else f"{protocol}:{app}"


def summarize(records: list[Record]) -> dict[str, dict[str, Record]]:
    """Per mode and app, and server: medians over the good rounds, the spread of req/s, failures, saturation."""
    summary: dict[str, dict[str, Record]] = {}
    groups = dict.fromkeys((protocol_of(record), str(record["app"])) for record in records)
    for protocol, app in groups:
        in_group = [record for record in records if protocol_of(record) == protocol and record["app"] == app]
        for server in dict.fromkeys(str(record["server"]) for record in in_group):
            rounds = [record for record in in_group if record["server"] == server]
            good = [record for record in rounds if record.get("ok")]
            entry: Record = {
                "protocol": protocol,
                "app": app,
                "client": str(rounds[0].get("client") or "wrk"),
                "rounds": len(rounds),
                "failed": len(rounds) - len(good),
            }
            if good:
                rps = [_number(record, "rps") for record in good]
                median = statistics.median(rps)
                for record in good:  # results from before the protocol dimension name the client's share so
                    record.setdefault("client_cpu_fraction", record.get("wrk_cpu_fraction"))
                entry.update(
                    rps=median,
                    rps_min=min(rps),
                    rps_max=max(rps),
                    spread=(max(rps) - min(rps)) / median if median else math.nan,
                    cpu_us_per_request=_median(good, "cpu_us_per_request"),
                    p50_us=_median(good, "p50_us"),
                    p99_us=_median(good, "p99_us"),
                    mean_us=_median(good, "mean_us"),
                    max_us=_median(good, "max_us"),
                    server_cpu_fraction=_median(good, "server_cpu_fraction"),
                    client_cpu_fraction=_median(good, "client_cpu_fraction"),
                    socket_errors=sum(int(_number(record, "errors")) for record in good),
                    mib_per_s=_median(good, "mib_per_s"),
                    gbit_per_s=_median(good, "gbit_per_s"),
                    cpu_ms_per_mib=_median(good, "cpu_ms_per_mib"),
                    gbit_per_s_per_core=_median(good, "gbit_per_s_per_core"),
                    negotiated=sorted({str(record["negotiated"]) for record in good if record.get("negotiated")}),
                )
                if protocol == OPEN_LOOP:
                    entry.update(open_loop_figures(good))
                entry["client_saturated"] = float(entry["client_cpu_fraction"]) >= CLIENT_SATURATED  # type: ignore[arg-type]
            summary.setdefault(group_key(protocol, app), {})[server] = entry
    return summary


def _ordered(names: list[str], order: list[str]) -> list[str]:
    return sorted(names, key=lambda name: order.index(name) if name in order else len(order))


def _notes(entry: Record) -> str:
    notes = []
    if entry.get("client_saturated"):
        notes.append(f"{entry['client']}-bound")
    if entry.get("failed"):
        notes.append(f"{entry['failed']} failed round(s)")
    if entry.get("socket_errors"):
        notes.append(f"{entry['socket_errors']} {'socket errors' if entry['client'] == 'wrk' else 'failed requests'}")
    return ", ".join(notes)


def _groups(summary: dict[str, dict[str, Record]], h1: bool) -> list[tuple[str, str, str]]:
    """(key, protocol, app) of the summary's groups, in mode then app order; only h1's or only the others."""
    found = []
    for key, servers in summary.items():
        first = next(iter(servers.values()), {})
        protocol, app = str(first.get("protocol", "h1")), str(first.get("app", key))
        if (protocol == "h1") == h1:
            found.append((key, protocol, app))

    def rank(item: tuple[str, str, str]) -> tuple[int, int]:
        _, protocol, app = item
        return (
            PROTOCOL_ORDER.index(protocol) if protocol in PROTOCOL_ORDER else len(PROTOCOL_ORDER),
            APP_ORDER.index(app) if app in APP_ORDER else len(APP_ORDER),
        )

    return sorted(found, key=rank)


def render_table(summary: dict[str, dict[str, Record]]) -> str:
    """One markdown table of the HTTP/1.1 cleartext (h1) mode: a row per app and server ("" if none)."""
    lines = [
        "| app | server | req/s (median) | spread | CPU µs/request | p50 ms | p99 ms | server CPU | wrk CPU | notes |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for key, _, app in _groups(summary, h1=True):
        for server in _ordered(list(summary[key]), SERVER_ORDER):
            entry = summary[key][server]
            if "rps" not in entry:
                lines.append(f"| {app} | {server} | failed | | | | | | | {entry['failed']} failed round(s) |")
                continue
            lines.append(
                f"| {app} | {server} | {float(entry['rps']):,.0f} | {float(entry['spread']):.0%} "  # type: ignore[arg-type]
                f"| {float(entry['cpu_us_per_request']):.1f} | {float(entry['p50_us']) / 1000:.2f} "  # type: ignore[arg-type]
                f"| {float(entry['p99_us']) / 1000:.2f} | {float(entry['server_cpu_fraction']):.0%} "  # type: ignore[arg-type]
                f"| {float(entry['client_cpu_fraction']):.0%} | {_notes(entry)} |"  # type: ignore[arg-type]
            )
    return "\n".join(lines) if len(lines) > 2 else ""


def _ms(entry: Record, key: str) -> str:
    value = _number(entry, key)
    return "?" if math.isnan(value) else f"{value / 1000:.2f}"


def render_protocol_table(summary: dict[str, dict[str, Record]]) -> str:
    """The TLS and HTTP/2 modes: a row per mode, app and server ("" if the run had none of them).

    wrk reports latency percentiles (p50 / p99), h2load only mean and maximum; the latency column says which.
    """
    lines = [
        (
            "| mode | app | server | req/s (median) | spread | CPU µs/request | latency ms | server CPU "
            "| client CPU | notes |"
        ),
        "| --- | --- | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |",
    ]
    for key, protocol, app in _groups(summary, h1=False):
        if protocol in {"ws", "h3-bulk", OPEN_LOOP}:
            continue  # render_ws_table, render_bulk_table, render_open_loop_table
        mode = f"{protocol} ({RATE_MEANING[protocol]})" if protocol in RATE_MEANING else protocol
        for server in _ordered(list(summary[key]), SERVER_ORDER):
            entry = summary[key][server]
            if "rps" not in entry:
                lines.append(f"| {mode} | {app} | {server} | failed | | | | | | {entry['failed']} failed round(s) |")
                continue
            if entry["client"] == "h2load":
                latency = f"mean {_ms(entry, 'mean_us')}, max {_ms(entry, 'max_us')}"
            else:
                latency = f"p50 {_ms(entry, 'p50_us')}, p99 {_ms(entry, 'p99_us')}"
            lines.append(
                f"| {mode} | {app} | {server} | {float(entry['rps']):,.0f} | {float(entry['spread']):.0%} "  # type: ignore[arg-type]
                f"| {float(entry['cpu_us_per_request']):.1f} | {latency} "  # type: ignore[arg-type]
                f"| {float(entry['server_cpu_fraction']):.0%} "  # type: ignore[arg-type]
                f"| {float(entry['client_cpu_fraction']):.0%} {entry['client']} | {_notes(entry)} |"  # type: ignore[arg-type]
            )
    return "\n".join(lines) if len(lines) > 2 else ""


def render_ws_table(summary: dict[str, dict[str, Record]]) -> str:
    """The WebSocket mode: a row per app and server ("" if the run had none).

    The rate is round trips per second (echo) or messages delivered to clients per second (broadcast); the CPU
    column is server CPU per round trip or per delivery; latency is of a round trip, or from sending a broadcast
    until the last client received it.
    """
    lines = [
        (
            "| app | server | rate (median) | spread | server CPU µs/message | latency p50 / p99 ms | server CPU "
            "| ws_load CPU | notes |"
        ),
        "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |",
    ]
    groups = [item for item in _groups(summary, h1=False) if item[1] == "ws"]
    groups.sort(key=lambda item: WS_APP_ORDER.index(item[2]) if item[2] in WS_APP_ORDER else len(WS_APP_ORDER))
    for key, _, app in groups:
        for server in _ordered(list(summary[key]), SERVER_ORDER):
            entry = summary[key][server]
            if "rps" not in entry:
                lines.append(f"| {app} | {server} | failed | | | | | | {entry['failed']} failed round(s) |")
                continue
            lines.append(
                f"| {app} | {server} | {float(entry['rps']):,.0f} {WS_RATE_MEANING.get(app, 'messages/s')} "  # type: ignore[arg-type]
                f"| {float(entry['spread']):.0%} | {float(entry['cpu_us_per_request']):.2f} "  # type: ignore[arg-type]
                f"| {_ms(entry, 'p50_us')} / {_ms(entry, 'p99_us')} "
                f"| {float(entry['server_cpu_fraction']):.0%} "  # type: ignore[arg-type]
                f"| {float(entry['client_cpu_fraction']):.0%} | {_notes(entry)} |"  # type: ignore[arg-type]
            )
    return "\n".join(lines) if len(lines) > 2 else ""


def render_bulk_table(summary: dict[str, dict[str, Record]]) -> str:
    """The HTTP/3 bulk downloads: throughput, server CPU per MiB and Gbit/s per server core ("" if none ran).

    Gbit/s per core is the throughput divided by the share of a core the server's process tree used: what one
    fully busy core would move at that cost.
    """
    lines = [
        (
            "| app | server | MiB/s (median) | Gbit/s | server CPU ms/MiB | Gbit/s per server core | server CPU "
            "| h3load CPU | notes |"
        ),
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    groups = [item for item in _groups(summary, h1=False) if item[1] == "h3-bulk"]
    for key, _, app in groups:
        for server in _ordered(list(summary[key]), SERVER_ORDER):
            entry = summary[key][server]
            if "rps" not in entry:
                lines.append(f"| {app} | {server} | failed | | | | | | {entry['failed']} failed round(s) |")
                continue
            lines.append(
                f"| {app} ({BULK_APPS.get(app, '?')} conn.) | {server} | {_number(entry, 'mib_per_s'):,.0f} "
                f"| {_number(entry, 'gbit_per_s'):.2f} | {_number(entry, 'cpu_ms_per_mib'):.2f} "
                f"| {_number(entry, 'gbit_per_s_per_core'):.2f} | {_number(entry, 'server_cpu_fraction'):.0%} "
                f"| {_number(entry, 'client_cpu_fraction'):.0%} | {_notes(entry)} |"
            )
    return "\n".join(lines) if len(lines) > 2 else ""


#: The open-loop mode (benchmarks/open_loop.py): fixed-rate latency at a share of each server's closed-loop maximum.
OPEN_LOOP = "h1-openloop"
#: Issue 20 point 4: at 64 connections (closed loop), our p99 no worse than any peer's, per app and interface.
LATENCY_PEERS = {
    ("hello", "peregrine-asgi"): ["uvicorn", "granian-asgi", "hypercorn"],
    ("hello", "peregrine-wsgi"): ["bjoern", "granian-wsgi", "gunicorn-sync"],
    ("fastapi", "peregrine-asgi"): ["uvicorn", "granian-asgi", "hypercorn"],
}


def open_loop_figures(good: list[Record]) -> Record:
    """An open-loop group's figures over its good rounds: medians of the rate and latencies, sums of the events."""
    return {
        "max_rps": _median(good, "max_rps"),
        "target_rate": _median(good, "target_rate"),
        "open_loop_load": _median(good, "open_loop_load"),
        "p90_us": _median(good, "p90_us"),
        "p999_us": _median(good, "p999_us"),
        "send_lag_p99_us": _median(good, "send_lag_p99_us"),
        "fallbacks": sum(int(_number(record, "fallbacks")) for record in good if "fallbacks" in record),
        "pipelining": all(record.get("pipelining", True) for record in good),
        "max_rps_source": sorted({str(record.get("max_rps_source")) for record in good}),
    }


def render_open_loop_table(summary: dict[str, dict[str, Record]]) -> str:
    """The open-loop mode: per app and server, the rate asked and achieved and the latency quantiles ("" if none).

    Latency is from each request's intended send time (wrk2's correction for coordinated omission). A large send
    lag (openloop's own lateness in writing requests) means the client, not the server, fell behind.
    """
    lines = [
        (
            "| app | server | closed-loop max req/s | rate asked | achieved | p50 ms | p90 ms | p99 ms | p99.9 ms "
            "| max ms | errors | server CPU | openloop CPU | notes |"
        ),
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for key, protocol, app in _groups(summary, h1=False):
        if protocol != OPEN_LOOP:
            continue
        for server in _ordered(list(summary[key]), SERVER_ORDER):
            entry = summary[key][server]
            if "rps" not in entry:
                lines.append(f"| {app} | {server} | failed | | | | | | | | | | | {entry['failed']} failed round(s) |")
                continue
            notes = [_notes(entry)] if _notes(entry) else []
            if not entry.get("pipelining", True):
                notes.append("no pipelining: one request at a time per connection")
            if entry.get("fallbacks"):
                notes.append(f"{entry['fallbacks']} connection(s) fell back to one request at a time")
            lag = _number(entry, "send_lag_p99_us")
            if not math.isnan(lag) and lag >= 1000:
                notes.append(f"client late: send lag p99 {lag / 1000:.1f} ms")
            if any("probe" in source for source in _strings(entry.get("max_rps_source"))):
                notes.append("max from a wrk probe")
            lines.append(
                f"| {app} | {server} | {_number(entry, 'max_rps'):,.0f} "
                f"| {_number(entry, 'target_rate'):,.0f} ({_number(entry, 'open_loop_load'):.0%}) "
                f"| {_number(entry, 'rps'):,.0f} | {_ms(entry, 'p50_us')} | {_ms(entry, 'p90_us')} "
                f"| {_ms(entry, 'p99_us')} | {_ms(entry, 'p999_us')} | {_ms(entry, 'max_us')} "
                f"| {int(_number(entry, 'socket_errors'))} | {_number(entry, 'server_cpu_fraction'):.0%} "
                f"| {_number(entry, 'client_cpu_fraction'):.0%} | {', '.join(notes)} |"
            )
    return "\n".join(lines) if len(lines) > 2 else ""


def render_latency_targets(summary: dict[str, dict[str, Record]]) -> str:
    """Issue 20 point 4: p99 at 64 connections (the closed-loop h1 rounds) no worse than any peer's ("" if none)."""
    lines = ["| target | our p99 ms | peer p99 ms | verdict |", "| --- | ---: | ---: | --- |"]
    for (app, ours), peers in LATENCY_PEERS.items():
        ours_p99 = _number(summary.get(app, {}).get(ours, {}), "p99_us")
        for peer in peers:
            peer_p99 = _number(summary.get(app, {}).get(peer, {}), "p99_us")
            if math.isnan(ours_p99) or math.isnan(peer_p99):
                continue
            verdict = "pass" if ours_p99 <= peer_p99 else "FAIL"
            lines.append(
                f"| {app}: {ours} p99 ≤ {peer}'s (closed loop) | {ours_p99 / 1000:.2f} | {peer_p99 / 1000:.2f} "
                f"| {verdict} |"
            )
    return "\n".join(lines) if len(lines) > 2 else ""


def render_side_by_side(summary: dict[str, dict[str, Record]]) -> str:
    """Per app, a server's req/s and CPU µs/request in every mode of the run, side by side ("" for one mode)."""
    protocols = [
        item
        for item in PROTOCOL_ORDER
        if any(entry.get("protocol") == item for group in summary.values() for entry in group.values())
    ]
    if len(protocols) < 2:
        return ""
    parts = []
    for app in APP_ORDER:
        keys = {protocol: group_key(protocol, app) for protocol in protocols if group_key(protocol, app) in summary}
        if len(keys) < 2:
            continue
        servers = _ordered(list(dict.fromkeys(name for key in keys.values() for name in summary[key])), SERVER_ORDER)
        header = " | ".join(f"{protocol} {RATE_MEANING.get(protocol, 'req/s')}, µs CPU" for protocol in keys)
        lines = [f"| {app}: server | {header} |", "| --- |" + " ---: |" * len(keys)]
        for server in servers:
            cells = []
            for key in keys.values():
                entry = summary[key].get(server, {})
                cells.append(
                    f"{float(entry['rps']):,.0f}, {float(entry['cpu_us_per_request']):.1f}"  # type: ignore[arg-type]
                    if "rps" in entry
                    else ("failed" if entry else "")
                )
            lines.append(f"| {server} | {' | '.join(cells)} |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


@dataclasses.dataclass(frozen=True)
class Target:
    """peregrine's `server` must reach `factor` x the peer (in req/s, or in CPU per request when `cpu_only`).

    `app` is a summary key (`group_key`): the app's name for h1, `mode:app` for the other modes. A `factor` of
    None is a comparison the issue sets no target for: its ratios are shown without a verdict.
    """

    label: str
    app: str
    server: str
    peer: str
    factor: float | None
    cpu_only: bool = False
    #: The peer's figures come from this summary key instead of `app` (a comparison across modes).
    peer_app: str | None = None


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
    # HTTP/2 (the HTTP/2 mode): hello over h2c and over TLS, 64 connections x 10 streams.
    for protocol in ("h2c", "h2-tls"):
        targets += [
            Target(f"{protocol}: ASGI ≥ 3x hypercorn", f"{protocol}:hello", "peregrine-asgi", "hypercorn", 3.0),
            Target(f"{protocol}: ASGI ≥ 1.2x granian", f"{protocol}:hello", "peregrine-asgi", "granian-asgi", 1.2),
        ]
    # WebSocket (item 7 of the WebSocket work): echo round trips and broadcast deliveries per second.
    for app in WS_APP_ORDER:
        targets += [
            Target(f"{app}: ASGI ≥ 1.5x uvicorn", f"ws:{app}", "peregrine-asgi", "uvicorn", 1.5),
            Target(f"{app}: ASGI ≥ 1.1x granian", f"ws:{app}", "peregrine-asgi", "granian-asgi", 1.1),
        ]
    targets += http3_targets()
    # TLS HTTP/1.1 and the handshake rate are recorded against the same peers, with no target.
    for protocol in ("h1-tls", "tls-handshake"):
        targets += [
            Target(f"{protocol}: ASGI against {peer}", f"{protocol}:hello", "peregrine-asgi", peer, None)
            for peer in ("uvicorn", "granian-asgi", "hypercorn")
        ]
    # A change against the build before it (run.py --baseline): within 3% of its CPU per request, or better.
    for key in ("hello", "12k", "echo", "fastapi", "h2c:hello", "h2-tls:hello", "h1-tls:hello", "h3:hello"):
        for interface in ("wsgi", "asgi"):
            ours = f"peregrine-{interface}"
            label = f"{key}: {interface.upper()} CPU/request within 3% of the baseline build"
            targets.append(Target(label, key, ours, f"{ours}-baseline", 0.97, cpu_only=True))
    return targets


def http3_targets() -> list[Target]:
    """Issue 15 item 7: HTTP/3 `hello` against hypercorn and Caddy, CPU against our own HTTP/2 over TLS, bulk."""
    targets = []
    for interface in ("asgi", "wsgi"):
        ours = f"peregrine-{interface}"
        name = interface.upper()
        targets += [
            Target(f"h3 hello: {name} ≥ 8x hypercorn", "h3:hello", ours, "hypercorn", 8.0),
            Target(f"h3 hello: {name} ≥ 1.0x Caddy", "h3:hello", ours, "caddy", 1.0),
            Target(f"h3 hello: {name} against aioquic's server", "h3:hello", ours, "aioquic", None),
        ]
        targets += [
            Target(f"h3 {app}: {name} against {peer}", f"h3:{app}", ours, peer, None)
            for app in ("12k", "echo")
            for peer in ("hypercorn", "aioquic", "caddy")
        ]
    # Server CPU per HTTP/3 hello ≤ 2.5x the same server's per HTTP/2-over-TLS hello, in the same run: the
    # peer's CPU over ours ≥ 1/2.5. The harness runs h2-tls on the ASGI server only.
    targets.append(
        Target(
            "h3 hello: ASGI CPU/request ≤ 2.5x its h2-tls (ratio ≥ 0.40x)",
            "h3:hello",
            "peregrine-asgi",
            "peregrine-asgi",
            1 / 2.5,
            cpu_only=True,
            peer_app="h2-tls:hello",
        )
    )
    # Bulk: at least Caddy's throughput per core, which is Caddy's CPU per MiB over ours (every request 32 MiB).
    for app in BULK_APPS:
        targets += [
            Target(
                f"{app}: {interface.upper()} ≥ 1.0x Caddy per core",
                f"h3-bulk:{app}",
                f"peregrine-{interface}",
                "caddy",
                1.0,
                cpu_only=True,
            )
            for interface in ("asgi", "wsgi")
        ]
        targets += [
            Target(
                f"{app}: {interface.upper()} against {peer}",
                f"h3-bulk:{app}",
                f"peregrine-{interface}",
                peer,
                None,
                cpu_only=True,
            )
            for interface in ("asgi", "wsgi")
            for peer in ("hypercorn", "aioquic")
        ]
    return targets


def render_bulk_targets(summary: dict[str, dict[str, Record]]) -> str:
    """Issue 15's absolute bulk target: ≥ 2 Gbit/s per server core, per bulk app and peregrine server."""
    lines = ["| target | Gbit/s per server core | verdict |", "| --- | ---: | --- |"]
    for app in BULK_APPS:
        for server in ("peregrine-asgi", "peregrine-wsgi"):
            entry = summary.get(f"h3-bulk:{app}", {}).get(server, {})
            per_core = _number(entry, "gbit_per_s_per_core")
            if math.isnan(per_core):
                continue
            verdict = "pass" if per_core >= BULK_GBIT_PER_CORE else "FAIL"
            lines.append(
                f"| {app}: {server} ≥ {BULK_GBIT_PER_CORE:g} Gbit/s per server core | {per_core:.2f} | {verdict} |"
            )
    return "\n".join(lines) if len(lines) > 2 else ""


def judge(target: Target, summary: dict[str, dict[str, Record]]) -> tuple[str, str, str]:
    """(req/s ratio, CPU ratio, verdict) for one target. The CPU ratio is the peer's CPU/request over ours.

    In the bulk downloads it is our Gbit/s per server core over the peer's: the same ratio, counted in bytes.

    req/s compares servers only when each kept its own core busy (server CPU ≥ 85%) and the client's (wrk's or
    h2load's) core did not saturate. Otherwise the rate measured the load generator or the other work on the
    machine, and the verdict rests on server CPU per request, which is what the request rate of a saturated core
    is the inverse of.
    """
    ours = summary.get(target.app, {}).get(target.server, {})
    theirs = summary.get(target.peer_app or target.app, {}).get(target.peer, {})
    if "rps" not in ours or "rps" not in theirs:
        return "", "", "not measured"
    rps_ratio = float(ours["rps"]) / float(theirs["rps"])  # type: ignore[arg-type]
    cpu_ratio = float(theirs["cpu_us_per_request"]) / float(ours["cpu_us_per_request"])  # type: ignore[arg-type]
    per_core = _number(ours, "gbit_per_s_per_core"), _number(theirs, "gbit_per_s_per_core")
    if not any(math.isnan(value) for value in per_core) and per_core[1] > 0:
        # Bulk downloads: bytes per server CPU second (a request in flight at the end of the window counts too).
        cpu_ratio = per_core[0] / per_core[1]
    figures = f"{rps_ratio:.2f}x", f"{cpu_ratio:.2f}x"
    if target.factor is None:
        return *figures, "(no target)"
    if target.cpu_only:
        return *figures, "pass" if cpu_ratio >= target.factor else "FAIL"
    client_bound = bool(ours.get("client_saturated") or theirs.get("client_saturated"))
    starved = min(float(ours["server_cpu_fraction"]), float(theirs["server_cpu_fraction"])) < SERVER_SATURATED  # type: ignore[arg-type]
    if not client_bound and not starved:
        return *figures, "pass" if rps_ratio >= target.factor else "FAIL"
    reason = f"{ours.get('client', 'wrk')}-bound" if client_bound else "a server core not saturated"
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
        binary = revision.get("peregrine_binary")
        checkout = str(revision.get("checkout"))
        if built:
            revision = str(built)[:12]
        elif binary:
            revision = f"{binary}, checkout at {checkout[:12]}{'+dirty' if checkout.endswith('+dirty') else ''}"
        else:
            revision = f"(unknown build; checkout at {checkout[:12]})"
    else:
        revision = str(revision)[:12]
    header = (
        f"Run of {result.get('date')}, peregrine {revision}, {machine.get('nproc')} x "
        f"{machine.get('cpu_model')}, kernel {machine.get('kernel')}, load average "
        f"{_load(machine.get('load_average_start'))} at the start and {_load(machine.get('load_average_end'))} "
        f"at the end; settings {result.get('settings')}."
    )
    records = result.get("records")
    # Summarised afresh, so that results written before the protocol dimension render the same way.
    summary = summarize(records) if isinstance(records, list) else result.get("summary")
    assert isinstance(summary, dict)  # noqa: S101
    notes = []
    check = result.get("handshake_check")
    if isinstance(check, dict):
        notes.append(
            f"Handshake client check: {check.get('full')} full and {check.get('resumed')} resumed TLS handshakes "
            "against a server that resumes whatever session a client offers."
        )
    negotiated = sorted(
        {
            f"{entry['protocol']} {server}: {', '.join(_strings(entry['negotiated']))}"
            for group in summary.values()
            for server, entry in group.items()
            if entry.get("negotiated")
        }
    )
    if negotiated:
        notes.append("Negotiated (as the validation client or h2load reported): " + "; ".join(negotiated) + ".")
    parts = (
        header,
        " ".join(notes),
        render_table(summary),
        render_protocol_table(summary),
        render_ws_table(summary),
        render_bulk_table(summary),
        render_open_loop_table(summary),
        render_side_by_side(summary),
        render_targets(summary),
        render_bulk_targets(summary),
        render_latency_targets(summary),
    )
    return "\n\n".join(part for part in parts if part)


def _strings(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else [str(value)]


def _load(value: object) -> str:
    return " / ".join(f"{float(item):.2f}" for item in value) if isinstance(value, list) else "?"


def _kib(value: object) -> str:
    return f"{value / 1024:.2f} KiB" if isinstance(value, int | float) else "n/a"


def _mib(entry: dict[str, object], key: str) -> str:
    return f"{_number(entry, key) / 1024:.1f}"


def _server_table(
    servers: dict[str, dict[str, object]], columns: list[str], cells: Callable[[dict[str, object]], list[str]]
) -> list[str]:
    """A memory table's lines: a row per server (in SERVER_ORDER) with `cells` under `columns`, or its error."""
    lines = ["| server | " + " | ".join(columns) + " |", "| --- |" + " ---: |" * len(columns)]
    for name in _ordered(list(servers), SERVER_ORDER):
        entry = servers[name]
        if "error" in entry:
            lines.append(f"| {name} | failed: {entry['error']} |" + " |" * (len(columns) - 1))
        else:
            lines.append("| " + " | ".join([name, *cells(entry)]) + " |")
    return lines


def render_memory(result: dict[str, object]) -> str:
    """The memory table of the app measured, with its targets, or the WebSocket or HTTP/3 one.

    The app is the file's `app` (`hello` in files older than memory.py's --app).
    """
    servers = result.get("servers", {})
    assert isinstance(servers, dict)  # noqa: S101
    if result.get("mode") == "websocket":
        return render_ws_memory(servers, int(str(result.get("connections", 1000))))
    if result.get("mode") == "http3":
        return render_h3_memory(servers, int(str(result.get("connections", 1000))))
    app = str(result.get("app", "hello"))
    lines = [
        (
            f"Memory, app `{app}`: each server's process tree idle (after a burst of 100 requests) and with "
            f"{int(str(result.get('connections', 1000))):,} idle keep-alive connections."
        ),
        "",
    ]
    lines += _server_table(
        servers,
        ["idle RSS MiB", "idle PSS MiB", "RSS with 1,000 idle connections MiB", "added per connection",
         "connections still open", "processes"],
        lambda entry: [_mib(entry, "idle_rss_kib"), _mib(entry, "idle_pss_kib"), _mib(entry, "loaded_rss_kib"),
                       _kib(entry.get("per_connection_bytes")), str(entry["open_connections"]),
                       str(entry["processes"])],
    )  # fmt: skip
    lines += ["", "| target | figures | verdict |", "| --- | --- | --- |"]
    lines += [_memory_target_row(target, servers) for target in memory_targets(app) if _measured(target, servers)]
    if app != "hello":
        return "\n".join(lines)
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


@dataclasses.dataclass(frozen=True)
class MemoryTarget:
    """Ours idle `key` (idle_rss_kib or idle_pss_kib) at most `factor` times the peer's."""

    label: str
    key: str
    ours: str
    peer: str
    factor: float = 1.0


def memory_targets(app: str) -> list[MemoryTarget]:
    """Issue 20 point 3's idle-memory targets for `app`.

    hello: RSS ≤ uvicorn's and PSS ≤ 0.9x uvicorn's; FastAPI: PSS below both uvicorn's and granian's.
    """
    if app == "fastapi":
        return [
            MemoryTarget("peregrine-asgi idle PSS ≤ uvicorn's", "idle_pss_kib", "peregrine-asgi", "uvicorn"),
            MemoryTarget("peregrine-asgi idle PSS ≤ granian-asgi's", "idle_pss_kib", "peregrine-asgi", "granian-asgi"),
        ]
    if app == "hello":
        return [
            MemoryTarget("ASGI idle RSS ≤ uvicorn's", "idle_rss_kib", "peregrine-asgi", "uvicorn"),
            MemoryTarget("ASGI idle PSS ≤ 0.9x uvicorn's", "idle_pss_kib", "peregrine-asgi", "uvicorn", 0.9),
        ]
    return []


def _measured(target: MemoryTarget, servers: dict[str, dict[str, object]]) -> bool:
    return target.key in servers.get(target.ours, {}) and target.key in servers.get(target.peer, {})


def _memory_target_row(target: MemoryTarget, servers: dict[str, dict[str, object]]) -> str:
    ours, peer = _number(servers[target.ours], target.key), _number(servers[target.peer], target.key)
    verdict = "pass" if ours <= target.factor * peer else "FAIL"
    ratio = f" ({ours / peer:.2f}x)" if peer else ""
    return f"| {target.label} | {ours / 1024:.1f} vs {peer / 1024:.1f} MiB{ratio} | {verdict} |"


def render_ws_memory(servers: dict[str, dict[str, object]], connections: int) -> str:
    """Memory with `connections` idle WebSocket connections (handshake done, one message echoed each)."""
    lines = _server_table(
        servers,
        ["idle RSS MiB", "idle PSS MiB", f"RSS with {connections:,} idle WebSockets MiB", "PSS with them MiB",
         "added RSS per WebSocket", "connections still open", "processes"],
        lambda entry: [_mib(entry, "idle_rss_kib"), _mib(entry, "idle_pss_kib"), _mib(entry, "loaded_rss_kib"),
                       _mib(entry, "loaded_pss_kib"), _kib(entry.get("per_connection_bytes")),
                       str(entry["open_connections"]), str(entry["processes"])],
    )  # fmt: skip
    return "\n".join(lines)


#: Issue 15: an idle HTTP/3 connection costs at most this much beyond its TLS state.
H3_IDLE_BEYOND_TLS_BYTES = 8 * 1024


def render_h3_memory(servers: dict[str, dict[str, object]], connections: int) -> str:
    """Memory with `connections` idle HTTP/3 connections, the TLS estimate, and issue 15's 8 KiB target."""
    lines = _server_table(
        servers,
        ["idle RSS MiB", "idle PSS MiB", f"RSS with {connections:,} idle HTTP/3 connections MiB",
         "added per connection", "TLS state (estimate)", "beyond TLS", "connections", "processes"],
        lambda entry: [_mib(entry, "idle_rss_kib"), _mib(entry, "idle_pss_kib"), _mib(entry, "loaded_rss_kib"),
                       _kib(entry.get("per_connection_bytes")), _kib(entry.get("tls_state_bytes")),
                       _kib(entry.get("beyond_tls_bytes")), str(entry.get("open_connections")),
                       str(entry.get("processes"))],
    )  # fmt: skip
    lines += ["", "| target | figures | verdict |", "| --- | --- | --- |"]
    for name in ("peregrine-wsgi", "peregrine-asgi"):
        entry = servers.get(name, {})
        beyond = entry.get("beyond_tls_bytes")
        if not isinstance(beyond, int | float):
            continue
        verdict = (
            "pass" if beyond <= H3_IDLE_BEYOND_TLS_BYTES and entry.get("open_connections") == connections else "FAIL"
        )
        lines.append(
            f"| {name}: an idle HTTP/3 connection ≤ 8 KiB beyond its TLS state | "
            f"{_kib(entry.get('per_connection_bytes'))} per connection minus {_kib(entry.get('tls_state_bytes'))} TLS "
            f"= {_kib(beyond)} | {verdict} |"
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
    for prefix in ("fastapi-memory", "ws-memory", "h3-memory"):
        path = newest(prefix) if not argv else None
        if path is not None:
            parts.append(render_memory(json.loads(path.read_text())))
    sys.stdout.write("\n\n".join(parts) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
