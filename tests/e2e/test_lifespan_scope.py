"""`--lifespan-scope worker|process`: where the ASGI lifespan runs when one process has several worker threads.

Issue #16 point 4. The worker threads are `--free-threaded --workers 2` on a
free-threaded interpreter, and the internal `PEREGRINE_WORKER_CONTEXTS=2`
(the same code, the threads taking turns on the GIL) on one with the GIL:
the module runs against whichever interpreter the tests run on.

- `worker` (the default): a lifespan per thread, each on the loop that
  thread serves with, each with its own `state`; two startups, two
  shutdowns.
- `process`: one lifespan, on the main thread's loop (worker 0), before the
  other thread starts; requests on both threads get shallow copies of the
  one `state` dict (what a request on one thread appends to a list in it, a
  request on the other sees); one shutdown, after every thread drained (a
  slow request in flight on the other thread when SIGTERM comes finishes
  first); a failing startup fails the start with exit 2.
- With `--no-lifespan`, or a WSGI application, the option has no effect.

Application: tests/apps/lifespan_scope_apps.py (events with thread, loop and
time in `events.log`).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pytest
from process_support import expect_exit

from conftest import CRASH_MARKERS, launch
from installed import http_get, peregrine_command, server_python_facts

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server

APP = "lifespan_scope_apps:app"
FREE_THREADED = server_python_facts()["free_threaded"]
#: How the server names its threads in its banner.
KIND = "worker threads" if FREE_THREADED else "worker contexts"


def two_threads(monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """The options (and environment) for one worker process with two worker threads."""
    if FREE_THREADED:
        return ("--free-threaded", "--workers", "2")
    monkeypatch.setenv("PEREGRINE_WORKER_CONTEXTS", "2")
    return ()


def start_threads(
    start_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch, target: str, *options: str
) -> Server:
    server = start_server(target, *two_threads(monkeypatch), *options)
    assert server.stderr.wait_for(lambda line: f"in 2 {KIND}" in line, 15) is not None, server.excerpt()
    return server


def events(server: Server) -> list[dict[str, Any]]:
    return [json.loads(line) for line in server.events()]


def of_kind(server: Server, kind: str) -> list[dict[str, Any]]:
    return [event for event in events(server) if event["event"] == kind]


def get_json(server: Server, path: str = "/") -> dict[str, Any]:
    status, body = http_get(server.port, path, 30.0)
    assert status == 200, body
    answer: dict[str, Any] = json.loads(body)
    return answer


def until_both_threads_served(server: Server, limit: int = 200) -> list[dict[str, Any]]:
    """Sequential requests, each on a new connection, until both threads have answered one."""
    answers: list[dict[str, Any]] = []
    while len(answers) < limit:
        answers.append(get_json(server))
        if {answer["thread"] for answer in answers} == {"main", "other"}:
            return answers
    pytest.fail(f"{limit} requests were all served by the {answers[0]['thread']} thread")


def test_worker_scope_runs_a_lifespan_on_each_threads_own_loop(
    start_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_threads(start_server, monkeypatch, APP)
    answers = until_both_threads_served(server)
    startups = of_kind(server, "startup")
    assert sorted(event["thread"] for event in startups) == ["main", "other"], startups
    assert len({event["loop"] for event in startups}) == 2, startups
    # Each request's state is the one its own thread's startup made, on the
    # very loop that serves the request.
    started = {(event["ident"], event["loop"]) for event in startups}
    for answer in answers:
        assert (answer["ident"], answer["loop"]) in started, (answer, startups)
        assert (answer["state_ident"], answer["state_loop"]) == (answer["ident"], answer["loop"]), answer
    assert len({answer["hits_id"] for answer in answers}) == 2, answers
    assert not any(answer["leaked"] for answer in answers), answers
    assert server.stop() == 0
    shutdowns = of_kind(server, "shutdown")
    assert sorted(event["thread"] for event in shutdowns) == ["main", "other"], shutdowns
    assert {(event["ident"], event["loop"]) for event in shutdowns} == started
    # Each thread's shutdown sees only the requests its own thread served.
    assert sum(event["hits"] for event in shutdowns) == len(answers)
    assert "one lifespan for the process" not in server.stderr.text()


def test_worker_is_the_default_scope(start_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch) -> None:
    """Spelled out, `--lifespan-scope worker` is what no option gives (the test above)."""
    server = start_threads(start_server, monkeypatch, APP, "--lifespan-scope", "worker")
    assert sorted(event["thread"] for event in of_kind(server, "startup")) == ["main", "other"]


def test_process_scope_runs_one_startup_whose_state_both_threads_share(
    start_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_threads(start_server, monkeypatch, APP, "--lifespan-scope", "process")
    assert "one lifespan for the process" in server.stderr.text()
    startups = of_kind(server, "startup")
    assert [event["thread"] for event in startups] == ["main"], startups
    (startup,) = startups
    answers = until_both_threads_served(server)
    answers += [get_json(server) for _ in range(4)]
    other_loops = {answer["loop"] for answer in answers if answer["thread"] == "other"}
    assert other_loops, answers
    assert startup["loop"] not in other_loops, "the other thread serves with a loop of its own"
    for count, answer in enumerate(answers, 1):
        # Every scope's state is a copy of the one the startup filled on the
        # main thread's loop...
        assert (answer["state_ident"], answer["state_loop"]) == (startup["ident"], startup["loop"]), answer
        # ... holding the same list: each request, on either thread, sees
        # every request served before it, on both.
        assert answer["hits"] == [earlier["thread"] for earlier in answers[:count]], answer
    assert len({answer["hits_id"] for answer in answers}) == 1, answers
    # Shallow copies: a key a request sets on its scope["state"] stays its own.
    assert not any(answer["leaked"] for answer in answers), answers
    assert server.stop() == 0
    shutdowns = of_kind(server, "shutdown")
    assert [(event["thread"], event["loop"]) for event in shutdowns] == [("main", startup["loop"])], shutdowns
    assert shutdowns[0]["hits"] == len(answers)


def test_process_scope_shuts_down_after_every_thread_drained(
    start_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM while slow requests are in flight on both threads: the main
    thread's own requests end after 0.3 s, the other thread's after 3 s, and
    the one lifespan shutdown (on the main thread's loop) runs only then."""
    server = start_threads(start_server, monkeypatch, APP, "--lifespan-scope", "process", "--graceful-timeout", "10000")
    count = 8
    with ThreadPoolExecutor(count) as pool:
        futures = []
        for _ in range(count):
            futures.append(pool.submit(get_json, server, "/slow?ms=300&other-ms=3000"))
            time.sleep(0.05)
        deadline = time.monotonic() + 10
        while {event["thread"] for event in of_kind(server, "slow-start")} != {"main", "other"}:
            assert time.monotonic() < deadline, f"slow requests did not reach both threads: {events(server)}"
            time.sleep(0.05)
        server.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        answers = [future.result() for future in futures]
    expect_exit(server, 0, 20)
    assert {answer["thread"] for answer in answers} == {"main", "other"}, answers
    ends = of_kind(server, "slow-end")
    assert len(ends) == count, events(server)
    last_other_end = max(event["time"] for event in ends if event["thread"] == "other")
    last_main_end = max(event["time"] for event in ends if event["thread"] == "main")
    assert last_other_end > signalled, "the other thread's request was in flight when the stop came"
    assert last_main_end < last_other_end
    (shutdown,) = of_kind(server, "shutdown")
    assert shutdown["thread"] == "main"
    assert shutdown["time"] > last_other_end, events(server)
    assert shutdown["hits"] == count
    # The events log is written in order, too: the shutdown is the last line.
    assert events(server)[-1]["event"] == "shutdown"


def test_process_scope_startup_failure_fails_the_start_before_other_threads_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads = two_threads(monkeypatch)
    process, args = launch(
        "lifespan_scope_apps:failing",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        *threads,
        "--lifespan-scope",
        "process",
        state=tmp_path,
    )
    try:
        _, stderr = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"{' '.join(args)} still running after 30 s")
    assert process.returncode == 2, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("peregrine: error:")]
    assert errors == ["peregrine: error: ASGI lifespan startup failed: the lifespan_scope startup fails"], stderr
    assert "worker thread 1 serving" not in stderr, "the other thread started before the startup completed"
    for marker in CRASH_MARKERS:
        assert marker not in stderr, stderr
    startups = [json.loads(line) for line in (tmp_path / "events.log").read_text().splitlines()]
    assert [event["thread"] for event in startups] == ["main"], startups


def test_process_scope_with_no_lifespan_runs_none(
    start_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_threads(start_server, monkeypatch, APP, "--lifespan-scope", "process", "--no-lifespan")
    answers = until_both_threads_served(server)
    assert all(answer["state"] is None for answer in answers), answers
    assert server.stop() == 0
    assert events(server) == []


def test_process_scope_is_accepted_and_changes_nothing_for_wsgi(
    start_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_threads(start_server, monkeypatch, "thread_apps:wsgi", "--lifespan-scope", "process")
    bodies = set()
    for _ in range(200):
        status, body = http_get(server.port, "/", 30.0)
        assert status == 200, body
        bodies.add(body.split()[0])
        if bodies == {"main", "other"}:
            break
    assert bodies == {"main", "other"}
    assert "one lifespan for the process" not in server.stderr.text()


@pytest.mark.parametrize("value", ["thread", "", "PROCESSES"])
def test_a_bad_lifespan_scope_is_a_usage_error(value: str) -> None:
    result = subprocess.run(
        [*peregrine_command(), "--lifespan-scope", value, "lifespan_scope_apps:app"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=20,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("peregrine: error:")]
    assert errors == [f"peregrine: error: --lifespan-scope must be worker or process, got '{value}'"], result.stderr
