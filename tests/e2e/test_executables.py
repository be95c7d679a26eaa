"""The two executables: `peregrine` (the supervisor, no Python in it) and the `peregrine-worker` it runs.

The supervisor only parses, binds and watches its workers, so it is built without libpython, OpenSSL or the
protocol code (ARCHITECTURE.md, "Processes"); the worker executable beside it does the serving.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from test_cli import assert_clean_usage_error

from conftest import APPS
from installed import server_executable

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server


def run_executable(executable: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(executable), *args],
        cwd=APPS,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=20,
        check=False,
    )


def test_supervisor_without_its_worker_executable_exits_2(tmp_path: Path) -> None:
    alone = tmp_path / "peregrine"
    shutil.copy2(server_executable(), alone)
    result = run_executable(alone, "--port", "0", "wsgi_apps:hello")
    assert_clean_usage_error(result, str(tmp_path / "peregrine-worker"), "reinstall")


def test_worker_executable_run_by_hand_exits_2() -> None:
    worker = server_executable().parent / "peregrine-worker"
    assert_clean_usage_error(run_executable(worker, "--port", "0", "wsgi_apps:hello"), "run peregrine")


def test_supervisor_refuses_the_internal_worker_option() -> None:
    for value in ("check", "3:4"):
        result = run_executable(server_executable(), "--worker", value, "--port", "0", "wsgi_apps:hello")
        assert_clean_usage_error(result, "--worker is internal")


def _mapped_files(pid: int) -> set[str]:
    lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return {Path(line.split()[-1]).name for line in lines if len(line.split()) >= 6}


def test_supervisor_maps_no_python_and_runs_the_worker_executable(start_server: Callable[..., Server]) -> None:
    server = start_server("wsgi_apps:hello", "--workers", "2")
    supervisor = server.process.pid
    mapped = _mapped_files(supervisor)
    assert not any(name.startswith(("libpython", "libssl", "libcrypto")) for name in mapped), sorted(mapped)
    # The second worker starts once the first is ready; a child may also be caught between fork and exec.
    deadline = time.monotonic() + 10
    while sorted(_program(child) for child in _children(supervisor)) != ["peregrine-worker"] * 2:
        assert time.monotonic() < deadline, [_program(child) for child in _children(supervisor)]
        time.sleep(0.05)
    # A worker just past exec has its command line before the dynamic loader has mapped libpython.
    for child in _children(supervisor):
        static = _static_python(f"/proc/{child}/exe")
        while not static and not any(name.startswith("libpython") for name in _mapped_files(child)):
            assert time.monotonic() < deadline, sorted(_mapped_files(child))
            time.sleep(0.05)


def _children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _program(pid: int) -> str:
    """The name of the executable a process runs (argv[0] is what the supervisor passes: the full path)."""
    return Path(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()).name


def _static_python(executable: str) -> bool:
    """A worker linked against a static libpython maps no libpython*.so: it exports the C API itself."""
    symbols = subprocess.run(["nm", "-D", executable], capture_output=True, text=True, check=False).stdout
    return " T Py_Initialize" in symbols
