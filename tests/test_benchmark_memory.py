"""benchmarks/memory.py: it says how to install what is missing, and its exit status tells whether it measured.

Run before `benchmarks/run.py --setup`, it used to start every server from a
venv that did not exist, log ENOENT for each and exit 0. Now a missing
executable stops it before anything starts (exit 2, with the command that
installs it), a run in which every server failed exits 1, and a run that
measured something exits 0.

`--app fastapi` (issue 20 point 3: a FastAPI application's idle PSS against
uvicorn's and granian's) measures the ASGI servers only, each serving the
harness's FastAPI app; its results file, table and targets name the app.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from installed import peregrine_command

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPT = BENCHMARKS / "memory.py"


def run(*arguments: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *arguments], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture
def memory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ModuleType]:
    """benchmarks/memory.py imported, with the peer venv moved to an empty directory."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import harness  # noqa: PLC0415 - from benchmarks/, on the path only now
    import memory as module  # noqa: PLC0415

    monkeypatch.setattr(harness, "VENV_DIR", tmp_path / "no-venv")
    yield module
    for name in ("memory", "harness", "report"):
        sys.modules.pop(name, None)


def test_without_the_venv_it_says_to_run_setup_and_exits_2(
    memory: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    output = tmp_path / "result.json"
    assert memory.main(["--servers", "uvicorn,peregrine-wsgi", "--output", str(output)]) == 2
    logged = capsys.readouterr().err
    assert "nothing measured" in logged
    assert f"uvicorn: {tmp_path / 'no-venv' / 'bin' / 'uvicorn'}" in logged
    assert f"peregrine-wsgi: {tmp_path / 'no-venv' / 'bin' / 'peregrine'}" in logged
    assert "python3 benchmarks/run.py --setup" in logged
    assert not output.exists()


def test_a_missing_peregrine_is_named_and_nothing_starts(tmp_path: Path) -> None:
    output = tmp_path / "result.json"
    finished = run("--peregrine", str(tmp_path / "absent"), "--servers", "peregrine-wsgi", "--output", str(output))
    assert finished.returncode == 2, finished.stderr
    assert f"{tmp_path / 'absent'} does not exist or is not executable (--peregrine)" in finished.stderr
    assert "ENOENT" not in finished.stderr
    assert not output.exists()


def test_nothing_measured_exits_1(tmp_path: Path) -> None:
    """A peregrine that exits at once: every server fails, the results say why, and the status says so."""
    output = tmp_path / "result.json"
    finished = run(
        "--peregrine", "/bin/false", "--servers", "peregrine-wsgi,peregrine-asgi", "--connections", "10",
        "--output", str(output),
    )  # fmt: skip
    assert finished.returncode == 1, finished.stderr
    assert "nothing was measured: every server failed" in finished.stderr
    servers = json.loads(output.read_text())["servers"]
    assert set(servers) == {"peregrine-wsgi", "peregrine-asgi"}
    assert all("exited with 1" in entry["error"] for entry in servers.values())


def test_a_measurement_exits_0(tmp_path: Path) -> None:
    output = tmp_path / "result.json"
    peregrine = peregrine_command()[0]
    finished = run(
        "--peregrine", peregrine, "--servers", "peregrine-wsgi", "--connections", "20", "--output", str(output)
    )
    assert finished.returncode == 0, finished.stderr
    entry = json.loads(output.read_text())["servers"]["peregrine-wsgi"]
    assert entry["open_connections"] == 20
    assert entry["loaded_rss_kib"] > 0


FASTAPI_SERVERS = ["peregrine-asgi", "peregrine-asgi-asyncio", "uvicorn", "granian-asgi", "hypercorn"]


def test_fastapi_is_measured_on_the_asgi_servers_and_hello_on_every_http1_one(memory: ModuleType) -> None:
    harness = memory.harness
    assert memory.parse_arguments([]).app == "hello"
    fastapi = memory.chosen_app("fastapi", websocket=False, h3=False)
    assert fastapi is harness.APPS["fastapi"]
    assert memory.chosen_servers(None, fastapi, harness.H1) == FASTAPI_SERVERS
    hello = memory.chosen_servers(None, harness.APPS["hello"], harness.H1)
    assert hello == ["nginx", "peregrine-wsgi", "bjoern", "granian-wsgi", "gunicorn-sync", *FASTAPI_SERVERS]
    assert memory.chosen_servers("uvicorn,granian-asgi", fastapi, harness.H1) == ["uvicorn", "granian-asgi"]


@pytest.mark.parametrize("servers", ["peregrine-wsgi", "uvicorn,granian-wsgi", "nginx"])
def test_a_server_that_cannot_serve_fastapi_is_an_error_before_anything_starts(
    memory: ModuleType, tmp_path: Path, servers: str
) -> None:
    output = tmp_path / "result.json"
    with pytest.raises(SystemExit) as stopped:
        memory.main(["--app", "fastapi", "--servers", servers, "--output", str(output)])
    message = str(stopped.value.code)
    named = [name for name in servers.split(",") if name != "uvicorn"]
    assert message.startswith(f"--app fastapi is an ASGI application; {', '.join(named)} cannot serve it")
    assert f"(the servers that can: {', '.join(FASTAPI_SERVERS)})" in message
    assert not output.exists()


def test_fastapi_only_over_http1_and_only_a_known_app(memory: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    for mode in ("--websocket", "--h3"):
        with pytest.raises(SystemExit) as stopped:
            memory.main(["--app", "fastapi", mode])
        assert stopped.value.code == (
            "--app fastapi measures idle HTTP/1.1 keep-alive connections: not with --websocket or --h3"
        )
    with pytest.raises(SystemExit) as stopped:
        memory.parse_arguments(["--app", "django"])
    assert stopped.value.code == 2
    assert "invalid choice: 'django' (choose from" in capsys.readouterr().err


def test_a_missing_asgi_server_for_fastapi_is_named_and_exits_2(
    memory: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert memory.main(["--app", "fastapi", "--servers", "uvicorn,granian-asgi"]) == 2
    logged = capsys.readouterr().err
    assert f"uvicorn: {tmp_path / 'no-venv' / 'bin' / 'uvicorn'}" in logged
    assert f"granian-asgi: {tmp_path / 'no-venv' / 'bin' / 'granian'}" in logged


def test_the_results_file_of_a_fastapi_run_does_not_hide_the_newest_hello_run(memory: ModuleType) -> None:
    apps = memory.harness.APPS
    assert memory.results_prefix(apps["hello"], h3=False) == "memory"
    assert memory.results_prefix(apps["fastapi"], h3=False) == "fastapi-memory"
    assert memory.results_prefix(apps["ws-echo"], h3=False) == "ws-memory"
    assert memory.results_prefix(apps["hello"], h3=True) == "h3-memory"


def _entry(idle_rss_mib: float, idle_pss_mib: float) -> dict[str, object]:
    return {
        "idle_rss_kib": int(idle_rss_mib * 1024),
        "idle_pss_kib": int(idle_pss_mib * 1024),
        "loaded_rss_kib": int(idle_rss_mib * 1024) + 400,
        "loaded_pss_kib": int(idle_pss_mib * 1024) + 400,
        "connections_made": 1000,
        "open_connections": 1000,
        "processes": 2,
        "per_connection_bytes": 409.6,
    }


def _verdicts(text: str) -> dict[str, str]:
    """Target label: its table row's figures and verdict."""
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| ") and line.endswith(" |")]
    return {row[0][2:]: " | ".join(row[1:])[:-2] for row in rows if row[-1] in {"pass |", "FAIL |"}}


def test_the_fastapi_table_names_its_app_and_checks_pss_against_uvicorn_and_granian(memory: ModuleType) -> None:
    import report  # noqa: PLC0415 - from benchmarks/, on the path only now

    servers = {
        "peregrine-asgi": _entry(40.0, 37.0),
        "uvicorn": _entry(50.0, 44.0),
        "granian-asgi": _entry(30.0, 36.0),
        "hypercorn": {"error": "exited with 1"},
    }
    text = report.render_memory({"mode": "http", "app": "fastapi", "connections": 1000, "servers": servers})
    assert text.startswith("Memory, app `fastapi`: ")
    assert "| peregrine-asgi | 40.0 | 37.0 | 40.4 | 0.40 KiB | 1000 | 2 |" in text
    assert "| hypercorn | failed: exited with 1 | | | | | |" in text
    assert _verdicts(text) == {
        "peregrine-asgi idle PSS ≤ uvicorn's": "37.0 vs 44.0 MiB (0.84x) | pass",
        "peregrine-asgi idle PSS ≤ granian-asgi's": "37.0 vs 36.0 MiB (1.03x) | FAIL",
    }


def test_the_hello_table_checks_rss_and_0_9x_of_uvicorns_pss(memory: ModuleType) -> None:
    import report  # noqa: PLC0415 - from benchmarks/, on the path only now

    servers = {"peregrine-asgi": _entry(31.0, 23.0), "uvicorn": _entry(31.5, 25.0)}
    text = report.render_memory({"mode": "http", "connections": 1000, "servers": servers})  # before --app: hello
    assert text.startswith("Memory, app `hello`: ")
    assert _verdicts(text) == {
        "ASGI idle RSS ≤ uvicorn's": "31.0 vs 31.5 MiB (0.98x) | pass",
        "ASGI idle PSS ≤ 0.9x uvicorn's": "23.0 vs 25.0 MiB (0.92x) | FAIL",
        "peregrine-asgi: 1,000 idle connections add ≤ 1 MiB": "0.39 MiB, 410 B each | pass",
    }
    servers["peregrine-asgi"] = _entry(31.0, 22.5)
    text = report.render_memory({"mode": "http", "app": "hello", "connections": 1000, "servers": servers})
    assert _verdicts(text)["ASGI idle PSS ≤ 0.9x uvicorn's"] == "22.5 vs 25.0 MiB (0.90x) | pass"


def test_the_report_shows_the_newest_fastapi_run_beside_the_newest_hello_run(
    memory: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import report  # noqa: PLC0415 - from benchmarks/, on the path only now

    monkeypatch.setattr(report, "RESULTS_DIR", tmp_path)
    for name, app, idle_rss_mib in (
        ("memory-20261201-100000", "hello", 31.0),
        ("memory-20261202-100000", "hello", 32.0),
        ("fastapi-memory-20261203-100000", "fastapi", 33.0),
    ):
        servers = {"peregrine-asgi": _entry(idle_rss_mib, 20.0)}
        result = {"mode": "http", "app": app, "connections": 1000, "servers": servers}
        (tmp_path / f"{name}.json").write_text(json.dumps(result))
    assert report.main([]) == 0
    printed = capsys.readouterr().out
    assert printed.count("Memory, app `hello`") == 1
    assert "| peregrine-asgi | 32.0 |" in printed  # the newest hello run, not the fastapi one after it
    assert printed.count("Memory, app `fastapi`") == 1
    assert "| peregrine-asgi | 33.0 |" in printed


def test_a_fastapi_measurement_exits_0(tmp_path: Path) -> None:
    """The installed peregrine serving the FastAPI app: every connection got the app's JSON and stayed open."""
    output = tmp_path / "result.json"
    peregrine = peregrine_command()[0]
    finished = run(
        "--peregrine", peregrine, "--app", "fastapi", "--servers", "peregrine-asgi", "--connections", "20",
        "--output", str(output),
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr
    result = json.loads(output.read_text())
    assert result["app"] == "fastapi"
    entry = result["servers"]["peregrine-asgi"]
    assert (entry["connections_made"], entry["open_connections"]) == (20, 20)
    assert "Memory, app `fastapi`" in finished.stdout
