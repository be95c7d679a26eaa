"""Path MTU discovery on HTTP/3 (issue 15 point 5; RFC 9000 §14.3, RFC 8899 DPLPMTUD).

Each connection starts at 1,200-byte datagrams and, once its handshake is confirmed, probes upwards (PING + PADDING
packets of the probed size) to `--quic-max-datagram-size` (default 1,452); an acknowledged probe raises the size of
every datagram built after it. Loopback's MTU is 65,536, so there the search must stop at the configured maximum.
Through `udp_impairment.ImpairedLink` with `max_size` the link drops the server's datagrams above a size, as a path
with a smaller MTU does: the probes above it are lost (not congestion: the transfer is not slowed into a stall), the
binary search settles at most 16 bytes below the limit, and the download arrives intact. What the server sent is
read from the link's counters (largest datagram forwarded, datagrams dropped for their size) and from
`peregrine_quic_path_events_total{event="pmtu_raised"|"pmtu_black_hole"}`.

aioquic sends no max_udp_payload_size (so 65,527 applies) and acknowledges whatever arrives, which is all a probe
needs from the client.
"""

from __future__ import annotations

import asyncio
import hashlib
import http.client
import re
import threading
import time
from typing import TYPE_CHECKING

import pytest
from h3client import H3Client
from tls_support import pattern
from udp_impairment import DOWNSTREAM, UPSTREAM, ImpairedLink, Impairment

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support", "process_support")

METRICS_LINE = re.compile(r"metrics on http://(?:\[[^\]]+\]|[^\s:/]+):(\d+)/metrics")
EVENT = re.compile(r'^peregrine_quic_path_events_total\{event="([a-z_]+)"\} (\d+)', re.MULTILINE)
#: PathMTUDiscovery.maxProbes and .searchGranularity.
MAX_PROBES = 3
GRANULARITY = 16


def path_events(server: Server) -> dict[str, int]:
    line = server.stderr.wait_for(lambda text: METRICS_LINE.search(text) is not None, 10.0)
    assert line is not None, server.excerpt()
    match = METRICS_LINE.search(line)
    assert match is not None
    connection = http.client.HTTPConnection("127.0.0.1", int(match[1]), timeout=10)
    try:
        connection.request("GET", "/metrics")
        body = connection.getresponse().read().decode()
    finally:
        connection.close()
    return {name: int(count) for name, count in EVENT.findall(body)}


def events_until(server: Server, done: Callable[[dict[str, int]], bool], timeout: float = 10.0) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while True:
        events = path_events(server)
        if done(events) or time.monotonic() > deadline:
            return events
        time.sleep(0.05)


def download(port: int, files: TLSFiles, n: int) -> bytes:
    client = H3Client(port=port, ca=files.ca, timeout=60.0)

    async def one() -> bytes:
        async with client.open() as c:
            # Not `c.request`, which waits 10 s for the whole response: 8 MiB through the Python proxy into
            # aioquic, with a black hole to recover from, took longer than that in a CI run.
            stream_id = c.open(c.fields(b"GET", f"/big?n={n}".encode()), end_stream=True)
            c.transmit()
            response = await c.response(stream_id, timeout=80)
            assert response.status == 200
            return bytes(response.body)

    return asyncio.run(asyncio.wait_for(one(), 90))


def server(serve: Callable[..., Server], files: TLSFiles, *options: str) -> Server:
    return serve("tls_apps:asgi", *files.server_options("--http3", "--metrics-port", "0", *options))


@pytest.mark.timeout(90)
@pytest.mark.parametrize("maximum", [None, "1350", "4000"])
def test_datagrams_grow_to_the_configured_maximum(
    serve: Callable[..., Server], tls_files: TLSFiles, maximum: str | None
) -> None:
    s = server(serve, tls_files, *(("--quic-max-datagram-size", maximum) if maximum else ()))
    expected = int(maximum) if maximum else 1452
    n = 1 << 20
    with ImpairedLink(s.port) as link:
        body = download(link.port, tls_files, n)
        down = link.stats[DOWNSTREAM]
    assert hashlib.sha256(body).digest() == hashlib.sha256(pattern(n)).digest()
    assert down.largest == expected, f"the search stops at the maximum, not loopback's MTU: {down}"
    assert down.too_large == 0
    events = events_until(s, lambda e: e.get("pmtu_raised", 0) >= 1)
    assert events["pmtu_raised"] == 1, events  # the maximum first: one probe, one raise
    assert events["pmtu_black_hole"] == 0, events


@pytest.mark.timeout(90)
def test_no_discovery_at_1200(serve: Callable[..., Server], tls_files: TLSFiles) -> None:
    s = server(serve, tls_files, "--quic-max-datagram-size", "1200")
    with ImpairedLink(s.port) as link:
        assert len(download(link.port, tls_files, 200_000)) == 200_000
        down = link.stats[DOWNSTREAM]
    assert down.largest == 1200, down
    assert path_events(s)["pmtu_raised"] == 0


@pytest.mark.timeout(120)
@pytest.mark.parametrize("limit", [1300, 1400])
def test_a_smaller_path_mtu_is_found_and_the_transfer_completes(
    serve: Callable[..., Server], tls_files: TLSFiles, limit: int
) -> None:
    s = server(serve, tls_files)
    n = 2 << 20
    with ImpairedLink(s.port, down=Impairment(max_size=limit), seed=7) as link:
        body = download(link.port, tls_files, n)
        down, up = link.stats[DOWNSTREAM], link.stats[UPSTREAM]
    assert hashlib.sha256(body).digest() == hashlib.sha256(pattern(n)).digest()
    assert limit - GRANULARITY < down.largest_forwarded <= limit, f"settled below the link's limit: {down}"
    # Only probes were too large: MAX_PROBES per failed size of a binary search over 1200..1452.
    assert MAX_PROBES <= down.too_large <= MAX_PROBES * 8, down
    assert down.dropped == 0, down
    assert up.too_large == 0, up
    events = events_until(s, lambda e: e.get("pmtu_raised", 0) >= 1)
    assert events["pmtu_raised"] >= 1, events
    assert events["pmtu_black_hole"] == 0, events


@pytest.mark.timeout(120)
def test_a_path_mtu_that_shrinks_mid_transfer_is_a_black_hole(
    serve: Callable[..., Server], tls_files: TLSFiles
) -> None:
    """RFC 8899 §4.3: after the size was raised to 1,452 the link starts dropping everything above 1,250 bytes;
    every full datagram vanishes, probe timeouts pile up, and after three in a row the connection goes back to
    1,200 bytes: the download still arrives intact and the server counts the black hole."""
    s = server(serve, tls_files)
    n = 8 << 20
    result: list[bytes | BaseException] = []
    with ImpairedLink(s.port) as link:

        def run() -> None:
            try:
                result.append(download(link.port, tls_files, n))
            except BaseException as error:  # noqa: BLE001 (reported by the assertion below)
                result.append(error)

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 60
        while link.stats[DOWNSTREAM].largest_forwarded < 1452 or link.stats[DOWNSTREAM].bytes_received < n // 8:
            assert time.monotonic() < deadline, link.stats[DOWNSTREAM]
            assert thread.is_alive(), result
            time.sleep(0.002)
        link.set_impairment(DOWNSTREAM, Impairment(max_size=1250))
        thread.join(100)
        down = link.stats[DOWNSTREAM]
    assert len(result) == 1, "the download did not finish"
    body = result[0]
    assert isinstance(body, bytes), repr(body)
    assert hashlib.sha256(body).digest() == hashlib.sha256(pattern(n)).digest()
    assert down.too_large >= 1, down
    events = events_until(s, lambda e: e.get("pmtu_black_hole", 0) >= 1)
    assert events["pmtu_black_hole"] == 1, events
