"""benchmarks/memory.py: it says how to install what is missing, and its exit status tells whether it measured.

Run before `benchmarks/run.py --setup`, it used to start every server from a
venv that did not exist, log ENOENT for each and exit 0. Now a missing
executable stops it before anything starts (exit 2, with the command that
installs it), a run in which every server failed exits 1, and a run that
measured something exits 0.
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
