"""Crash recovery (issue 4 item 2): dead workers are replaced, a crash loop ends the supervisor, stuck workers
are killed past --worker-timeout.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from typing import TYPE_CHECKING

import pytest
from process_support import (
    TARGETS,
    WSGI,
    Load,
    alive,
    connect_refused,
    describe,
    expect_exit,
    failures,
    get_pid,
    log_after,
    per_worker,
    stop_with,
    wait_for_workers,
    workers,
)
from rawhttp import ConnectionClosedError, RawConnection, request

from conftest import APPS, Lines, launch

pytest_plugins = ("process_support",)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server

#: A request to a killed worker may still be running this long after kill() returned (signal delivery).
KILL_SLACK = 0.1


def test_kill_9_under_load_fails_only_that_workers_connections(serve: Callable[..., Server]) -> None:
    server = serve(WSGI, "--workers", "3")
    before = wait_for_workers(server, 3)
    with Load(server, keepalive=6, fresh=3, path="/pid?ms=5") as load:
        load.wait_for_count(300, timeout=20)
        victim = max(per_worker(load.snapshot()).items(), key=lambda item: item[1])[0]
        mark = len(server.stderr.lines)
        os.kill(victim, signal.SIGKILL)
        killed = time.monotonic()
        line = log_after(server, rf"worker {victim} killed by signal 9; starting a replacement", mark, timeout=5)
        assert line is not None, server.excerpt(80)
        after = wait_for_workers(server, 3, exclude={victim})
        (replacement,) = after - before
        load.wait_for_count(load.count() + 600, timeout=20)
    outcomes = load.snapshot()
    for outcome in failures(outcomes):
        on_victim = outcome.previous_pid == victim or (outcome.first and outcome.started < killed + KILL_SLACK)
        assert on_victim, f"a request failed that was not on the killed worker {victim}'s connections:\n" + describe(
            failures(outcomes)
        )
    late = [o for o in outcomes if o.started > killed + KILL_SLACK and o.first]
    assert late, "no new connection was made after the kill"
    assert not failures(late), describe(failures(late))
    assert per_worker([o for o in outcomes if o.started > killed + 1]).get(replacement), "the replacement got nothing"
    assert victim not in per_worker([o for o in outcomes if o.started > killed + KILL_SLACK])


@pytest.mark.parametrize(
    ("how", "logged"),
    [("crash", "exited with status 1"), ("segv", "killed by signal 11"), ("fault", "killed by signal 11")],
    ids=["exit", "sigsegv-sent", "null-pointer"],
)
def test_a_worker_that_dies_is_replaced(serve: Callable[..., Server], how: str, logged: str) -> None:
    server = serve(WSGI, "--workers", "2")
    before = wait_for_workers(server, 2)
    mark = len(server.stderr.lines)
    with RawConnection.to(server) as connection:
        connection.send(request("GET", f"/{how}"))
        with pytest.raises(ConnectionClosedError):
            connection.read_response()
    line = log_after(server, rf"worker (\d+) {logged}; starting a replacement", mark, timeout=5)
    assert line is not None, server.excerpt(80)
    dead = int(re.search(rf"worker (\d+) {logged}", line)[1])  # type: ignore[index]
    assert dead in before
    after = wait_for_workers(server, 2, exclude={dead})
    assert len(after - before) == 1
    assert {get_pid(server) for _ in range(40)} <= after
    # The worker's own dying words (a segfault report) are expected here: check the exit, not the log.
    assert stop_with(server) == 0, server.excerpt(80)


CRASHY = '''\
"""Imports fine until a test rewrites it."""

import os


def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [str(os.getpid()).encode()]
'''

BROKEN = '''\
"""A deploy that broke the import."""

raise RuntimeError("crashy_app: broken by the deploy, cannot import")
'''


@pytest.mark.timeout(45)
def test_crash_loop_retries_with_backoff_then_exits_1(serve: Callable[..., Server], tmp_path: Path) -> None:
    (tmp_path / "crashy_app.py").write_text(CRASHY, encoding="utf-8")
    server = serve("crashy_app:app", "--python-path", str(tmp_path), cwd=tmp_path)
    (worker,) = wait_for_workers(server, 1)
    assert get_pid(server, "/") == worker
    (tmp_path / "crashy_app.py").write_text(BROKEN, encoding="utf-8")
    mark = len(server.stderr.lines)
    os.kill(worker, signal.SIGKILL)
    killed = time.monotonic()
    exited = expect_exit(server, 1, timeout=25)
    assert exited - killed < 20, f"gave up after {exited - killed:.1f}s"
    log = "\n".join(server.stderr.lines[mark:])
    assert f"worker {worker} killed by signal 9; starting a replacement" in log, log
    assert "failed to start 5 times in a row" in log, log
    assert "crashy_app: broken by the deploy" in log, "the import error's traceback is not in the log:\n" + log
    delays = [int(ms) for ms in re.findall(r"failed to start \(.*\); retrying in (\d+) ms", log)]
    assert delays == sorted(delays), delays
    assert len(delays) >= 3, f"expected the retries to be logged with growing delays: {delays}\n{log}"
    assert delays[-1] >= 4 * delays[0], delays
    assert exited - killed >= sum(delays) / 1000 - 0.5, "the retries did not wait as long as they said"
    assert not workers(server)


def run_until_exit(target: str, *options: str, state: Path, timeout: float = 15) -> tuple[int, float, Lines]:
    """Start a server that must end by itself; its exit status, how long it ran, and its standard error."""
    process, args = launch(target, *options, state=state)
    assert process.stderr is not None
    assert process.stdout is not None
    stderr, stdout = Lines(process.stderr), Lines(process.stdout)
    started = time.monotonic()
    try:
        code = process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"{' '.join(args)} still running after {timeout:.0f} s:\n{stderr.text()}")
    took = time.monotonic() - started
    stderr.join()
    stdout.join()
    return code, took, stderr


@pytest.mark.parametrize("count", ["1", "4"])
def test_first_generation_import_failure_exits_2_with_one_error(tmp_path: Path, count: str) -> None:
    code, took, stderr = run_until_exit("broken_import:app", "--port", "0", "--workers", count, state=tmp_path)
    text = stderr.text()
    assert code == 2, text
    assert took < 5, f"took {took:.1f}s to give up"
    errors = [line for line in stderr.lines if line.startswith("peregrine: error:")]
    assert len(errors) == 1, text
    assert "ZeroDivisionError: broken_import explodes at import time" in text
    assert "listening on" not in text
    assert (APPS / "broken_import.py").exists()


HANGING = '''\
"""An application whose import never finishes (a deploy waiting on something that never comes)."""

import time

time.sleep(3600)
'''


def test_a_first_worker_never_ready_is_killed_after_worker_timeout_and_the_server_exits(tmp_path: Path) -> None:
    (tmp_path / "hanging_app.py").write_text(HANGING, encoding="utf-8")
    code, took, stderr = run_until_exit(
        "hanging_app:app", "--port", "0", "--worker-timeout", "1500", "--python-path", str(tmp_path), state=tmp_path
    )
    text = stderr.text()
    assert code == 1, text
    assert 1.4 <= took < 6, f"gave up after {took:.1f}s"
    assert re.search(r"worker \d+ did not become ready within 1500 ms \(--worker-timeout\); killing it", text), text
    errors = [line for line in stderr.lines if line.startswith("peregrine: error:")]
    assert errors == ["peregrine: error: the worker failed to start (not ready within --worker-timeout, 1500 ms)"], text
    assert "listening on" not in text


@pytest.mark.timeout(45)
def test_a_replacement_never_ready_is_killed_and_retried_while_the_old_worker_serves(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    (tmp_path / "crashy_app.py").write_text(CRASHY, encoding="utf-8")
    server = serve("crashy_app:app", "--python-path", str(tmp_path), "--worker-timeout", "1500", cwd=tmp_path)
    (old,) = wait_for_workers(server, 1)
    (tmp_path / "crashy_app.py").write_text(HANGING, encoding="utf-8")
    mark = len(server.stderr.lines)
    server.process.send_signal(signal.SIGHUP)
    hupped = time.monotonic()
    killed = log_after(server, r"worker (\d+) did not become ready within 1500 ms \(--worker-timeout\)", mark, 8)
    assert killed is not None, server.excerpt(80)
    assert 1.4 <= time.monotonic() - hupped < 6
    retry = log_after(
        server, r"failed to start \(not ready within --worker-timeout, 1500 ms\); retrying in \d+ ms", mark, 5
    )
    assert retry is not None, server.excerpt(80)
    for _ in range(5):
        assert get_pid(server, "/", timeout=5) == old  # the old worker went on serving throughout
    assert alive(old)


@pytest.mark.parametrize("kind", ["wsgi", "asgi"])
def test_a_stuck_worker_is_killed_after_worker_timeout(serve: Callable[..., Server], kind: str) -> None:
    server = serve(TARGETS[kind], "--worker-timeout", "2000")
    (stuck,) = wait_for_workers(server, 1)
    mark = len(server.stderr.lines)
    blocked = RawConnection.to(server, timeout=15)
    blocked.send(request("GET", "/block"))
    assert server.wait_for_event(f"block started {stuck}", 5)
    started = time.monotonic()
    # Queued behind the stuck worker, in the kernel's accept queue: the replacement must answer it.
    with RawConnection.to(server, timeout=15) as waiting:
        waiting.send(request("GET", "/pid"))
        line = log_after(server, rf"worker {stuck} has not responded for \d+ ms", mark, timeout=8)
        assert line is not None, server.excerpt(80)
        noticed = time.monotonic() - started
        assert 1.5 <= noticed <= 5, f"killed {noticed:.1f}s after it blocked"
        assert log_after(server, rf"worker {stuck} killed by signal 9; starting a replacement", mark, 3), (
            server.excerpt(80)
        )
        response = waiting.read_response()
    answered = time.monotonic() - started
    assert response.status == 200, response
    (replacement,) = wait_for_workers(server, 1, exclude={stuck})
    assert int(response.body) == replacement
    assert answered <= 6, f"the queued request was answered {answered:.1f}s after the worker blocked"
    with pytest.raises(ConnectionClosedError):
        blocked.read_response()
    blocked.close()
    assert get_pid(server) == replacement


BIG_RESPONSE = '''\
"""An inline WSGI application with an 8 MiB response (wsgiref.validate-checked)."""

from wsgiref.validate import validator

BODY = bytes(range(256)) * (8 * 1024 * 1024 // 256)


@validator
def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(len(BODY)))])
    return [BODY]
'''


def test_a_worker_writing_to_a_slow_reader_is_not_taken_for_stuck(serve: Callable[..., Server], tmp_path: Path) -> None:
    """--worker-timeout is for an application that does not return: an inline WSGI response blocked on a
    client that reads slowly (its socket buffers full) keeps the worker heard from, and the body arrives whole."""
    (tmp_path / "big_app.py").write_text(BIG_RESPONSE, encoding="utf-8")
    server = serve("big_app:app", "--python-path", str(tmp_path), "--worker-timeout", "1500", cwd=tmp_path)
    (pid,) = wait_for_workers(server, 1)
    mark = len(server.stderr.lines)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)  # so that the server's writes block soon
    sock.connect(("127.0.0.1", server.port))
    sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    time.sleep(4.0)  # past --worker-timeout, the worker blocked in its write all along
    sock.settimeout(30)
    received = bytearray()
    while chunk := sock.recv(1 << 16):
        received += chunk
    sock.close()
    head, _, body = bytes(received).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), server.excerpt(30)
    assert body == bytes(range(256)) * (8 * 1024 * 1024 // 256)
    assert log_after(server, r"has not responded", mark, timeout=0.1) is None, server.excerpt(40)
    assert alive(pid)
    assert wait_for_workers(server, 1) == {pid}  # not replaced


def test_workers_do_not_outlive_a_killed_supervisor(serve: Callable[..., Server]) -> None:
    server = serve(WSGI, "--workers", "2")
    pids = wait_for_workers(server, 2)
    server.process.kill()
    server.process.wait()
    server.stopped = True
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.05)
    left = sorted(pid for pid in pids if alive(pid))
    assert not left, f"workers {left} still running 5 s after the supervisor was SIGKILLed"
    assert connect_refused(server), "the port still accepts connections with the supervisor gone"


@pytest.mark.timeout(45)
def test_a_broken_deploy_on_sighup_keeps_the_old_worker_serving_until_giving_up(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    (tmp_path / "crashy_app.py").write_text(CRASHY, encoding="utf-8")
    server = serve("crashy_app:app", "--python-path", str(tmp_path), cwd=tmp_path)
    (old,) = wait_for_workers(server, 1)
    (tmp_path / "crashy_app.py").write_text(BROKEN, encoding="utf-8")
    mark = len(server.stderr.lines)
    server.process.send_signal(signal.SIGHUP)
    hupped = time.monotonic()
    assert log_after(server, r"failed to start \(.*\); retrying in \d+ ms", mark, timeout=5), server.excerpt(80)
    served = 0
    while server.process.poll() is None and time.monotonic() - hupped < 25:
        try:
            pid = get_pid(server, "/", timeout=5)
        except (OSError, ConnectionClosedError):
            break
        assert pid == old
        served += 1
        time.sleep(0.2)
    assert served >= 10, f"the old worker stopped serving after {served} requests while the replacement was retried"
    exited = expect_exit(server, 1, timeout=25)
    assert exited - hupped < 20, f"gave up {exited - hupped:.1f}s after SIGHUP"
    assert "failed to start 5 times in a row" in "\n".join(server.stderr.lines[mark:]), server.excerpt(80)


SLOW_START = '''\
"""Imports slowly while the file `slow` exists beside it (the replacements of a test's SIGHUP)."""

import os
import pathlib
import time

if (pathlib.Path(__file__).parent / "slow").exists():
    time.sleep(3)


def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [str(os.getpid()).encode()]
'''


@pytest.mark.timeout(60)
def test_workers_killed_while_their_replacements_start_leave_one_worker_per_slot(
    serve: Callable[..., Server], tmp_path: Path
) -> None:
    """A SIGHUP's rolling restart is starting the replacement of one worker when both old workers die. The first
    one's slot is taken by the replacement already starting, the second's by a new worker, and the restart goes on:
    two workers in the end. A replacement of its own for the first (as before) left three for good, every later
    SIGHUP replacing all three (seen in an hour's soak, whose kills fell on its SIGHUPs)."""
    (tmp_path / "slow_start.py").write_text(SLOW_START, encoding="utf-8")
    server = serve("slow_start:app", "--workers", "2", "--python-path", str(tmp_path), cwd=tmp_path)
    old = wait_for_workers(server, 2)
    (tmp_path / "slow").write_text("")
    mark = len(server.stderr.lines)
    server.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 5
    while not workers(server) - old:  # the first replacement is starting (3 s of import)
        assert time.monotonic() < deadline, server.excerpt(40)
        time.sleep(0.02)
    for pid in old:
        os.kill(pid, signal.SIGKILL)
    (tmp_path / "slow").unlink()
    # Settled: every old worker gone, two new ones serving, and it stays so.
    deadline = time.monotonic() + 20
    while not (len(workers(server)) == 2 and not workers(server) & old):
        assert time.monotonic() < deadline, f"workers {workers(server)}:\n{server.excerpt(40)}"
        time.sleep(0.1)
    time.sleep(4)
    assert len(workers(server)) == 2, f"workers {workers(server)}:\n{server.excerpt(40)}"
    assert "replaces it" in "\n".join(server.stderr.lines[mark:]), server.excerpt(40)
    assert get_pid(server, "/") in workers(server)
    # A later SIGHUP replaces the two, one by one, and leaves two.
    settled = workers(server)
    server.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 20
    while workers(server) & settled or len(workers(server)) != 2:
        assert time.monotonic() < deadline, f"workers {workers(server)}:\n{server.excerpt(40)}"
        time.sleep(0.1)
    assert stop_with(server) == 0, server.excerpt(40)
