"""Worker processes (issue 4 item 1): several workers share the load; --workers 0; --unix with several workers."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest
from process_support import (
    WSGI,
    Load,
    describe,
    failures,
    get_pid,
    log_after,
    per_worker,
    wait_for_workers,
)
from rawhttp import RawConnection, request

pytest_plugins = ("process_support",)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server


def test_four_workers_share_the_load(serve: Callable[..., Server]) -> None:
    server = serve(WSGI, "--workers", "4")
    pids = wait_for_workers(server, 4)
    assert log_after(server, r"supervisor \d+ starting 4 workers", timeout=1), server.excerpt()
    # Connections that live for a few requests each, and connections for one request.
    with Load(server, keepalive=8, fresh=2, reuse=(1, 20)) as load:
        load.wait_for_count(3000, timeout=40)
    outcomes = load.snapshot()
    assert len(outcomes) >= 3000, f"only {len(outcomes)} requests in 40 s"
    assert not failures(outcomes), describe(failures(outcomes))
    counts = per_worker(outcomes)
    assert set(counts) == pids, f"answered by {sorted(counts)}, workers {sorted(pids)}"
    assert max(counts.values()) <= 2 * min(counts.values()), f"uneven spread over 4 workers: {counts}"


def test_workers_zero_starts_one_per_cpu(serve: Callable[..., Server]) -> None:
    cpus = len(os.sched_getaffinity(0))
    server = serve(WSGI, "--workers", "0")
    pids = wait_for_workers(server, cpus)
    assert log_after(server, rf"supervisor \d+ starting {cpus} worker", timeout=1), server.excerpt()
    assert get_pid(server) in pids


def test_unix_socket_with_several_workers(serve: Callable[..., Server], tmp_path: Path) -> None:
    path = tmp_path / "peregrine.sock"
    server = serve(WSGI, "--unix", str(path), "--workers", "3")
    assert server.unix_path == str(path)
    pids = wait_for_workers(server, 3)
    seen = {get_pid(server) for _ in range(300)}
    assert seen <= pids
    assert len(seen) >= 2, f"300 connections over the unix socket all went to {seen} of {sorted(pids)}"


@pytest.mark.parametrize(("count", "expected"), [("1", "False"), ("2", "True")])
def test_wsgi_multiprocess_tells_whether_there_are_several_workers(
    serve: Callable[..., Server], count: str, expected: str
) -> None:
    server = serve(WSGI, "--workers", count)
    wait_for_workers(server, int(count))
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/multiprocess"))
        response = connection.read_response()
    assert (response.status, response.body.decode()) == (200, f"wsgi.multiprocess={expected}")
