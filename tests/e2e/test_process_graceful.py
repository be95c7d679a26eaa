"""Graceful stop (issue 4 item 3): SIGTERM/SIGINT to the supervisor stop accepting, close idle connections,
let in-flight requests finish up to --graceful-timeout, run the ASGI lifespan shutdown and exit 0; a second
signal exits at once.
"""

from __future__ import annotations

import signal
import time
from typing import TYPE_CHECKING

import pytest
from process_support import TARGETS, alive, connect_refused, expect_exit, wait_for_workers
from rawhttp import ConnectionClosedError, RawConnection, request

pytest_plugins = ("process_support",)

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server


def assert_lifespan_shutdown_ran(server: Server, pids: set[int]) -> None:
    """Every ASGI worker ran the lifespan shutdown (marker file and event)."""
    for pid in pids:
        assert (server.state / f"shutdown-{pid}").exists(), f"worker {pid}: no lifespan shutdown; {server.events()}"
        assert f"lifespan.shutdown {pid}" in server.events()


@pytest.mark.parametrize(
    ("kind", "signum"),
    [("wsgi", signal.SIGTERM), ("asgi", signal.SIGTERM), ("wsgi", signal.SIGINT)],
    ids=["wsgi-SIGTERM", "asgi-SIGTERM", "wsgi-SIGINT"],
)
def test_stop_signal_lets_a_slow_request_finish(serve: Callable[..., Server], kind: str, signum: int) -> None:
    server = serve(TARGETS[kind], "--workers", "2")
    pids = wait_for_workers(server, 2)
    idle = RawConnection.to(server)
    idle.send(request("GET", "/hello"))
    assert idle.read_response().status == 200
    with RawConnection.to(server, timeout=15) as slow:
        slow.send(request("GET", "/slow?s=2"))
        slow_pid = wait_slow_started(server)
        server.process.send_signal(signum)
        signalled = time.monotonic()
        time.sleep(0.3)
        refused = connect_refused(server)  # asserted last, so a failure here does not hide the rest
        response = slow.read_response()
        finished = time.monotonic()
    assert (response.status, response.body) == (200, b"slow done"), response
    assert 1.2 < finished - signalled < 3.5, f"the slow request ended {finished - signalled:.1f}s after the signal"
    assert idle.closed_by_server(3), "an idle keep-alive connection was not closed on the stop signal"
    assert idle.buffer == b"", idle.buffer
    idle.close()
    exited = expect_exit(server, 0, timeout=10)
    assert exited - signalled < 4, f"exited {exited - signalled:.1f}s after the signal"
    assert server.crash_text() is None, server.excerpt()
    if kind == "asgi":
        assert_lifespan_shutdown_ran(server, pids)
        events = server.events()
        assert events.index(f"slow finished {slow_pid}") < events.index(f"lifespan.shutdown {slow_pid}"), events
    assert refused, "a new connection was accepted (by the kernel, on the still-open listener) after the stop signal"


def wait_slow_started(server: Server, timeout: float = 5.0) -> int:
    """Wait for the slow request to start; the worker running it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for event in server.events():
            if event.startswith("slow started "):
                return int(event.rsplit(" ", 1)[1])
        time.sleep(0.02)
    pytest.fail(f"the slow request did not start within {timeout:.0f}s: {server.events()}")


@pytest.mark.parametrize("kind", ["wsgi", "asgi"])
def test_graceful_timeout_aborts_the_request_that_remains(serve: Callable[..., Server], kind: str) -> None:
    server = serve(TARGETS[kind], "--graceful-timeout", "1000")
    pids = wait_for_workers(server, 1)
    with RawConnection.to(server, timeout=15) as slow:
        slow.send(request("GET", "/slow?s=5"))
        assert wait_slow_started(server) in pids
        server.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        with pytest.raises(ConnectionClosedError):
            slow.read_response()
        aborted = time.monotonic() - signalled
    assert 0.7 < aborted < 2.0, f"the request was cut {aborted:.1f}s after SIGTERM with --graceful-timeout 1000"
    exited = expect_exit(server, 0, timeout=10)
    assert exited - signalled < 3, f"exited {exited - signalled:.1f}s after SIGTERM with --graceful-timeout 1000"
    assert server.crash_text() is None, server.excerpt()
    if kind == "asgi":
        assert_lifespan_shutdown_ran(server, pids)


@pytest.mark.parametrize("kind", ["wsgi", "asgi"])
def test_a_second_signal_exits_at_once(serve: Callable[..., Server], kind: str) -> None:
    server = serve(TARGETS[kind], "--workers", "2")
    pids = wait_for_workers(server, 2)
    with RawConnection.to(server, timeout=15) as slow:
        slow.send(request("GET", "/slow?s=8"))
        wait_slow_started(server)
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        assert server.process.poll() is None, "the first SIGTERM did not wait for the slow request"
        server.process.send_signal(signal.SIGTERM)
        second = time.monotonic()
        server.process.wait(5)
        exited = time.monotonic() - second
        assert exited < 1.0, f"exited {exited:.1f}s after the second SIGTERM"
        assert slow.closed_by_server(2), "the slow request's connection survived the second signal"
    server.stopped = True
    for pid in pids:  # the workers went with it
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.05)
        assert not alive(pid), f"worker {pid} outlived a second SIGTERM"
