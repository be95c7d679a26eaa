"""WebTransport in the Prometheus metrics (issue 21 point 1: datagrams are "dropped and counted"; CONFIG.md's
metrics table): `peregrine_webtransport_sessions_total{result}`, `peregrine_webtransport_streams_total`,
`peregrine_webtransport_datagrams_total{direction}` and `peregrine_webtransport_datagrams_dropped_total{reason}`,
checked against the traffic this test sends with aioquic's client (draft-02, wtclient_aioquic.py):

- an echo session: one bidirectional stream, three datagrams echoed one at a time;
- a refused session (webtransport.reject 403);
- /control's `datagrams` command: the application sends one datagram past max_datagram_size (too_large) and a
  small one;
- a flood: /slow accepts and sleeps before receiving, and `--ws-max-queue 4` bounds its queue — the first four
  datagrams wait in it, the other sixteen are dropped (queue_full); the test waits on the counters, not on time.

Served application: tests/apps/wt_apps.py.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from test_metrics import key, metrics_port, scrape, settled, value
from wtclient_aioquic import SessionRefusedError, WebTransportClient, WTSession

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support", "process_support")

pytest.importorskip("prometheus_client.parser")

FLOOD = 20
QUEUE = 4


def test_webtransport_sessions_streams_and_datagrams_are_counted(
    serve: Callable[..., Server], tls_files: TLSFiles
) -> None:
    server = serve(
        "wt_apps:app",
        *tls_files.server_options("--http3", "--metrics-port", "0", "--ws-max-queue", str(QUEUE),
                                  "--graceful-timeout", "1000"),
    )  # fmt: skip
    port = metrics_port(server)

    async def echo(session: WTSession) -> list[bytes]:
        stream = await session.open_stream()
        session.send(stream, b"ping", end=True)
        assert await session.read(stream) == b"ping"
        echoed = []
        for i in range(3):  # one at a time: never more than one waits in the application's queue
            session.send_datagram(b"d%d" % i)
            echoed.append(await asyncio.wait_for(session.receive_datagram(), 10))
        session.close_session(0, "done")
        return echoed

    assert WebTransportClient(server.port).run("/echo?id=metrics", echo) == [b"d0", b"d1", b"d2"]

    async def accepted(session: WTSession) -> None:
        raise AssertionError("accepted")

    with pytest.raises(SessionRefusedError):
        WebTransportClient(server.port).run("/reject?status=403", accepted)

    async def control(session: WTSession) -> bytes:
        command = await session.open_stream()
        session.send(command, b"datagrams", end=True)
        small = await asyncio.wait_for(session.receive_datagram(), 10)
        session.close_session(0, "done")
        return small

    assert WebTransportClient(server.port).run("/control?id=metrics-dgram", control) == b"small"

    async def flood(session: WTSession) -> float:
        for i in range(FLOOD):
            session.send_datagram(b"flood %d" % i)
        # The application sleeps: wait until the worker has read every datagram of the flood.
        loop = asyncio.get_running_loop()
        while True:
            samples, _ = await loop.run_in_executor(None, scrape, port)
            received = value(samples, "peregrine_webtransport_datagrams_total", direction="in")
            if received >= 3 + FLOOD:
                break
            await asyncio.sleep(0.05)
        session.close_session(0, "done")
        return received

    assert WebTransportClient(server.port).run("/slow?id=metrics-flood&sleep=60", flood, timeout=60) == 3 + FLOOD

    settled(
        port,
        {
            key("peregrine_webtransport_sessions_total", result="accepted"): 3,
            key("peregrine_webtransport_sessions_total", result="refused"): 1,
            key("peregrine_webtransport_streams_total"): 2,  # the echo's and /control's command stream
            key("peregrine_webtransport_datagrams_total", direction="in"): 3 + FLOOD,
            key("peregrine_webtransport_datagrams_total", direction="out"): 3 + 1,
            key("peregrine_webtransport_datagrams_dropped_total", reason="queue_full"): FLOOD - QUEUE,
            key("peregrine_webtransport_datagrams_dropped_total", reason="too_large"): 1,
            key("peregrine_webtransport_datagrams_dropped_total", reason="no_session"): 0,
        },
        timeout=30,
    )
