"""The harness's open-loop mode (`run.py --open-loop`, issue 20 point 4) in the pieces that need no server.

openloop itself is checked against servers with known delays in tests/test_openloop.py. Here: that its JSON
becomes the round's figures, that each server's rate comes from its own best closed-loop round of the same run,
that the mode runs after h1 on the servers and GET apps it is meant for, and that the report renders the table and
judges "p99 at 64 connections no worse than any peer's" (figures chosen to pass and to fail).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

OPENLOOP_OUTPUT = {
    "connections": 64,
    "rate": 5000.0,
    "seconds": 2.0,
    "scheduled": 10000,
    "requests": 9990,
    "rps": 4995.0,
    "status": {"2xx": 9980, "3xx": 0, "4xx": 4, "5xx": 6},
    "errors": 10,
    "dropped": 0,
    "reconnects": 1,
    "pipelining": True,
    "fallbacks": 1,
    "latency_us": {"p50": 300, "p90": 900, "p99": 4000, "p99_9": 9000, "max": 12000},
    "send_lag_us": {"p99": 150, "max": 700},
    "cpu_seconds": 0.5,
}


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, ModuleType, ModuleType, ModuleType]]:
    """benchmarks/harness.py, open_loop.py, run.py and report.py imported from benchmarks/."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import harness  # noqa: PLC0415 - from benchmarks/, on the path only now
    import open_loop  # noqa: PLC0415
    import report  # noqa: PLC0415
    import run  # noqa: PLC0415

    yield harness, open_loop, run, report
    for name in ("harness", "open_loop", "run", "report", "memory"):
        sys.modules.pop(name, None)


def test_openloop_json_becomes_the_round_figures(bench: tuple[ModuleType, ...]) -> None:
    _, open_loop, _, _ = bench
    text = "openloop: connection 3: falls back to one request at a time\n" + json.dumps(OPENLOOP_OUTPUT) + "\n"
    result = open_loop.parse(text, wait4_fraction=0.9)
    assert result.client == "openloop"
    assert (result.requests, result.seconds, result.rps, result.scheduled) == (9990, 2.0, 4995.0, 10000)
    assert (result.p50_us, result.p90_us, result.p99_us, result.p999_us, result.max_us) == (300, 900, 4000, 9000, 12000)
    assert result.mean_us is None
    assert result.non_2xx == 10
    assert result.errors == 10
    assert result.target_rate == 5000.0
    assert (result.pipelining, result.fallbacks, result.reconnects, result.send_lag_p99_us) == (True, 1, 1, 150)
    assert result.client_cpu_fraction == 0.25  # its own CPU over its window, not wait4's


def test_openloop_output_without_its_json_is_an_error(bench: tuple[ModuleType, ...]) -> None:
    _, open_loop, _, _ = bench
    with pytest.raises(RuntimeError, match="unexpected openloop output"):
        open_loop.parse("openloop: 3 of 64 connections up after 5 s\n", 0.0)


def test_the_rate_is_the_best_passed_closed_loop_round_of_that_server_and_app(bench: tuple[ModuleType, ...]) -> None:
    _, open_loop, _, _ = bench
    records: list[dict[str, object]] = [
        {"protocol": "h1", "server": "uvicorn", "app": "hello", "ok": True, "rps": 9000.0},
        {"protocol": "h1", "server": "uvicorn", "app": "hello", "ok": True, "rps": 9500.0},
        {"protocol": "h1", "server": "uvicorn", "app": "hello", "ok": False, "rps": 20000.0},  # failed: not used
        {"protocol": "h2c", "server": "uvicorn", "app": "hello", "ok": True, "rps": 30000.0},  # another mode
        {"protocol": "h1", "server": "uvicorn", "app": "fastapi", "ok": True, "rps": 4000.0},
        {"protocol": "h1", "server": "granian-asgi", "app": "hello", "ok": True, "rps": 15000.0},
    ]
    assert open_loop.maximum_rate(records, "uvicorn", "hello") == 9500.0
    assert open_loop.maximum_rate(records, "uvicorn", "fastapi") == 4000.0
    assert open_loop.maximum_rate(records, "bjoern", "hello") is None


def test_the_open_loop_block_gets_each_servers_h1_maximum(
    bench: tuple[ModuleType, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    harness, _, run, _ = bench
    seen: list[tuple[str, str, str, float | None]] = []
    rates = {"peregrine-asgi": 20000.0, "uvicorn": 9000.0}

    def measure_once(job: Any, *_: object, maximum: float | None = None) -> dict[str, object]:  # noqa: ANN401
        seen.append((job.protocol.name, job.server.name, job.app.name, maximum))
        return {
            "protocol": job.protocol.name,
            "server": job.server.name,
            "app": job.app.name,
            "ok": True,
            "rps": rates[job.server.name],
        }

    monkeypatch.setattr(run, "measure_once", measure_once)
    arguments = run.parse_arguments(["--open-loop", "--servers", "peregrine-asgi,uvicorn", "--apps", "hello,echo"])
    settings = run.settings_for(arguments)
    blocks = run.plan(arguments, settings)
    assert [block.protocol.name for block in blocks] == ["h1", "h1-openloop"]
    assert [app.name for app in blocks[0].apps] == ["hello", "echo"]
    assert [app.name for app in blocks[1].apps] == ["hello"]  # openloop sends GETs
    run.run_rounds(blocks, harness.Environment(peregrine="peregrine"), dataclasses.replace(settings, rounds=1))
    openloop_rounds = [item for item in seen if item[0] == "h1-openloop"]
    assert sorted(openloop_rounds) == [
        ("h1-openloop", "peregrine-asgi", "hello", 20000.0),
        ("h1-openloop", "uvicorn", "hello", 9000.0),
    ]


def test_the_mode_runs_after_h1_on_its_servers(bench: tuple[ModuleType, ...]) -> None:
    harness, open_loop, run, _ = bench
    assert open_loop.with_mode(["h1-openloop", "h1", "h2c"], added=False) == ["h1", "h2c", "h1-openloop"]
    assert open_loop.with_mode(["h2c"], added=True) == ["h2c", "h1", "h1-openloop"]
    assert open_loop.with_mode(["h2c"], added=False) == ["h2c"]
    mode = harness.PROTOCOLS["h1-openloop"]
    assert mode.open_loop
    assert not mode.tls
    assert not mode.http2
    assert all(harness.SERVERS[name].speaks(mode) for name in open_loop.SERVERS)
    assert not harness.SERVERS["caddy"].speaks(mode)  # HTTP/3 only here
    quick = run.parse_arguments(["--quick"])
    smoke_blocks = run.plan(quick, run.settings_for(quick))
    smoke = smoke_blocks[-1]  # last: after h1, whose round gives its rate
    assert smoke.protocol.open_loop
    assert ([app.name for app in smoke.apps], [server.name for server in smoke.servers]) == (
        ["hello"],
        ["peregrine-asgi"],
    )
    assert (smoke.duration, smoke.warmup) == (1.0, 0.5)
    assert smoke_blocks[0].protocol.name == "h1"
    arguments = run.parse_arguments(["--protocols", "h1-openloop", "--open-loop-load", "0.7"])
    settings = run.settings_for(arguments)
    assert settings.open_loop_load == 0.7
    (block,) = run.plan(arguments, settings)
    assert [server.name for server in block.servers] == open_loop.SERVERS
    assert [app.name for app in block.apps] == ["hello", "fastapi"]


def _record(protocol: str, server: str, app: str, **figures: object) -> dict[str, object]:
    base: dict[str, object] = {
        "protocol": protocol,
        "server": server,
        "app": app,
        "client": "openloop" if protocol == "h1-openloop" else "wrk",
        "ok": True,
        "rps": 1000.0,
        "cpu_us_per_request": 10.0,
        "server_cpu_fraction": 0.5,
        "client_cpu_fraction": 0.2,
        "errors": 0,
    }
    base.update(figures)
    return base


def test_report_renders_the_open_loop_table_and_the_p99_targets(bench: tuple[ModuleType, ...]) -> None:
    _, _, _, report = bench
    records = [
        _record("h1", "peregrine-asgi", "hello", rps=20000.0, p50_us=1000.0, p99_us=3000.0),
        _record("h1", "uvicorn", "hello", rps=9000.0, p50_us=2000.0, p99_us=5000.0),
        _record("h1", "granian-asgi", "hello", rps=15000.0, p50_us=1000.0, p99_us=2500.0),
        _record("h1", "peregrine-asgi", "fastapi", rps=5000.0, p99_us=9000.0),
        _record("h1", "uvicorn", "fastapi", rps=3000.0, p99_us=12000.0),
        *(
            _record(
                "h1-openloop",
                server,
                "hello",
                rps=rate / 2 - 1,
                max_rps=rate,
                target_rate=rate / 2,
                open_loop_load=0.5,
                p50_us=200.0,
                p90_us=400.0,
                p99_us=900.0,
                p999_us=2000.0,
                max_us=5000.0,
                send_lag_p99_us=lag,
                pipelining=pipelining,
                fallbacks=0,
                max_rps_source="h1 rounds of this run (best)",
            )
            for server, rate, lag, pipelining in (
                ("peregrine-asgi", 20000.0, 50.0, True),
                ("uvicorn", 9000.0, 2500.0, False),
            )
        ),
    ]
    summary = report.summarize(records)
    entry = summary["h1-openloop:hello"]["peregrine-asgi"]
    assert (entry["target_rate"], entry["p90_us"], entry["p999_us"], entry["max_rps"]) == (10000, 400, 2000, 20000)
    table = report.render_open_loop_table(summary)
    assert "| hello | peregrine-asgi | 20,000 | 10,000 (50%) | 9,999 | 0.20 | 0.40 | 0.90 | 2.00 | 5.00 | 0 |" in table
    uvicorn_row = next(line for line in table.splitlines() if "| uvicorn |" in line)
    assert "no pipelining" in uvicorn_row
    assert "client late: send lag p99 2.5 ms" in uvicorn_row
    # The other modes' table leaves the open-loop rows to their own table.
    assert "h1-openloop" not in report.render_protocol_table(summary)
    targets = report.render_latency_targets(summary)
    assert "| hello: peregrine-asgi p99 ≤ uvicorn's (closed loop) | 3.00 | 5.00 | pass |" in targets
    assert "| hello: peregrine-asgi p99 ≤ granian-asgi's (closed loop) | 3.00 | 2.50 | FAIL |" in targets
    assert "| fastapi: peregrine-asgi p99 ≤ uvicorn's (closed loop) | 9.00 | 12.00 | pass |" in targets
    assert "hypercorn" not in targets  # not measured: no line
    rendered = report.render_run({"machine": {}, "records": records})
    assert table in rendered
    assert targets in rendered


def test_a_failed_open_loop_round_is_shown_as_failed(bench: tuple[ModuleType, ...]) -> None:
    _, _, _, report = bench
    records = [_record("h1-openloop", "uvicorn", "fastapi", ok=False, error="openloop completed no request")]
    table = report.render_open_loop_table(report.summarize(records))
    assert "| fastapi | uvicorn | failed |" in table
