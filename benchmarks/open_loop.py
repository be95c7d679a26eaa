"""The harness's open-loop mode (`run.py --protocols h1-openloop`, issue 20 point 4): fixed-rate HTTP/1.1 latency.

A closed-loop client (wrk) sends a connection's next request only when the previous response is back, so when the
server stalls the client stalls with it and the requests that would have been sent meanwhile are never measured:
its p99 hides queueing ("coordinated omission"). Here benchmarks/openloop/ sends requests on a fixed schedule at a
share (`--open-loop-load`, default 0.5) of the server's own maximum, measured in the closed-loop `h1` round of the
same run (or by a short wrk probe against the same server process when the run has none), and measures each
request from when it was due.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import harness

if TYPE_CHECKING:
    from collections.abc import Callable

#: The open-loop client's build script (benchmarks/openloop/build.sh DIRECTORY).
OPENLOOP_BUILD = harness.BENCH_DIR / "openloop" / "build.sh"
#: The servers and apps the mode runs by default: issue 20's peers for hello, and FastAPI (ASGI only).
SERVERS = ["peregrine-wsgi", "bjoern", "granian-wsgi", "peregrine-asgi", "uvicorn", "granian-asgi"]
APPS = ["hello", "fastapi"]
#: The default share of a server's closed-loop maximum the open-loop client asks of it.
DEFAULT_LOAD = 0.5
#: Seconds of the closed-loop wrk probe that finds a server's maximum when the run has no `h1` round of it.
PROBE_SECONDS = 3.0
#: Seconds without progress after which openloop counts a request as failed (its -t); also how long it waits for
#: the window's last responses.
TIMEOUT_SECONDS = 5.0


@dataclasses.dataclass
class OpenLoopResult(harness.LoadResult):
    """An open-loop run: the common figures (latency from the intended send time) and the schedule's."""

    #: Requests per second the schedule asked for, and how many fell due in the measured window.
    target_rate: float = 0.0
    scheduled: int = 0
    p90_us: float | None = None
    p999_us: float | None = None
    #: Whether the server answered two pipelined requests (else the run sent one at a time per connection).
    pipelining: bool = True
    #: Connections that fell back to one request at a time mid-run, and reconnections.
    fallbacks: int = 0
    reconnects: int = 0
    #: How late openloop itself wrote requests (µs, p99): large means the client, not the server, was behind.
    send_lag_p99_us: float | None = None


def build(directory: Path) -> Path:
    """Compile benchmarks/openloop/ into `directory`; the executable's path."""
    built = subprocess.run([str(OPENLOOP_BUILD), str(directory)], check=True, capture_output=True, text=True)
    program = Path(built.stdout.strip())
    if not program.exists():
        raise RuntimeError(f"{OPENLOOP_BUILD} made no {program}")
    return program


def parse(text: str, wait4_fraction: float) -> OpenLoopResult:
    """Read openloop's one JSON line (the last line of its output that is one).

    The client's share of its core is openloop's own CPU time over its measured window (`cpu_seconds` over
    `seconds`); wait4's figure over the whole run (connects, probe and drain included) stands in without it.
    """
    found: dict[str, object] | None = None
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                found = json.loads(line)
            except json.JSONDecodeError:
                continue
    if not isinstance(found, dict):
        raise RuntimeError(f"unexpected openloop output: {text[-2000:]!r}")
    status = found["status"]
    latency = found["latency_us"]
    lag = found.get("send_lag_us")
    if not isinstance(status, dict) or not isinstance(latency, dict):
        raise RuntimeError(f"unexpected openloop output: {text[-2000:]!r}")
    seconds = float(found["seconds"])  # type: ignore[arg-type]
    cpu = found.get("cpu_seconds")
    return OpenLoopResult(
        client="openloop",
        requests=int(found["requests"]),  # type: ignore[call-overload]
        seconds=seconds,
        rps=float(found["rps"]),  # type: ignore[arg-type]
        p50_us=float(latency["p50"]),
        p99_us=float(latency["p99"]),
        mean_us=None,
        max_us=float(latency["max"]),
        errors=int(found["errors"]),  # type: ignore[call-overload]
        non_2xx=int(status["3xx"]) + int(status["4xx"]) + int(status["5xx"]),
        client_cpu_fraction=float(cpu) / seconds if isinstance(cpu, int | float) and seconds > 0 else wait4_fraction,
        target_rate=float(found["rate"]),  # type: ignore[arg-type]
        scheduled=int(found["scheduled"]),  # type: ignore[call-overload]
        p90_us=float(latency["p90"]),
        p999_us=float(latency["p99_9"]),
        pipelining=bool(found.get("pipelining", True)),
        fallbacks=int(found.get("fallbacks", 0)),  # type: ignore[call-overload]
        reconnects=int(found.get("reconnects", 0)),  # type: ignore[call-overload]
        send_lag_p99_us=float(lag["p99"]) if isinstance(lag, dict) else None,
    )


def run(
    load: harness.Load,
    rate: float,
    phases: tuple[float, float],
    on_measure: Callable[[], None],
    env: harness.Environment,
) -> OpenLoopResult:
    """Run openloop at `rate` requests/s over the load's connections, pinned to its CPU, warm-up included.

    `phases` = (seconds measured, seconds of warm-up before them).

    `on_measure` is called when the warm-up is over (on the harness's clock; openloop starts its schedule once its
    connections are up and its pipelining probe answered, a few ms later).
    """
    seconds, warmup = phases
    if env.openloop is None:
        raise ValueError("the open-loop mode needs the compiled client (Environment.openloop)")
    if load.app.method != "GET":
        raise ValueError(f"openloop sends GET requests; {load.app.name} is {load.app.method}")
    argv = [
        str(env.openloop),
        "-R",
        f"{rate:.1f}",
        "-c",
        str(load.connections),
        "-d",
        f"{seconds:g}",
        "-w",
        f"{warmup:g}",
        "-t",
        f"{TIMEOUT_SECONDS:g}",
        f"http://{harness.HOST}:{load.port}/",
    ]
    limit = seconds + warmup + 2 * TIMEOUT_SECONDS + 60
    # Exit status 1 is a run with errors: its report says how many, and the round fails on them.
    text, fraction = harness._run_client(argv, load.cpu, limit, mark=(warmup, on_measure), accepted=frozenset({0, 1}))
    result = parse(text, fraction)
    if result.requests == 0:
        raise RuntimeError(f"openloop completed no request: {text[-2000:]}")
    return result


def maximum_rate(records: list[dict[str, object]], server: str, app: str) -> float | None:
    """The best req/s of `server` on `app` in this run's closed-loop `h1` rounds that passed (None: none)."""
    rates = [
        float(record["rps"])  # type: ignore[arg-type]
        for record in records
        if record.get("protocol") == "h1"
        and record.get("server") == server
        and record.get("app") == app
        and record.get("ok")
        and isinstance(record.get("rps"), int | float)
    ]
    return max(rates) if rates else None


def probe_rate(load: harness.Load, env: harness.Environment) -> float:
    """The server's closed-loop req/s by a short wrk round (`PROBE_SECONDS`) on the same connections."""
    closed = dataclasses.replace(load, protocol=harness.H1)
    return harness.run_wrk(closed, PROBE_SECONDS, env).rps


def choose_rate(
    load: harness.Load, env: harness.Environment, maximum: float | None, share: float, record: dict[str, object]
) -> float:
    """`share` of the server's maximum: `maximum` (this run's h1 rounds), else a wrk probe's; noted in `record`."""
    if maximum is None:
        maximum = probe_rate(load, env)
        record["max_rps_source"] = f"wrk probe, {PROBE_SECONDS:g} s"
    else:
        record["max_rps_source"] = "h1 rounds of this run (best)"
    record.update(max_rps=maximum, open_loop_load=share)
    return maximum * share


def with_mode(protocols: list[str], *, added: bool) -> list[str]:
    """The modes to run with h1-openloop last (after h1, whose rounds set its rates); `added`: with it and h1."""
    if added:
        protocols = [*dict.fromkeys([*protocols, "h1", "h1-openloop"])]
    if "h1-openloop" not in protocols:
        return protocols
    return [name for name in protocols if name != "h1-openloop"] + ["h1-openloop"]
