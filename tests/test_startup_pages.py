"""csys_release_clean_file_pages (Sources/CSys/startup_pages.c): it drops a process's file pages, never its copies.

Each process gives back the file pages its start-up touched once it serves (`StartupPages` in Core; ARCHITECTURE.md,
"Memory after start-up"). Dropping a page that a write had made private would lose the write, so these tests build
the C file with a driver (tests/startup_pages_check.c) and check, on mappings of a file the driver made: a read-only
mapping loses all its resident pages and still reads the file; a written (copied-on-write) page survives the
release, in a mapping made read-only after the write and in a writable one of a single-threaded process; and a
process with a second thread leaves its writable mappings alone.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGE = 4096


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/startup_pages_check.c linked with Sources/CSys/startup_pages.c."""
    compiler = shutil.which("cc")
    assert compiler is not None, "the start-up pages test needs a C compiler (cc)"
    program = tmp_path_factory.mktemp("startup-pages") / "startup_pages_check"
    subprocess.run(
        [compiler, "-O2", "-Wall", "-Werror", "-pthread", "-I", str(REPO / "Sources" / "CSys" / "include"),
         "-o", str(program), str(REPO / "tests" / "startup_pages_check.c"),
         str(REPO / "Sources" / "CSys" / "startup_pages.c")],
        check=True,
    )  # fmt: skip
    return program


@pytest.mark.parametrize("mode", ["readonly", "copied", "writable", "threaded"])
def test_file_pages_go_and_written_pages_stay(driver: Path, tmp_path: Path, mode: str) -> None:
    data = tmp_path / "three-pages"
    data.write_bytes(b"a" * PAGE + b"b" * PAGE + b"c" * PAGE)
    finished = subprocess.run([str(driver), str(data), mode], capture_output=True, text=True, timeout=30, check=False)
    assert (finished.returncode, finished.stdout) == (0, "ok\n"), finished.stdout + finished.stderr
