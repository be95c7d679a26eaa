"""Recycling (issue 4 item 6): --max-requests N with --max-requests-jitter J replaces a worker gracefully after
N..N+J requests, without a failed request.
"""

from __future__ import annotations

import itertools
import re
import time
from typing import TYPE_CHECKING

import pytest
from process_support import TARGETS, Load, describe, failures, per_worker, wait_for_workers

pytest_plugins = ("process_support",)

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server


@pytest.mark.parametrize("kind", ["wsgi", "asgi"])
def test_max_requests_recycles_workers_under_load_without_a_failure(serve: Callable[..., Server], kind: str) -> None:
    server = serve(TARGETS[kind], "--workers", "2", "--max-requests", "50", "--max-requests-jitter", "10")
    first = wait_for_workers(server, 2)
    with Load(server, keepalive=4, fresh=2, path="/pid?ms=2") as load:
        time.sleep(4)
    outcomes = load.snapshot()
    assert not failures(outcomes), f"{len(failures(outcomes))} of {len(outcomes)} failed:\n" + describe(
        failures(outcomes)
    )
    counts = per_worker(outcomes)
    assert len(outcomes) >= 500, f"only {len(outcomes)} requests in 4 s"
    # A worker asks to be replaced after 50..60 requests and serves on until its successor is ready: several
    # generations answer.
    assert len(counts) >= 4, f"only {len(counts)} workers answered {len(outcomes)} requests: {counts}"
    recycled = [
        int(match[1])
        for line in server.stderr.lines
        if (match := re.search(r"worker (\d+) served --max-requests: replacing it", line))
    ]
    assert len(recycled) >= 2, server.excerpt(80)
    assert first <= set(recycled), (first, recycled)
    time.sleep(0.5)
    after = wait_for_workers(server, 2)
    assert not after & first


def test_a_recycled_worker_served_about_max_requests(serve: Callable[..., Server]) -> None:
    """Sequential requests on new connections: no worker is recycled before N requests, and each is recycled."""
    server = serve(TARGETS["wsgi"], "--max-requests", "20", "--max-requests-jitter", "5")
    wait_for_workers(server, 1)
    with Load(server, keepalive=0, fresh=1, path="/pid?ms=5") as load:
        load.wait_for_count(400, timeout=30)
    outcomes = load.snapshot()
    assert not failures(outcomes), describe(failures(outcomes))
    answered = [outcome.pid for outcome in outcomes if outcome.pid is not None]
    order = list(dict.fromkeys(answered))  # each worker, by its first answer
    # Between the successor's ready and the old worker's drain both accept:
    # the old one may answer a request or two after the successor's first,
    # never more.
    for old, new in itertools.pairwise(order):
        overlap = sum(1 for pid in answered[answered.index(new) :] if pid == old)
        assert overlap <= 2, f"worker {old} answered {overlap} requests after its successor {new}: {answered}"
    counts = per_worker(outcomes)
    finished = [counts[pid] for pid in order[:-1]]  # the last one is still serving
    assert len(finished) >= 2, counts
    # A worker asks to be replaced at N..N+J and serves on until its successor is ready.
    assert all(count >= 20 for count in finished), finished
    for pid in order[:-1]:
        assert f"worker {pid} served --max-requests: replacing it" in server.stderr.text(), server.excerpt(80)
