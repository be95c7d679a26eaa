"""The worker threads of one process act as one worker towards the supervisor (issue #16 points 2-3).

Run here through the internal `PEREGRINE_WORKER_CONTEXTS=2` on the test
interpreter (with the GIL: the threads take turns, which is enough for what
is tested here); `--free-threaded` runs the same code with the threads in
parallel and is refused on an interpreter with the GIL (test_cli.py).

- A stop reaches every thread, and the process exits only when each has
  finished its requests (within --graceful-timeout).
- A thread that stops running its loop (an application blocking it) stops
  worker 0's heartbeat, so the supervisor replaces the process after
  --worker-timeout, as it replaces a wedged worker process.
- A thread whose ASGI lifespan startup fails fails the start of the
  process: one error line, exit 2.

Application: tests/apps/thread_apps.py.
"""

from __future__ import annotations

import http.client
import json
import shutil
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from process_support import expect_exit, log_after, wait_for_workers, workers

from conftest import launch
from installed import http_get, server_python_facts

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server


def get(server: Server, path: str, timeout: float = 30.0) -> tuple[int, str]:
    """GET `path` on a new connection: (status, body)."""
    return http_get(server.port, path, timeout)


@pytest.mark.parametrize("target", ["thread_apps:wsgi", "thread_apps:asgi"])
def test_a_stop_waits_for_the_requests_of_every_worker_thread(
    start_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    monkeypatch.setenv("PEREGRINE_WORKER_CONTEXTS", "2")
    server = start_server(target, "--graceful-timeout", "10000")
    assert server.stderr.wait_for(lambda line: "in 2 worker contexts" in line, 10) is not None
    # Requests in flight on both threads (2.5 s each) when the stop comes.
    count = 2 if target.endswith("wsgi") else 8
    with ThreadPoolExecutor(count) as pool:
        futures = []
        for _ in range(count):
            futures.append(pool.submit(get, server, "/slow?ms=2500"))
            time.sleep(0.05)
        time.sleep(0.5)
        server.process.send_signal(signal.SIGTERM)
        results = [future.result() for future in futures]
    assert [status for status, _ in results] == [200] * count, results
    assert {body.split()[0] for _, body in results} == {"main", "other"}, results
    expect_exit(server, 0, 15)


@pytest.mark.parametrize("target", ["thread_apps:wsgi", "thread_apps:asgi"])
def test_a_wedged_worker_thread_gets_its_process_replaced(
    start_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    monkeypatch.setenv("PEREGRINE_WORKER_CONTEXTS", "2")
    server = start_server(target, "--worker-timeout", "2000")
    assert server.stderr.wait_for(lambda line: "in 2 worker contexts" in line, 10) is not None
    (first,) = wait_for_workers(server, 1)
    mark = len(server.stderr.lines)
    # A few requests at once: the main thread answers its own after 0.2 s,
    # the first to land on the other thread wedges it.
    pool = ThreadPoolExecutor(6)
    for _ in range(6):
        pool.submit(get, server, "/wedge-other", 60.0)
        time.sleep(0.05)
    assert server.wait_for_event("wedged", 15), "no request reached the other worker thread"
    # The main thread still serves, but its heartbeat stops.
    assert get(server, "/")[0] == 200
    line = log_after(server, rf"worker {first} has not responded for \d+ ms \(--worker-timeout\); killing it", mark, 20)
    assert line is not None, server.excerpt(80)
    (second,) = wait_for_workers(server, 1, exclude={first})
    assert second != first
    assert get(server, "/")[0] == 200
    server.stop()
    pool.shutdown(wait=True, cancel_futures=True)
    assert first not in workers(server)


def test_a_worker_thread_whose_lifespan_startup_fails_fails_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PEREGRINE_WORKER_CONTEXTS", "2")
    process, args = launch("thread_apps:asgi_failing_other", "--host", "127.0.0.1", "--port", "0", state=tmp_path)
    try:
        _, stderr = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"{' '.join(args)} still running after 30 s")
    assert process.returncode == 2, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("peregrine: error:")]
    assert errors == ["peregrine: error: a worker thread could not start (see above)"], stderr
    assert "this thread's startup fails" in stderr


def test_modules_compiled_from_source_keep_immortal_constants_on_a_free_threaded_build(
    start_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """CPython 3.13t leaves the constants of code built by compile() mortal
    (gh-118527), and imports compile a module that has no .pyc that way:
    worker threads running the same function then contend on each constant's
    reference count (2 threads at 1.3x one instead of 2x, BENCHMARKS.md).
    The worker routes such compiles through marshal, as a .pyc load does.
    With the GIL, the import system is left as it is."""
    source = Path(__file__).parent.parent / "apps" / "constant_apps.py"
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copy(source, fresh / "constant_apps.py")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    free = server_python_facts()["free_threaded"]
    threads = ("--free-threaded", "--workers", "2") if free else ()
    server = start_server("constant_apps:wsgi", "--python-path", str(fresh), *threads)
    status, body = get(server, "/")
    assert status == 200, body
    result = json.loads(body)
    assert not (fresh / "__pycache__").exists()
    if result["gil"] or result["version"] != [3, 13]:
        assert result["loader"] == "SourceLoader.source_to_code", result
    else:
        assert result["refcount"] >= 2**32 - 1, result
        assert result["loader"] == "share_code_constants.<locals>.source_to_code", result


@pytest.mark.parametrize("target", ["thread_apps:wsgi", "thread_apps:asgi"])
def test_connections_spread_across_the_worker_threads_under_mixed_load(
    start_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    """Issue #16 point 2: under long keep-alive connections, short ones and
    one request per connection, each thread accepts within 2x as many
    connections as the other (the load board, see SupervisorLink).

    With WSGI requests that block for milliseconds on long keep-alive
    connections, the thread holding those is in a call most of the time and
    the other takes the new connections (as with processes, CONFIG.md):
    that mix is not this test's."""
    monkeypatch.setenv("PEREGRINE_WORKER_CONTEXTS", "2")
    server = start_server(target)
    assert server.stderr.wait_for(lambda line: "in 2 worker contexts" in line, 10) is not None
    accepted: dict[str, int] = {"main": 0, "other": 0}
    lock = threading.Lock()
    until = time.monotonic() + 3.0

    def client(requests_per_connection: int) -> None:
        while time.monotonic() < until:
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            for index in range(requests_per_connection):
                connection.request("GET", "/")
                response = connection.getresponse()
                where = response.read().decode().split()[0]
                if index == 0:
                    with lock:
                        accepted[where] += 1
                if time.monotonic() >= until:
                    break
            connection.close()

    with ThreadPoolExecutor(8) as pool:
        for future in [pool.submit(client, count) for count in (1000, 20, 5, 1) * 2]:
            future.result()
    low, high = sorted(accepted.values())
    assert low > 0, accepted
    assert high <= 2 * low, accepted
