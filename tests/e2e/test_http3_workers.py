"""HTTP/3 across the process model (issue 14 point 7): several workers, SIGHUP, SIGTERM, worker threads, WSGI threads.

With `--workers N --http3` each worker context reads a UDP socket of its own in one SO_REUSEPORT group, and the
supervisor's classic BPF program steers every datagram by the connection ID the worker issued
(ARCHITECTURE.md "QUIC across workers"). What the tests check from outside:

- connections spread over the workers, and every request of one connection is answered by the same worker
  (a datagram steered elsewhere would be dropped as an unknown connection: its requests would time out);
- on SIGHUP the old worker keeps its connections' datagrams while it drains: it sends GOAWAY (RFC 9114 §5.2:
  first 2^62-4, then after a probe timeout the real identifier), finishes the streams in flight and closes with
  H3_NO_ERROR, while the new worker takes new connections; a client that honours GOAWAY loses no request;
- SIGTERM with --graceful-timeout lets a long request finish, and cuts what is still open past the timeout.

Applications: process_apps (`/pid?ms=N` answers the worker's pid, `/slow?s=S`) and tls_apps (`/info` JSON with
the pid, `/echo`, `/big`).
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from typing import TYPE_CHECKING

import pytest
from h3client import ConnectionClosedError, H3Client
from h3load import H3Load, describe, failures, per_worker, pids_per_connection, timeline
from process_support import TARGETS, expect_exit, log_after, wait_for_workers
from tls_support import pattern

if TYPE_CHECKING:
    from collections.abc import Callable

    from h3client import H3ClientConnection
    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support", "process_support")

TLS_TARGETS = ["tls_apps:wsgi", "tls_apps:asgi"]
READY = r"worker (\d+) ready; worker (\d+) draining"


def client(server: Server, files: TLSFiles, **settings: object) -> H3Client:
    return H3Client(port=server.port, ca=files.ca, **settings)  # type: ignore[arg-type]


@pytest.fixture
def h3_serve(serve: Callable[..., Server], tls_files: TLSFiles) -> Callable[..., Server]:
    """`h3_serve(target, *options)`: a fresh `--http3` server over the test certificate (process_support's
    `serve`: after the test it must stop cleanly and leave no worker behind)."""

    def starter(target: str, *options: str) -> Server:
        server = serve(target, *tls_files.server_options("--http3", *options))
        starter.servers.append(server)  # type: ignore[attr-defined]
        return server

    starter.servers = []  # type: ignore[attr-defined]
    return starter


def wait_for_handovers(server: Server, count: int, start: int, timeout: float = 15.0) -> list[tuple[int, int]]:
    """The first `count` `worker NEW ready; worker OLD draining` lines logged from line `start`."""
    deadline = time.monotonic() + timeout
    found: list[tuple[int, int]] = []
    while time.monotonic() < deadline:
        found = []
        for line in list(server.stderr.lines)[start:]:
            if "ready; worker" in line and "draining" in line:
                words = line.split()
                found.append((int(words[words.index("ready;") - 1]), int(words[words.index("draining") - 1])))
        if len(found) >= count:
            return found[:count]
        time.sleep(0.05)
    pytest.fail(f"expected {count} handovers within {timeout:.0f}s, saw {found}; stderr:\n{server.excerpt(80)}")


# MARK: - Connections across workers


@pytest.mark.timeout(120)
@pytest.mark.parametrize("target", TLS_TARGETS)
def test_connections_spread_over_two_workers_and_each_stays_on_its_own(
    h3_serve: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    server = h3_serve(target, "--workers", "2")
    started = wait_for_workers(server, 2)
    h3 = client(server, tls_files, timeout=90.0)
    body = bytes(range(256)) * 200  # 51,200 bytes: about 40 datagrams each way per upload

    async def one_connection() -> list[tuple[int, bool]]:
        """Six requests on one connection: /info, an upload, a download, three at once; (pid, checks) each."""
        async with h3.open() as connection:
            c: H3ClientConnection = connection
            authority = f"localhost:{server.port}"
            seen: list[tuple[int, bool]] = []
            info = await c.request("GET", "/info", authority, [], None)
            pid = json.loads(info.body)["pid"]
            seen.append((pid, info.status == 200))
            echo = await c.request("POST", "/echo", authority, [], body)
            seen.append((pid, echo.status == 200 and json.loads(echo.body)["length"] == len(body)))
            big = await c.request("GET", "/big?n=300000", authority, [], None)
            seen.append((pid, big.body == pattern(300_000)))
            for response in await asyncio.gather(*(c.request("GET", "/info", authority, [], None) for _ in range(3))):
                seen.append((json.loads(response.body)["pid"], response.status == 200))
            return seen

    async def many() -> list[list[tuple[int, bool]]]:
        return list(await asyncio.gather(*(one_connection() for _ in range(24))))

    results = asyncio.run(asyncio.wait_for(many(), 90.0))
    assert all(ok for seen in results for _, ok in seen), results
    per_connection = [{pid for pid, _ in seen} for seen in results]
    assert all(len(pids) == 1 for pids in per_connection), per_connection
    used = {next(iter(pids)) for pids in per_connection}
    # 24 connections whose first datagrams carry random connection IDs: all on one of two workers by chance
    # has probability 2^-23.
    assert used == started, (used, started)
    counts = {pid: sum(1 for pids in per_connection if pid in pids) for pid in used}
    assert all(n >= 2 for n in counts.values()), counts


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["wsgi", "asgi"])
def test_steady_load_on_two_workers_keeps_every_connection_on_one_worker(
    h3_serve: Callable[..., Server], tls_files: TLSFiles, kind: str
) -> None:
    server = h3_serve(TARGETS[kind], "--workers", "2")
    started = wait_for_workers(server, 2)
    with H3Load(client(server, tls_files), clients=6, path="/pid?ms=2", per_connection=(3, 12)) as load:
        load.wait_for_count(300, 60.0)
    outcomes = load.snapshot()
    assert not failures(outcomes), describe(failures(outcomes))
    assert len(outcomes) >= 300, len(outcomes)
    assert all(len(pids) == 1 for pids in pids_per_connection(outcomes).values())
    assert set(per_worker(outcomes)) == started, per_worker(outcomes)


# MARK: - SIGHUP and SIGTERM


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["wsgi", "asgi"])
def test_sighup_under_http3_load_fails_no_request(
    h3_serve: Callable[..., Server], tls_files: TLSFiles, kind: str
) -> None:
    server = h3_serve(TARGETS[kind], "--workers", "2")
    first = wait_for_workers(server, 2)
    h3 = client(server, tls_files)
    # Quick requests on connections of 1-20 requests, and slower ones always in flight during the handovers.
    with (
        H3Load(h3, clients=6, path="/pid?ms=1", per_connection=(1, 20)) as quick,
        H3Load(h3, clients=3, path="/pid?ms=300", per_connection=(2, 6)) as slow,
    ):
        marks: dict[str, float] = {}

        def answered_by(pids: set[int], what: str) -> None:
            """Wait until one of `pids` answered (a generation of WSGI workers busy with 300 ms requests can
            take seconds to drain, and only then do their clients reconnect to the next one)."""
            deadline = time.monotonic() + 20
            while not pids & set(per_worker(quick.snapshot() + slow.snapshot())) and time.monotonic() < deadline:
                time.sleep(0.05)
            marks[what] = time.monotonic()

        def handover(what: str) -> list[tuple[int, int]]:
            mark = len(server.stderr.lines)
            marks[f"SIGHUP {what}"] = time.monotonic()
            server.process.send_signal(signal.SIGHUP)
            found = wait_for_handovers(server, 2, mark)
            marks[f"handovers {what}"] = time.monotonic()
            return found

        answered_by(first, "first answered")
        time.sleep(0.5)
        handovers = handover("1")
        second = {new for new, _ in handovers}
        assert {old for _, old in handovers} == first
        answered_by(second, "second answered")
        time.sleep(0.5)
        handovers = handover("2")
        third = {new for new, _ in handovers}
        assert {old for _, old in handovers} == second
        answered_by(third, "third answered")
        time.sleep(0.5)
    outcomes = quick.snapshot() + slow.snapshot()
    bad = failures(outcomes)
    assert not bad, f"{len(bad)} of {len(outcomes)} failed:\n" + describe(bad)
    rejected = [o for o in outcomes if o.rejected]
    assert not rejected, f"{len(rejected)} of {len(outcomes)} rejected:\n" + describe(rejected)
    assert len(outcomes) > 50, f"only {len(outcomes)} requests"
    assert all(len(pids) == 1 for pids in pids_per_connection(outcomes).values())
    counts = per_worker(outcomes)
    for generation in (first, second, third):
        assert generation & set(counts), timeline(outcomes, marks)
    assert any(o.after_goaway for o in outcomes), "no response came after a GOAWAY"
    assert wait_for_workers(server, 2, exclude=first | second) == third
    for pid in first | second:
        assert log_after(server, rf"worker {pid} exited with status 0", timeout=10), server.excerpt(80)


def wait_slow_started(server: Server, timeout: float = 10.0) -> int:
    """Wait for process_apps' /slow to start; the worker running it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for event in server.events():
            if event.startswith("slow started "):
                return int(event.rsplit(" ", 1)[1])
        time.sleep(0.02)
    pytest.fail(f"the slow request did not start within {timeout:.0f}s: {server.events()}")


async def cannot_connect(h3: H3Client, seconds: float) -> bool:
    """Whether a new connection's handshake gets no answer for `seconds` (a stopping worker drops Initials)."""
    try:
        async with asyncio.timeout(seconds), h3.open():
            return False
    except TimeoutError:
        return True


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["wsgi", "asgi"])
def test_sigterm_lets_a_slow_http3_request_finish_then_closes_with_h3_no_error(
    h3_serve: Callable[..., Server], tls_files: TLSFiles, kind: str
) -> None:
    server = h3_serve(TARGETS[kind], "--workers", "2")
    wait_for_workers(server, 2)
    h3 = client(server, tls_files)

    async def scenario() -> tuple[float, float, bool, int, list[int], float]:
        async with h3.open() as connection:
            c: H3ClientConnection = connection
            authority = f"localhost:{server.port}"
            slow = asyncio.ensure_future(c.request("GET", "/slow?s=2", authority, [], None))
            await asyncio.to_thread(wait_slow_started, server)
            server.process.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            # The supervisor passes the signal on: a new handshake that reaches
            # a worker before the signal does is still (rightly) accepted, so
            # the check starts once a worker has begun to stop (the idle one;
            # the busy one is inside the slow call and reads no datagrams).
            stopping = await asyncio.to_thread(
                server.stderr.wait_for, lambda line: line.endswith("signal 15: stopping"), 5.0
            )
            assert stopping is not None, server.excerpt()
            refused = await cannot_connect(h3, 1.0)
            response = await slow
            finished = time.monotonic() - signalled
            assert (response.status, response.body) == (200, b"slow done"), response
            async with asyncio.timeout(5):
                received, code = await c.wait_close_received()
            # Before leaving the connection: aioquic's close waits out its draining period.
            exited = await asyncio.to_thread(expect_exit, server, 0, 10)
            return finished, received - signalled, refused, code, list(c.goaways), exited - signalled

    finished, closed, refused, code, goaways, exited = asyncio.run(scenario())
    assert 1.2 < finished < 3.5, f"the slow request ended {finished:.1f}s after SIGTERM"
    assert closed - finished < 2.0, f"the connection closed {closed - finished:.1f}s after the last response"
    assert code == 0x100, f"CONNECTION_CLOSE with 0x{code:x}, not H3_NO_ERROR"
    # RFC 9114 §5.2: first 2^62-4, then the first request stream not taken (the slow one was stream 0).
    assert goaways == [2**62 - 4, 4], goaways
    assert refused, "a new HTTP/3 connection was accepted after SIGTERM"
    assert exited - closed < 2, f"exited {exited - closed:.1f}s after the connection closed"
    assert server.crash_text() is None, server.excerpt()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["wsgi", "asgi"])
def test_graceful_timeout_cuts_the_http3_request_that_remains(
    h3_serve: Callable[..., Server], tls_files: TLSFiles, kind: str
) -> None:
    """ASGI: past the timeout the worker closes the connection (H3_REQUEST_CANCELLED) and exits. WSGI: the
    worker is inside the call, so its signal thread ends the process at the deadline, as over TCP; but a QUIC
    connection has no kernel state to reset, and with the whole server gone no worker is left to send a
    stateless reset (RFC 9000 §10.3), so the client learns at its idle timeout: the test sets
    --quic-idle-timeout 3000."""
    server = h3_serve(TARGETS[kind], "--graceful-timeout", "1000", "--quic-idle-timeout", "3000")
    wait_for_workers(server, 1)
    h3 = client(server, tls_files)

    async def scenario() -> tuple[float, float, int]:
        async with h3.open() as connection:
            c: H3ClientConnection = connection
            slow = asyncio.ensure_future(c.request("GET", "/slow?s=8", f"localhost:{server.port}", [], None))
            await asyncio.to_thread(wait_slow_started, server)
            server.process.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            exited = await asyncio.to_thread(expect_exit, server, 0, 10)
            with pytest.raises(ConnectionClosedError):
                await asyncio.wait_for(slow, 10)
            assert c.terminated is not None
            return exited - signalled, time.monotonic() - signalled, c.terminated.error_code

    exited, cut, code = asyncio.run(scenario())
    assert 0.7 < exited < 3.0, f"exited {exited:.1f}s after SIGTERM with --graceful-timeout 1000"
    if kind == "asgi":
        assert cut < 3.0, f"the request was cut {cut:.1f}s after SIGTERM"
        assert code == 0x10C, f"CONNECTION_CLOSE with 0x{code:x}, not H3_REQUEST_CANCELLED"
    else:
        assert cut < 5.5, f"the client learnt {cut:.1f}s after SIGTERM (idle timeout 3 s)"
    assert server.crash_text() is None, server.excerpt()


# MARK: - Worker threads and WSGI threads


@pytest.mark.timeout(120)
@pytest.mark.parametrize("target", ["context_apps:wsgi", "context_apps:asgi"])
def test_two_worker_threads_serve_http3_on_their_own_sockets(
    two_worker_threads: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    """Each worker thread (context) reads a UDP socket of its own; every request comes back whole to its own
    stream (context_apps echoes the tag and body), each connection is served by one thread, and both serve."""
    server = two_worker_threads(target, *tls_files.server_options("--http3"))
    h3 = client(server, tls_files, timeout=90.0)
    authority = f"localhost:{server.port}"

    async def one_connection(number: int) -> tuple[list[str], set[str]]:
        async with h3.open() as connection:
            c: H3ClientConnection = connection
            problems: list[str] = []
            threads: set[str] = set()

            async def one(index: int) -> None:
                tag = f"c{number}r{index}"
                body = (f"{tag}-" * (1 + (number * 7 + index) % 40)).encode()
                response = await c.request("POST", "/", authority, [(b"x-tag", tag.encode())], body)
                if response.status != 200 or response.body != b"tag=" + tag.encode() + b";body=" + body:
                    problems.append(f"{tag}: {response.status} {response.body[:60]!r}")
                if response.header(b"x-tag") != tag.encode():
                    problems.append(f"{tag}: x-tag {response.header(b'x-tag')!r}")
                threads.add((response.header(b"x-thread") or b"?").decode())

            await asyncio.gather(*(one(index) for index in range(4)))
            return problems, threads

    async def many() -> list[tuple[list[str], set[str]]]:
        return list(await asyncio.gather(*(one_connection(number) for number in range(16))))

    results = asyncio.run(asyncio.wait_for(many(), 90.0))
    problems = [problem for found, _ in results for problem in found]
    assert not problems, problems
    assert all(len(threads) == 1 for _, threads in results), [threads for _, threads in results]
    used = {thread for _, threads in results for thread in threads}
    assert len(used) == 2, f"16 connections all served by {used}"


@pytest.mark.timeout(120)
def test_wsgi_threads_serve_http3_requests_concurrently(h3_serve: Callable[..., Server], tls_files: TLSFiles) -> None:
    """--wsgi-threads 4: HTTP/3 requests go to the pool (QUICService.servePooled): four 500 ms requests on one
    connection take about 500 ms, not 2 s, and more requests than threads wait for one, none lost."""
    server = h3_serve("process_apps:wsgi", "--wsgi-threads", "4", "--workers", "1")
    wait_for_workers(server, 1)
    h3 = client(server, tls_files)
    authority = f"localhost:{server.port}"

    async def scenario() -> tuple[float, list[int], float, list[int]]:
        async with h3.open() as connection:
            c: H3ClientConnection = connection
            started = time.monotonic()
            four = await asyncio.gather(*(c.request("GET", "/pid?ms=500", authority, [], None) for _ in range(4)))
            four_took = time.monotonic() - started
            started = time.monotonic()
            ten = await asyncio.gather(*(c.request("GET", "/pid?ms=200", authority, [], None) for _ in range(10)))
            return four_took, [r.status for r in four], time.monotonic() - started, [r.status for r in ten]

    four_took, four, ten_took, ten = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert four == [200] * 4
    assert four_took < 1.2, f"four 500 ms requests took {four_took:.2f}s with 4 WSGI threads"
    assert ten == [200] * 10
    # Three rounds of 200 ms on four threads; serially it would be 2 s.
    assert 0.55 < ten_took < 1.6, f"ten 200 ms requests took {ten_took:.2f}s with 4 WSGI threads"
