"""Reload for development (issue 4 item 5): --reload restarts the workers when watched source files change
(inotify, debounced); an edit that breaks the import is logged with its traceback and the server recovers as soon
as the file is fixed.
"""

from __future__ import annotations

import os
import signal
import time
from typing import TYPE_CHECKING

import pytest
from process_support import log_after, wait_for_workers
from rawhttp import ConnectionClosedError, RawConnection, request

pytest_plugins = ("process_support",)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server

#: How long an edit may take to show.
RELOAD_WITHIN = 3.0

APP = """\
import os

TEXT = {text!r}


def app(environ, start_response):
    body = (TEXT if environ["PATH_INFO"] != "/pid" else str(os.getpid())).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
"""

BROKEN = """\
import os

TEXT = "this edit is broken"


def app(environ, start_response)
    return []
"""


def write_app(directory: Path, text: str) -> None:
    """(Re)write reload_app.py answering `text`."""
    (directory / "reload_app.py").write_text(APP.format(text=text), encoding="utf-8")


def body(server: Server, target: str = "/") -> str | None:
    """The body of a 200 for `target` on a new connection; None if the request failed."""
    try:
        with RawConnection.to(server, timeout=5) as connection:
            connection.send(request("GET", target))
            response = connection.read_response()
    except (OSError, ConnectionClosedError):
        return None
    return response.body.decode() if response.status == 200 else None


def wait_for_body(server: Server, text: str, timeout: float = RELOAD_WITHIN) -> float:
    """Wait until `/` answers `text`; the seconds it took."""
    started = time.monotonic()
    seen = None
    while time.monotonic() - started < timeout:
        seen = body(server)
        if seen == text:
            return time.monotonic() - started
        time.sleep(0.05)
    pytest.fail(f"/ still answers {seen!r}, not {text!r}, {timeout:.0f}s after the edit; stderr:\n{server.excerpt(80)}")


def reloading_server(serve: Callable[..., Server], directory: Path, *options: str) -> Server:
    return serve(
        "reload_app:app", "--reload", "--reload-dir", str(directory), "--python-path", str(directory), *options,
        cwd=directory,
    )  # fmt: skip


def test_reload_on_edit_and_recovery_from_a_broken_edit(serve: Callable[..., Server], tmp_path: Path) -> None:
    write_app(tmp_path, "first version")
    server = reloading_server(serve, tmp_path)
    assert log_after(server, r"starting 1 worker, reloading on changes", timeout=1), server.excerpt()
    assert body(server) == "first version"
    (first,) = wait_for_workers(server, 1)

    write_app(tmp_path, "second version, edited")
    wait_for_body(server, "second version, edited")
    (second,) = wait_for_workers(server, 1, exclude={first})
    assert body(server, "/pid") == str(second)

    mark = len(server.stderr.lines)
    (tmp_path / "reload_app.py").write_text(BROKEN, encoding="utf-8")
    line = log_after(server, r"SyntaxError", mark, timeout=RELOAD_WITHIN)
    assert line is not None, "the broken edit's error is not in the log:\n" + server.excerpt(80)
    assert log_after(server, r'File ".*reload_app\.py", line 6', mark, timeout=1), server.excerpt(80)
    # The old worker goes on serving the last good version (or nothing is served until the fix).
    during = {body(server) for _ in range(5)}
    assert during <= {"second version, edited", None}, during
    server.check_alive()

    write_app(tmp_path, "third version, fixed again")
    wait_for_body(server, "third version, fixed again")
    (third,) = wait_for_workers(server, 1, exclude={first, second})
    assert body(server, "/pid") == str(third)


def test_a_burst_of_writes_restarts_once(serve: Callable[..., Server], tmp_path: Path) -> None:
    write_app(tmp_path, "before the burst")
    server = reloading_server(serve, tmp_path)
    (first,) = wait_for_workers(server, 1)
    mark = len(server.stderr.lines)
    for index in range(5):
        write_app(tmp_path, f"burst write number {index}" + "!" * index)
        time.sleep(0.03)
    wait_for_body(server, "burst write number 4!!!!")
    wait_for_workers(server, 1, exclude={first})
    time.sleep(1.0)
    restarts = [line for line in server.stderr.lines[mark:] if "source changed: restarting workers" in line]
    assert len(restarts) == 1, "\n".join(server.stderr.lines[mark:])


def test_only_matching_files_in_the_watched_tree_trigger_a_reload(serve: Callable[..., Server], tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    write_app(tmp_path, "watching")
    server = reloading_server(serve, tmp_path)
    (first,) = wait_for_workers(server, 1)

    (tmp_path / "notes.txt").write_text("not a source file\n", encoding="utf-8")
    (tmp_path / "sub" / "data.json").write_text("{}\n", encoding="utf-8")
    time.sleep(1.5)
    assert body(server, "/pid") == str(first), "a change to a file not matching *.py restarted the worker"

    (tmp_path / "sub" / "helper.py").write_text("VALUE = 1\n", encoding="utf-8")  # a subdirectory is watched too
    (second,) = wait_for_workers(server, 1, exclude={first}, timeout=RELOAD_WITHIN + 2)

    (tmp_path / "newpkg").mkdir()  # a directory created after the start is watched as well
    time.sleep(0.3)
    (tmp_path / "newpkg" / "module.py").write_text("VALUE = 2\n", encoding="utf-8")
    wait_for_workers(server, 1, exclude={first, second}, timeout=RELOAD_WITHIN + 2)


def test_reload_include_selects_the_watched_files(serve: Callable[..., Server], tmp_path: Path) -> None:
    write_app(tmp_path, "templates")
    server = reloading_server(serve, tmp_path, "--reload-include", "*.html")
    (first,) = wait_for_workers(server, 1)
    (tmp_path / "page.html").write_text("<p>edited</p>\n", encoding="utf-8")
    wait_for_workers(server, 1, exclude={first}, timeout=RELOAD_WITHIN + 2)


def test_a_new_directory_arriving_with_source_files_triggers_a_reload(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    """`git checkout` or `tar x` create a package directory and its files at once: the files count as changes."""
    write_app(tmp_path, "checkout")
    server = reloading_server(serve, tmp_path)
    (first,) = wait_for_workers(server, 1)
    os.kill(server.pid, signal.SIGSTOP)  # the directory and its file both exist before the supervisor looks
    try:
        (tmp_path / "feature").mkdir()
        (tmp_path / "feature" / "views.py").write_text("VALUE = 3\n", encoding="utf-8")
    finally:
        os.kill(server.pid, signal.SIGCONT)
    wait_for_workers(server, 1, exclude={first}, timeout=RELOAD_WITHIN + 2)
