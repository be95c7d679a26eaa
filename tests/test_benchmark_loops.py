"""The benchmark harness measures peregrine's ASGI server as installed (uvloop) and on plain asyncio.

`pip install .` brings uvloop where it has a wheel (build_support/dependencies.py), so `peregrine-asgi` is the
default install; `peregrine-asgi-asyncio` is the same server with `--no-uvloop`, what a free-threaded build or a
PEREGRINE_NO_UVLOOP=1 install serves ASGI on. The rounds themselves run in the smoke test
(`benchmarks/run.py --quick`, scripts/test.sh); here: the entries' commands, that the smoke test and a full run
choose both, and what a result records of the install's dependencies.
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, ModuleType]]:
    """benchmarks/harness.py and run.py imported from benchmarks/."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import harness  # noqa: PLC0415 - from benchmarks/, on the path only now
    import run  # noqa: PLC0415

    yield harness, run
    for name in ("harness", "run", "report", "memory"):
        sys.modules.pop(name, None)


def _command(harness: ModuleType, server: str, app: str = "hello") -> list[str]:
    job = harness.Job(harness.SERVERS[server], harness.APPS[app])
    env = harness.Environment(peregrine="/opt/peregrine/bin/peregrine")
    command: list[str] = harness.server_command(job, 8123, env, Path("/nonexistent"))
    return command


def test_default_entry_leaves_the_loop_to_the_install(bench: tuple[ModuleType, ModuleType]) -> None:
    harness, _ = bench
    command = _command(harness, "peregrine-asgi")
    assert command[0] == "/opt/peregrine/bin/peregrine"
    assert "--no-uvloop" not in command


def test_asyncio_entry_is_the_same_server_with_no_uvloop(bench: tuple[ModuleType, ModuleType]) -> None:
    harness, _ = bench
    for app in ("hello", "fastapi"):
        default, asyncio = _command(harness, "peregrine-asgi", app), _command(harness, "peregrine-asgi-asyncio", app)
        assert asyncio.count("--no-uvloop") == 1
        assert [word for word in asyncio if word != "--no-uvloop"] == default
        assert asyncio[-1] == harness.APPS[app].asgi  # the option comes before the application


def test_asyncio_entry_serves_the_asgi_apps_over_http1_only(bench: tuple[ModuleType, ModuleType]) -> None:
    harness, _ = bench
    server = harness.SERVERS["peregrine-asgi-asyncio"]
    assert server.interface == "asgi"
    assert server.speaks(harness.PROTOCOLS["h1"])
    assert not server.speaks(harness.PROTOCOLS["h2c"])
    assert all(server.serves(harness.APPS[app]) for app in ("hello", "12k", "echo", "fastapi"))


@pytest.mark.parametrize("quick", [True, False], ids=["quick", "full"])
def test_runs_measure_both_loops(bench: tuple[ModuleType, ModuleType], quick: bool) -> None:
    _, run = bench
    arguments = run.parse_arguments(["--quick"] if quick else [])
    blocks = run.plan(arguments, run.settings_for(arguments))
    h1 = next(block for block in blocks if block.protocol.name == "h1")
    names = [server.name for server in h1.servers]
    assert "peregrine-asgi" in names
    assert "peregrine-asgi-asyncio" in names


def test_result_records_what_the_install_requires(bench: tuple[ModuleType, ModuleType], tmp_path: Path) -> None:
    _, run = bench
    script = tmp_path / "peregrine"
    script.write_text(f"#!{sys.executable}\n")
    # The console script's interpreter (this one) is asked: its answer is what this process finds.
    try:
        requires = importlib.metadata.requires("peregrine")
        expected = "; ".join(requires or []) or "nothing"
    except importlib.metadata.PackageNotFoundError:
        expected = "not installed"
    assert run.peregrine_requires(str(script)) == expected
    binary = tmp_path / "peregrine-binary"
    binary.write_bytes(b"\x7fELF\x02\x01\x01")
    assert run.peregrine_requires(str(binary)) == "unknown (not a console script)"
