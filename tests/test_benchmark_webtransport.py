"""benchmarks/webtransport.py: every mode runs once, briefly, against the installed server, and its figures are sane.

No timing is asserted (CI is a loaded two-core machine): only that every echo came back byte for byte, that
each mode counted operations, that the app saw what the client sent, that every idle session was open on the
server when memory was read, and that the exit status says so. The script's own pure helpers are checked too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from installed import peregrine_command

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import ModuleType

pytest.importorskip("aioquic")

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPT = BENCHMARKS / "webtransport.py"
LOAD_MODES = ("stream-echo", "message-echo", "datagram-64", "datagram-1000", "ws-echo")
IDLE_MODES = ("wt-idle (1/connection)", "wt-idle (4/connection)", "ws-idle")


def run(*arguments: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *arguments], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    output = tmp_path_factory.mktemp("wt-bench") / "result.json"
    finished = run("--bin", peregrine_command()[0], "--smoke", "--no-pin", "--output", str(output))
    assert output.exists(), finished.stderr
    return finished, json.loads(output.read_text())


def by_mode(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {result["mode"]: result for result in report["results"]}


def test_the_smoke_run_measures_every_mode_and_exits_0(
    smoke: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    finished, report = smoke
    assert finished.returncode == 0, finished.stderr
    assert set(by_mode(report)) == {*LOAD_MODES, *IDLE_MODES}
    assert "| server CPU per 64-byte echo |" in finished.stdout


@pytest.mark.parametrize("mode", LOAD_MODES)
def test_every_echo_came_back_and_was_counted(
    smoke: tuple[subprocess.CompletedProcess[str], dict[str, Any]], mode: str
) -> None:
    result = by_mode(smoke[1])[mode]
    assert result["errors"] == []
    assert result["mismatches"] == 0
    assert result["operations"] > 0
    assert result["server_cpu_seconds"] >= 0
    assert result["server_us_per_op"] is not None


def test_the_app_saw_the_streams_the_client_echoed(
    smoke: tuple[subprocess.CompletedProcess[str], dict[str, Any]],
) -> None:
    results = by_mode(smoke[1])
    stream, message = results["stream-echo"], results["message-echo"]
    # stream-echo: 64 bytes and a FIN per stream, echoed with the FIN.
    assert stream["app"]["streams_ended"] > 0
    assert stream["app"]["stream_bytes"] > 0
    # message-echo: one long-lived stream per session, never ended while measuring.
    assert message["app"]["stream_bytes"] > 0
    assert message["app"]["streams_ended"] == 0


@pytest.mark.parametrize("size", [64, 1000])
def test_datagrams_went_out_through_the_app_and_back(
    smoke: tuple[subprocess.CompletedProcess[str], dict[str, Any]], size: int
) -> None:
    result = by_mode(smoke[1])[f"datagram-{size}"]
    assert result["sent"] > 0
    assert result["handled"] > 0
    assert result["received"] > 0
    # Over the whole run (drained at the end): nothing arrives that was not sent, the app sends back every
    # datagram it gets, and the client gets back at most what the app sent.
    totals = result["run_totals"]
    assert 0 < totals["datagrams_received"] <= totals["client_sent"]
    assert totals["datagrams_sent"] == totals["datagrams_received"]
    assert 0 < totals["client_received"] <= totals["datagrams_sent"]
    assert 0 <= result["lost_in"] < 1
    assert 0 <= result["lost_out"] < 1


@pytest.mark.parametrize("mode", IDLE_MODES)
def test_every_idle_session_was_open_on_the_server_when_measured(
    smoke: tuple[subprocess.CompletedProcess[str], dict[str, Any]], mode: str
) -> None:
    result = by_mode(smoke[1])[mode]
    assert result["errors"] == []
    assert result["count"] == result["opened"] == result["open"] == 4
    assert result["loaded_rss_kib"] > 0
    assert result["rss_bytes_each"] is not None


def test_a_missing_executable_is_named_and_nothing_starts(tmp_path: Path) -> None:
    output = tmp_path / "result.json"
    finished = run("--bin", str(tmp_path / "absent"), "--smoke", "--no-pin", "--output", str(output), timeout=60)
    assert finished.returncode == 2, finished.stderr
    assert f"{tmp_path / 'absent'} does not exist or is not executable (--bin)" in finished.stderr
    assert not output.exists()


@pytest.fixture
def webtransport(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import webtransport as module  # noqa: PLC0415 - from benchmarks/, on the path only now

    yield module
    for name in ("webtransport", "wt_client", "memory", "harness", "report"):
        sys.modules.pop(name, None)


def test_percentiles_are_nearest_rank_in_microseconds(webtransport: ModuleType) -> None:
    import wt_client  # noqa: PLC0415 - on the path with webtransport

    values = [index / 1e6 for index in range(1, 101)]  # 1..100 µs
    assert wt_client.percentile(values, 0.5) == pytest.approx(50)
    assert wt_client.percentile(values, 0.99) == pytest.approx(99)
    assert wt_client.percentile([7e-6], 0.99) == pytest.approx(7)
    assert wt_client.percentile([], 0.5) is None


def test_payloads_name_sender_and_number_at_their_size(webtransport: ModuleType) -> None:
    import wt_client  # noqa: PLC0415 - on the path with webtransport

    first, second = wt_client.payload("s0", 1, 64), wt_client.payload("s0", 2, 64)
    assert len(first) == len(second) == 64
    assert first != second
    assert first.startswith(b"s0 0000000001 ")
    assert len(wt_client.payload("s0", 1, 1000)) == 1000


def test_the_side_by_side_table_pairs_message_echo_with_websocket_echo(webtransport: ModuleType) -> None:
    results = [
        {"mode": "message-echo", "rate": 1.0, "server_us_per_op": 30.0},
        {"mode": "ws-echo", "rate": 1.0, "server_us_per_op": 10.0},
        {"mode": "wt-idle (1/connection)", "count": 100, "sessions_per_connection": 1, "rss_bytes_each": 9000.0},
        {"mode": "ws-idle", "count": 100, "rss_bytes_each": 4000.0},
    ]
    table = "\n".join(webtransport.side_by_side(results))
    assert "| server CPU per 64-byte echo | 30.00 µs | 10.00 µs |" in table
    assert "(1 per connection) vs per idle WebSocket, 100 of them | 9,000 B | 4,000 B |" in table
