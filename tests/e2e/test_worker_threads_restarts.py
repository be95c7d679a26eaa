"""A process of worker threads is replaced as a worker process is (issue #16 point 3).

`SIGHUP`, `--max-requests` and `--reload` replace the process: the new one
is ready only when every one of its threads serves, and only then does the
old one drain, so no request fails under load.

On a free-threaded build the servers run `--free-threaded --workers 2`; with
the GIL the same code runs through `PEREGRINE_WORKER_CONTEXTS=2` (the threads
take turns, which is enough for the process model).

Applications: tests/apps/process_apps.py (`/pid`), a reload app written here.
"""

from __future__ import annotations

import re
import signal
import time
from typing import TYPE_CHECKING

import pytest
from process_support import TARGETS, Load, describe, failures, log_after, per_worker, wait_for_workers
from test_process_reload import body, wait_for_body, write_app
from test_process_sighup import wait_for_handovers

from installed import server_python_facts

pytest_plugins = ("process_support",)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server

FREE_THREADED = server_python_facts()["free_threaded"]


@pytest.fixture
def threaded(monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """Options (and environment) for one worker process of two worker threads."""
    if FREE_THREADED:
        return ("--free-threaded", "--workers", "2")
    monkeypatch.setenv("PEREGRINE_WORKER_CONTEXTS", "2")
    return ()


def threads_banner(server: Server, start: int = 0) -> str | None:
    """The line saying a process serves in two threads (or contexts), from line `start`."""
    return log_after(server, r"in 2 worker (threads|contexts)", start, timeout=15)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["wsgi", "asgi"])
def test_sighup_replaces_a_process_of_threads_without_a_failed_request(
    serve: Callable[..., Server], threaded: tuple[str, ...], kind: str
) -> None:
    server = serve(TARGETS[kind], *threaded)
    assert threads_banner(server) is not None, server.excerpt()
    (first,) = wait_for_workers(server, 1)
    with (
        Load(server, keepalive=6, fresh=3, path="/pid?ms=1") as quick,
        Load(server, keepalive=2, fresh=1, path="/pid?ms=300") as slow,
    ):
        time.sleep(1.0)
        mark = len(server.stderr.lines)
        server.process.send_signal(signal.SIGHUP)
        ((second, old),) = wait_for_handovers(server, 1, mark)
        assert old == first
        # The new process said it serves in two threads before it was ready.
        assert threads_banner(server, mark) is not None, server.excerpt(80)
        time.sleep(1.0)
        mark = len(server.stderr.lines)
        server.process.send_signal(signal.SIGHUP)
        ((third, old),) = wait_for_handovers(server, 1, mark)
        assert old == second
        time.sleep(1.0)
    outcomes = quick.snapshot() + slow.snapshot()
    assert not failures(outcomes), f"{len(failures(outcomes))} of {len(outcomes)} failed:\n" + describe(
        failures(outcomes)
    )
    counts = per_worker(outcomes)
    assert {first, second, third} <= set(counts), counts


@pytest.mark.parametrize("kind", ["wsgi", "asgi"])
def test_max_requests_replaces_a_process_of_threads_without_a_failed_request(
    serve: Callable[..., Server], threaded: tuple[str, ...], kind: str
) -> None:
    server = serve(TARGETS[kind], *threaded, "--max-requests", "100")
    (first,) = wait_for_workers(server, 1)
    with Load(server, keepalive=4, fresh=2, path="/pid?ms=2") as load:
        time.sleep(4)
    outcomes = load.snapshot()
    assert not failures(outcomes), f"{len(failures(outcomes))} of {len(outcomes)} failed:\n" + describe(
        failures(outcomes)
    )
    counts = per_worker(outcomes)
    # The first thread to serve 100 has its process replaced (the process
    # serves on until its successor is ready): several generations answer.
    assert len(counts) >= 3, f"only {len(counts)} processes answered {len(outcomes)} requests: {counts}"
    recycled = {
        int(match[1])
        for line in server.stderr.lines
        if (match := re.search(r"worker (\d+) served --max-requests: replacing it", line))
    }
    assert first in recycled, server.excerpt(80)


def test_reload_replaces_a_process_of_threads(
    serve: Callable[..., Server], threaded: tuple[str, ...], tmp_path: Path
) -> None:
    write_app(tmp_path, "first version")
    server = serve(
        "reload_app:app", "--reload", "--reload-dir", str(tmp_path), "--python-path", str(tmp_path), *threaded,
        cwd=tmp_path,
    )  # fmt: skip
    assert threads_banner(server) is not None, server.excerpt()
    assert body(server) == "first version"
    (first,) = wait_for_workers(server, 1)
    mark = len(server.stderr.lines)
    write_app(tmp_path, "second version")
    wait_for_body(server, "second version")
    (second,) = wait_for_workers(server, 1, exclude={first})
    assert threads_banner(server, mark) is not None, server.excerpt(80)
    assert body(server, "/pid") == str(second)
