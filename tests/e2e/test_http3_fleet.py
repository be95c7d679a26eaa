"""Issue 17's fleet options over HTTP/3: --health-path, --limit-concurrency, --drain-delay, --max-connection-age.

HTTP/3 asks the same questions as HTTP/1.1 and HTTP/2 at the same point (the request head is complete), and
answers on the request's stream; the connection lives on. Going away uses GOAWAY (RFC 9114 §5.2):

- --drain-delay: every connection gets GOAWAY with 2^62-4 (no new requests here, nothing refused) and new
  connections are still served (each gets the same GOAWAY with its first response); when the delay ends, the
  final GOAWAY follows and the connections close with H3_NO_ERROR;
- --max-connection-age: the first request past the age is served, and the connection goes away behind it
  (GOAWAY 2^62-4, then the real identifier, then CONNECTION_CLOSE H3_NO_ERROR).

Application: tests/apps/fleet_apps.py (`/slow?ms=N` answers `slow done`; anything else records `call PATH` and
answers `ok PID`).
"""

from __future__ import annotations

import asyncio
import signal
import time
from typing import TYPE_CHECKING

import pytest
from h3client import H3Client

pytest_plugins = ("tls_support",)

if TYPE_CHECKING:
    from collections.abc import Callable

    from h3client import H3ClientConnection, H3Response
    from tls_support import TLSFiles

    from conftest import Server

ASGI = "fleet_apps:asgi"
WSGI = "fleet_apps:wsgi"
TARGETS = [ASGI, WSGI]
ANNOUNCE = 2**62 - 4  # RFC 9114 §5.2: the largest identifier a server's GOAWAY may carry
H3_NO_ERROR = 0x100


@pytest.fixture
def h3_server(start_server: Callable[..., Server], tls_files: TLSFiles) -> Callable[..., Server]:
    def starter(target: str, *options: str) -> Server:
        return start_server(target, *tls_files.server_options("--http3", *options))

    return starter


def client(server: Server, files: TLSFiles) -> H3Client:
    return H3Client(port=server.port, ca=files.ca)


async def get(c: H3ClientConnection, server: Server, path: str) -> H3Response:
    return await c.request("GET", path, f"localhost:{server.port}", [], None)


async def wait_for(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def wait_started(server: Server, count: int) -> None:
    deadline = time.monotonic() + 10
    while server.events().count("slow started") < count:
        assert time.monotonic() < deadline, server.events()
        time.sleep(0.02)


# MARK: - --health-path


@pytest.mark.parametrize("target", TARGETS)
def test_the_health_path_is_answered_without_the_application(
    h3_server: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    server = h3_server(target, "--health-path", "/healthz", "--access-log")

    async def scenario() -> list[H3Response]:
        async with client(server, tls_files).open() as c:
            return [await get(c, server, path) for path in ("/healthz", "/healthz?full=1", "/other", "/healthz")]

    health, with_query, other, again = asyncio.run(scenario())
    for response in (health, with_query, again):
        assert (response.status, response.body) == (200, b"OK")
    assert other.status == 200
    assert other.body.startswith(b"ok ")
    assert server.calls() == ["call /other"]
    assert server.stdout.wait_for(lambda line: '"GET /other HTTP/3" 200' in line, 5) is not None
    assert not any("/healthz" in line for line in server.stdout.lines), "health checks are not logged"


# MARK: - --limit-concurrency


@pytest.mark.parametrize("target", TARGETS)
def test_streams_beyond_the_limit_get_503_with_retry_after_and_the_connection_lives_on(
    h3_server: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    # WSGI runs requests one at a time per worker: with threads, two run at once.
    threads = ("--wsgi-threads", "2") if target == WSGI else ()
    server = h3_server(target, "--limit-concurrency", "2", "--health-path", "/healthz", *threads)

    async def scenario() -> tuple[list[H3Response], list[tuple[H3Response, float]], H3Response, H3Response]:
        async with client(server, tls_files).open() as c:
            slow = [asyncio.ensure_future(get(c, server, "/slow?ms=1500")) for _ in range(2)]
            await asyncio.to_thread(wait_started, server, 2)
            refused = []
            for _ in range(5):
                started = time.monotonic()
                response = await get(c, server, "/over")
                refused.append((response, time.monotonic() - started))
            health = await get(c, server, "/healthz")  # never refused for the limit
            done = list(await asyncio.gather(*slow))
            after = await get(c, server, "/after")  # the slots are free again
            return done, refused, health, after

    done, refused, health, after = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert [(r.status, r.body) for r in done] == [(200, b"slow done")] * 2
    for response, took in refused:
        assert (response.status, response.body) == (503, b"Service Unavailable")
        assert response.header(b"retry-after") == b"1"
        assert took < 1.0
    assert health.status == 200
    assert after.status == 200
    assert "call /over" not in server.events()


def test_a_stream_the_client_resets_frees_its_slot(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = h3_server(ASGI, "--limit-concurrency", "1")

    async def scenario() -> tuple[int, int]:
        async with client(server, tls_files).open() as c:
            stream_id = c._quic.get_next_available_stream_id()
            slow = asyncio.ensure_future(get(c, server, "/slow?ms=5000"))
            await asyncio.to_thread(wait_started, server, 1)
            refused = (await get(c, server, "/while")).status
            c._quic.reset_stream(stream_id, 0x10C)  # H3_REQUEST_CANCELLED
            c._quic.stop_stream(stream_id, 0x10C)
            c.transmit()
            slow.cancel()
            # The application sees the request end and the slot is free: the next request is served.
            status = 503
            deadline = time.monotonic() + 5
            while status == 503 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                status = (await get(c, server, "/after")).status
            return refused, status

    refused, status = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert refused == 503
    assert status == 200


# MARK: - --drain-delay


@pytest.mark.parametrize("target", TARGETS)
def test_the_drain_delay_announces_goaway_serves_on_and_then_closes(
    h3_server: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    server = h3_server(target, "--health-path", "/healthz", "--drain-delay", "2500")
    h3 = client(server, tls_files)

    async def scenario() -> dict[str, object]:
        seen: dict[str, object] = {}
        async with h3.open() as kept:
            seen["before"] = (await get(kept, server, "/before")).status
            server.process.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            assert await asyncio.to_thread(
                server.stderr.wait_for, lambda line: "--drain-delay" in line and "draining" in line, 5
            )
            seen["announced"] = await wait_for(lambda: bool(kept.goaways), 2)
            seen["goaways kept, in the delay"] = list(kept.goaways)
            seen["health"] = (await get(kept, server, "/healthz")).status
            # A request the client still sends on the announced connection is served (nothing is refused yet).
            seen["kept"] = (await get(kept, server, "/kept")).status
            async with h3.open() as fresh:
                seen["fresh"] = (await get(fresh, server, "/fresh")).status
                seen["fresh announced"] = await wait_for(lambda: fresh.goaways == [ANNOUNCE], 2)
            seen["in the delay"] = time.monotonic() - signalled < 2.4
            # When the delay ends: the final GOAWAY and CONNECTION_CLOSE with H3_NO_ERROR.
            async with asyncio.timeout(6):
                _, code = await kept.wait_close_received()
            seen["closed"] = (time.monotonic() - signalled, code, list(kept.goaways))
            seen["exit"] = await asyncio.to_thread(server.process.wait, 15)
        return seen

    seen = asyncio.run(asyncio.wait_for(scenario(), 40))
    assert seen["before"] == 200
    assert seen["announced"], seen
    assert seen["goaways kept, in the delay"] == [ANNOUNCE]
    assert seen["health"] == 503
    assert seen["kept"] == 200
    assert seen["fresh"] == 200
    assert seen["fresh announced"], seen
    assert seen["in the delay"], "the checks above did not run inside the delay"
    closed_after, code, goaways = seen["closed"]  # type: ignore[misc]
    assert closed_after >= 2.4, f"closed {closed_after:.1f}s after SIGTERM, inside the 2.5 s delay"
    assert code == H3_NO_ERROR
    # The final GOAWAY names the first request stream not taken: /before, /healthz, /kept were 0, 4, 8.
    assert goaways == [ANNOUNCE, 12], goaways
    assert seen["exit"] == 0
    assert {"call /before", "call /kept", "call /fresh"} <= set(server.calls())


# MARK: - --max-connection-age


@pytest.mark.parametrize("target", TARGETS)
def test_an_old_connection_goes_away_after_its_next_response(
    h3_server: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    server = h3_server(target, "--max-connection-age", "600")

    async def scenario() -> tuple[int, list[int], int, list[int], int]:
        async with client(server, tls_files).open() as c:
            young = (await get(c, server, "/young")).status
            await asyncio.sleep(0.3)
            goaways_while_young = list(c.goaways)
            await asyncio.sleep(0.5)  # past 600 ms plus up to 10%
            old = (await get(c, server, "/old")).status
            async with asyncio.timeout(5):
                _, code = await c.wait_close_received()
            return young, goaways_while_young, old, list(c.goaways), code

    young, goaways_while_young, old, goaways, code = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert (young, old) == (200, 200)
    assert goaways_while_young == []
    assert goaways == [ANNOUNCE, 8], goaways  # /young was stream 0, /old stream 4
    assert code == H3_NO_ERROR


def test_connections_younger_than_the_age_are_kept(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = h3_server(ASGI, "--max-connection-age", "60000")

    async def scenario() -> tuple[list[int], list[int], bool]:
        async with client(server, tls_files).open() as c:
            statuses = []
            for _ in range(5):
                statuses.append((await get(c, server, "/x")).status)
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.5)
            return statuses, list(c.goaways), c.close_received is None

    statuses, goaways, open_ = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert statuses == [200] * 5
    assert goaways == []
    assert open_
