"""openloop (benchmarks/openloop), the fixed-rate HTTP/1.1 latency client of the harness's open-loop mode (issue 20
point 4), against small asyncio servers whose delays are known, so its figures can be checked:

- its histogram and response parser pass their unit checks (check.c: quantiles within 1%, exact below 1 ms;
  Content-Length, chunked, 1xx, 204/304, Connection: close; whole, split at every byte, with trailing bytes;
  every malformed case an error);
- a server that delays every 20th response by 150 ms: p90 well under the delay, p99 at or above it, the achieved
  rate the scheduled one, no errors;
- coordinated omission: one connection, one request at a time (-q), a server that stalls once for a second.
  The requests that fell due during the stall wait behind it and are measured from when they were due (wrk2's
  correction), so p90 is hundreds of milliseconds, where a closed-loop client would show one slow request;
- pipelining: without -q, requests due during that stall are written at once (the server sees them arrive
  while it stalls); a server that ignores pipelined requests makes openloop fall back to one at a time on that
  connection, after which every request is answered;
- chunked responses, and a server that closes every 7th connection with `Connection: close`: no error;
- non-2xx statuses are counted by class; a refused connection is an error (exit 1); a bad command line exits 2.

Bounds are generous (a loaded 2-core CI machine): the delays are 150 ms or more, the rates low.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterator

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "benchmarks" / "openloop" / "build.sh"


@pytest.fixture(scope="module")
def openloop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The openloop executable (and openloop-check beside it), built for this module."""
    directory = tmp_path_factory.mktemp("openloop")
    built = subprocess.run([str(BUILD), "--check", str(directory)], capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    assert built.stderr == "", built.stderr  # -Wall -Wextra clean
    return Path(built.stdout.strip())


@dataclass
class Behaviour:
    """What the test server does; it answers every request of a connection in order (pipelining allowed)."""

    #: Delay every `delay_every`-th response (counted over all connections) by `delay` seconds.
    delay_every: int = 0
    delay: float = 0.0
    #: Stall once, before answering the `stall_at`-th request (1-based, over all connections), for `stall` s.
    stall_at: int = 0
    stall: float = 0.0
    #: Answer with the chunked transfer coding instead of Content-Length.
    chunked: bool = False
    #: Add `Connection: close` to every `close_every`-th response of a connection, then close it.
    close_every: int = 0
    #: Answer only the first request of what arrives together, and discard what arrives while answering it:
    #: a server that does not support pipelining.
    naive: bool = False
    #: Close the connection when a request arrives while an earlier one is being answered.
    refuse_pipelining: bool = False
    status: int = 200
    #: What happened: the arrival time of each request, the stall's start and end, connections accepted.
    arrivals: list[float] = field(default_factory=list)
    stalled: tuple[float, float] | None = None
    connections: int = 0
    answered: int = 0
    closed: int = 0


class _Connection(asyncio.Protocol):
    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.buffer = b""
        self.pending: asyncio.Queue[None] = asyncio.Queue()
        self.busy = False
        self.responses = 0
        self.transport: asyncio.Transport | None = None
        self.worker: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.behaviour.connections += 1
        self.worker = asyncio.get_running_loop().create_task(self.answer())

    def connection_lost(self, exc: Exception | None) -> None:
        if self.worker is not None:
            self.worker.cancel()

    def data_received(self, data: bytes) -> None:
        if self.behaviour.naive and self.busy:
            return  # dropped: this server reads one request at a time and loses what came with it
        if self.behaviour.refuse_pipelining and self.busy:
            assert self.transport is not None
            self.transport.close()
            return
        self.buffer += data
        while b"\r\n\r\n" in self.buffer:
            _, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            self.behaviour.arrivals.append(time.monotonic())
            self.pending.put_nowait(None)
            self.busy = True
            if self.behaviour.naive:
                self.buffer = b""
                break

    async def answer(self) -> None:
        behaviour = self.behaviour
        while True:
            await self.pending.get()
            behaviour.answered += 1
            number = behaviour.answered
            if behaviour.stall_at and number == behaviour.stall_at:
                began = time.monotonic()
                await asyncio.sleep(behaviour.stall)
                behaviour.stalled = (began, time.monotonic())
            elif behaviour.delay_every and number % behaviour.delay_every == 0:
                await asyncio.sleep(behaviour.delay)
            self.responses += 1
            close = behaviour.close_every > 0 and self.responses % behaviour.close_every == 0
            head = f"HTTP/1.1 {behaviour.status} X\r\n" + ("Connection: close\r\n" if close else "")
            body = b"Hello, world!"
            if behaviour.chunked:
                chunks = b"5\r\nHello\r\n8\r\n, world!\r\n0\r\n\r\n"
                message = (head + "Transfer-Encoding: chunked\r\n\r\n").encode() + chunks
            else:
                message = (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body
            assert self.transport is not None
            self.transport.write(message)
            self.busy = not self.pending.empty()
            if close:
                behaviour.closed += 1
                self.transport.close()
                return


@contextlib.contextmanager
def serving(behaviour: Behaviour) -> Iterator[int]:
    """Runs a server with `behaviour` on its own event loop thread; yields its port."""
    loop = asyncio.new_event_loop()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    started = threading.Event()

    async def main() -> None:
        server = await loop.create_server(lambda: _Connection(behaviour), sock=listener)
        started.set()
        async with server:
            await server.serve_forever()

    thread = threading.Thread(target=_run, args=(loop, main), daemon=True)
    thread.start()
    assert started.wait(10)
    try:
        yield port
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def _run(loop: asyncio.AbstractEventLoop, main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.set_event_loop(loop)
    task = loop.create_task(main())
    loop.run_forever()
    task.cancel()
    loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
    loop.close()


def run(openloop: Path, port: int, *arguments: str, timeout: float = 60) -> tuple[dict[str, Any], int, str]:
    """Runs openloop against the port; its JSON report (the one line on stdout), exit status and stderr."""
    done = subprocess.run(
        [str(openloop), *arguments, f"http://127.0.0.1:{port}/hello"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.stdout.count("\n") == 1, (done.stdout, done.stderr)
    return json.loads(done.stdout), done.returncode, done.stderr


def test_histogram_and_parser_unit_checks(openloop: Path) -> None:
    checked = subprocess.run([str(openloop.parent / "openloop-check")], capture_output=True, text=True, check=False)
    assert (checked.returncode, checked.stdout) == (0, "ok\n"), checked.stdout


def test_every_20th_response_delayed_shows_at_p99_not_p90(openloop: Path) -> None:
    # 100 requests/s over 20 connections: a connection's requests are 200 ms apart, more than the 150 ms delay, so
    # a delayed response holds up no other; exactly 5% of the responses are late by 150 ms. The delay is long and
    # the p90 bound half of it, so a loaded machine's scheduling hiccups (tens of ms) cannot cross either bound.
    behaviour = Behaviour(delay_every=20, delay=0.15)
    with serving(behaviour) as port:
        report, status, stderr = run(openloop, port, "-R", "100", "-c", "20", "-d", "3", "-w", "0.5")
    assert status == 0, (stderr, report)
    assert report["errors"] == 0, report
    assert report["scheduled"] == 300, report
    assert report["requests"] == 300, report
    assert report["status"]["2xx"] == 300, report
    assert 85 <= report["rps"] <= 105, report
    latency = report["latency_us"]
    assert latency["p50"] < 75_000, report
    assert latency["p90"] < 75_000, report
    assert latency["p99"] >= 150_000, report
    assert latency["max"] >= 150_000, report
    assert latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["p99_9"] <= latency["max"]
    assert report["connections"] == 20
    assert behaviour.connections == 20
    assert report["reconnects"] == 0
    assert report["cpu_seconds"] > 0


def test_latency_counts_from_the_intended_send_time(openloop: Path) -> None:
    # One connection, one request at a time, 50/s; the server stalls once for 1 s. The ~50 requests due during
    # the stall are sent late, one after another, and each is measured from when it was due: their latencies
    # spread from 1 s down to 0, so p90 (of 150) sits among them. A closed-loop client would record one slow
    # request (p90 a few ms).
    behaviour = Behaviour(stall_at=40, stall=1.0)
    with serving(behaviour) as port:
        report, status, stderr = run(openloop, port, "-q", "-R", "50", "-c", "1", "-d", "3", "-w", "0.2")
    assert status == 0, stderr
    assert behaviour.stalled is not None
    assert report["errors"] == 0
    assert report["requests"] == report["scheduled"] == 150
    latency = report["latency_us"]
    assert latency["p50"] < 100_000
    assert latency["p90"] >= 300_000
    assert latency["max"] >= 900_000
    # One at a time: nothing arrived while the server stalled.
    began, ended = behaviour.stalled
    assert not [arrival for arrival in behaviour.arrivals if began + 0.05 < arrival < ended - 0.05]
    # wrk2's correction is not a send lag: the requests were written as soon as the connection was free.
    assert report["send_lag_us"]["max"] >= 900_000


def test_requests_due_during_a_stall_are_pipelined(openloop: Path) -> None:
    # The same stall without -q: requests are written when due, behind the one not yet answered (RFC 9112
    # §9.3.2), and the server sees them arrive while it stalls.
    behaviour = Behaviour(stall_at=40, stall=1.0)
    with serving(behaviour) as port:
        report, status, stderr = run(openloop, port, "-R", "50", "-c", "1", "-d", "3", "-w", "0.2")
    assert status == 0, stderr
    assert behaviour.stalled is not None
    assert report["errors"] == 0
    assert report["fallbacks"] == 0
    assert report["requests"] == 150
    began, ended = behaviour.stalled
    assert len([arrival for arrival in behaviour.arrivals if began < arrival < ended]) >= 20
    assert report["latency_us"]["p90"] >= 300_000
    assert report["send_lag_us"]["p99"] < 500_000


def test_a_server_that_drops_pipelined_requests_gets_one_at_a_time(openloop: Path) -> None:
    # A server that loses whatever came with the request it is answering: openloop's probe (two requests in one
    # write, before the schedule starts) gets one answer, so the run writes one request at a time. Had it
    # pipelined, every response after a lost request would have been taken for the one before it.
    behaviour = Behaviour(naive=True)
    with serving(behaviour) as port:
        report, status, stderr = run(openloop, port, "-R", "40", "-c", "2", "-d", "2", "-w", "0.5", "-t", "0.5")
    assert status == 0, stderr
    assert report["pipelining"] is False
    assert "did not answer two pipelined requests" in stderr
    assert report["errors"] == 0
    assert report["requests"] == report["scheduled"] == 80


def test_a_connection_closed_on_pipelined_requests_falls_back(openloop: Path) -> None:
    # This server answers requests that come together, but closes a connection on which a request arrives while
    # it is still answering an earlier one. The probe passes; the stall then makes requests pile up, the server
    # closes, and openloop writes them again, one at a time on that connection, without an error.
    behaviour = Behaviour(refuse_pipelining=True, stall_at=30, stall=0.3)
    with serving(behaviour) as port:
        report, status, stderr = run(openloop, port, "-R", "40", "-c", "1", "-d", "2", "-w", "0.3", "-t", "2")
    assert status == 0, stderr
    assert report["pipelining"] is True
    assert report["fallbacks"] == 1
    assert report["reconnects"] == 1
    assert report["errors"] == 0
    assert report["requests"] == report["scheduled"] == 80
    assert "falls back to one request at a time" in stderr


def test_chunked_responses_and_connection_close(openloop: Path) -> None:
    behaviour = Behaviour(chunked=True, close_every=7)
    with serving(behaviour) as port:
        report, status, stderr = run(openloop, port, "-R", "200", "-c", "4", "-d", "2", "-w", "0.3")
    assert status == 0, stderr
    assert report["errors"] == 0
    assert report["requests"] == report["scheduled"] == 400
    assert report["status"]["2xx"] == 400
    assert report["reconnects"] >= 400 // 7 - 4
    assert report["reconnects"] == behaviour.closed  # one new connection for each the server closed


def test_statuses_are_counted_by_class(openloop: Path) -> None:
    behaviour = Behaviour(status=503)
    with serving(behaviour) as port:
        report, status, _ = run(openloop, port, "-R", "100", "-c", "2", "-d", "1", "-w", "0.2")
    assert status == 0  # answered, framed responses: not transport errors (the harness fails non-2xx rounds)
    assert report["status"] == {"2xx": 0, "3xx": 0, "4xx": 0, "5xx": 100}


def test_refused_connection_and_usage_errors(openloop: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    refused = subprocess.run(
        [str(openloop), "-R", "10", "-c", "1", "-d", "1", "-w", "0", "-t", "1", f"http://127.0.0.1:{port}/"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert refused.returncode == 1
    for arguments in (
        ["http://127.0.0.1:8000/"],  # no rate
        ["-R", "10", "https://127.0.0.1:8000/"],
        ["-R", "10", "http://localhost:8000/"],  # address literals only
        ["-R", "10", "-c", "0", "http://127.0.0.1:8000/"],
        ["-R", "10", "http://127.0.0.1/"],  # no port
    ):
        done = subprocess.run([str(openloop), *arguments], capture_output=True, text=True, timeout=10, check=False)
        assert done.returncode == 2, arguments
        assert "usage" in done.stderr
