"""The ASGI lifespan protocol (issue 3 item 6).

Each test runs its own server with one worker thread (`--workers 1`; under
$PEREGRINE_TEST_WORKER_THREADS `--free-threaded --workers 1`): the lifespan runs once per worker
thread, and these tests count its events; lifespan across several worker
threads is test_lifespan_scope.py's and test_worker_threads.py's. On uvloop
and on plain asyncio. asgi_raw:app logs `lifespan.startup` and
`lifespan.shutdown` to the events file and writes `shutdown-marker` at
shutdown; the failing applications are asgi_raw's failing_startup,
raising_startup, no_lifespan and strict_http.
"""

from __future__ import annotations

import signal
import subprocess
from typing import TYPE_CHECKING

import pytest
from rawhttp import RawConnection, request

from conftest import launch

# Rewritten asserts in the shared helpers, which are also loaded as a plugin below.
pytest.register_assert_rewrite("asgi_support")
from asgi_support import LOOPS, ONE_WORKER, RAW, get_json, logged  # noqa: E402

#: The shared ASGI fixtures (`loop`, `raw_server`) live in asgi_support.
pytest_plugins = ("asgi_support",)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server

EXIT_TIMEOUT = 15


def test_startup_state_reaches_requests_and_shutdown_runs_on_stop(
    start_server: Callable[..., Server], loop: str
) -> None:
    server = start_server(RAW, *ONE_WORKER, *LOOPS[loop])
    assert server.events() == ["lifespan.startup"], "startup did not run exactly once before serving"
    state = get_json(server, "/state?tag=a")
    assert state["name"] == "asgi_raw"
    assert state["keys"] == ["name", "shared_list", "started_pid"]
    assert server.stop() == 0
    assert server.events() == ["lifespan.startup", "lifespan.shutdown"]
    assert (server.state / "shutdown-marker").read_text(encoding="utf-8") == "shutdown ran\n"


def test_shutdown_runs_after_in_flight_requests_finish_on_sigterm(
    start_server: Callable[..., Server], loop: str
) -> None:
    server = start_server(RAW, *ONE_WORKER, *LOOPS[loop])
    with RawConnection.to(server, timeout=20) as connection:
        connection.send(request("GET", "/slow?id=drain&seconds=1.5"))
        assert server.wait_for_event("slow started drain")
        server.process.send_signal(signal.SIGTERM)
        response = connection.read_response()
        assert (response.status, response.body) == (200, b"slow done")
    assert server.process.wait(EXIT_TIMEOUT) == 0, server.excerpt()
    assert server.events() == ["lifespan.startup", "slow started drain", "slow finished drain", "lifespan.shutdown"]
    assert (server.state / "shutdown-marker").exists()
    assert server.stop() == 0


def test_shutdown_runs_on_sigint(start_server: Callable[..., Server], loop: str) -> None:
    server = start_server(RAW, *ONE_WORKER, *LOOPS[loop])
    assert get_json(server, "/state?tag=b")["name"] == "asgi_raw"
    server.process.send_signal(signal.SIGINT)
    assert server.process.wait(EXIT_TIMEOUT) == 0, server.excerpt()
    assert server.events() == ["lifespan.startup", "lifespan.shutdown"]
    assert server.stop() == 0


def run_to_exit(target: str, loop: str, state: Path) -> tuple[int, str]:
    """Start `target` (which must not come up) and return its exit code and stderr."""
    process, _ = launch(target, "--host", "127.0.0.1", "--port", "0", *ONE_WORKER, *LOOPS[loop], state=state)
    try:
        _, stderr = process.communicate(timeout=EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
        pytest.fail(f"{target} kept running although its startup failed; stderr:\n{stderr}")
    return process.returncode, stderr


def test_lifespan_startup_failed_stops_the_server_with_the_message(tmp_path: Path, loop: str) -> None:
    code, stderr = run_to_exit("asgi_raw:failing_startup", loop, tmp_path)
    assert code != 0
    assert "database unreachable: cannot start" in stderr
    assert "listening on" not in stderr
    assert not any(marker in stderr for marker in ("Fatal error", "Segmentation", "Stack dump")), stderr


def test_exception_during_startup_stops_the_server_with_the_traceback(tmp_path: Path, loop: str) -> None:
    code, stderr = run_to_exit("asgi_raw:raising_startup", loop, tmp_path)
    assert code != 0
    assert "RuntimeError: startup exploded while connecting" in stderr
    assert "Traceback" in stderr
    assert "listening on" not in stderr
    assert not any(marker in stderr for marker in ("Fatal error", "Segmentation", "Stack dump")), stderr


def test_an_application_without_lifespan_support_is_served_without_it(
    start_server: Callable[..., Server], loop: str
) -> None:
    server = start_server("asgi_raw:no_lifespan", *ONE_WORKER, *LOOPS[loop])
    assert logged(server, "does not support the ASGI lifespan protocol"), server.excerpt()
    assert logged(server, "only http is supported, not lifespan"), server.excerpt()
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/"))
        response = connection.read_response()
    assert (response.status, response.body) == (200, b"served without lifespan")
    assert server.stop() == 0


def test_no_lifespan_option_never_gives_the_application_a_lifespan_scope(
    start_server: Callable[..., Server], loop: str
) -> None:
    server = start_server("asgi_raw:strict_http", "--no-lifespan", *ONE_WORKER, *LOOPS[loop])
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/hello"))
        assert connection.read_response().body == b"hello"
    assert server.stop() == 0
    assert server.events() == [], "the application was given a lifespan scope under --no-lifespan"
    assert not (server.state / "shutdown-marker").exists()


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("asgi_raw:failing_shutdown", "ASGI lifespan shutdown failed: could not flush the cache"),
        ("asgi_raw:raising_shutdown", "RuntimeError: shutdown exploded"),
    ],
)
def test_a_failed_shutdown_is_logged_and_the_server_still_stops(
    start_server: Callable[..., Server], loop: str, target: str, words: str
) -> None:
    server = start_server(target, *ONE_WORKER, *LOOPS[loop])
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/"))
        assert connection.read_response().body == b"up"
    assert server.stop() == 0
    assert server.events() == ["shutdown asked"]
    assert words in server.stderr.text(), server.excerpt()


def test_a_long_shutdown_runs_to_its_end(start_server: Callable[..., Server], loop: str) -> None:
    # The worker's timers keep firing while the lifespan shutdown awaits: none of them may stop the loop
    # again before the shutdown completes (that failed with "Event loop stopped before Future completed").
    server = start_server("asgi_raw:slow_shutdown", *ONE_WORKER, *LOOPS[loop])
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/"))
        assert connection.read_response().body == b"up"
    assert server.stop() == 0
    assert server.events() == ["slow shutdown started", "slow shutdown done"], server.excerpt()
