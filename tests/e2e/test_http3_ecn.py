"""ECN on HTTP/3 (issue 15 point 5; RFC 9000 §13.4, RFC 9002 §7.1).

Every client talks to the server through `udp_impairment.ImpairedLink`, which reads the ECN field of each datagram
(IP_RECVTOS), counts the codepoints per direction and forwards the datagram with the same field, as a router does —
or marks an ECN-capable one CE (`ce_mark`), as a congested router does instead of dropping it.

- aioquic reads no ECN field and reports no counts: the server marks its first datagrams ECT(0) (at most the ten
  packets of the testing period, ECNValidation.testingPackets) and stops when an ACK of marked packets comes
  without counts (§13.4.2.1), which `peregrine_quic_path_events_total{event="ecn_validation_failed"}` counts;
- ngtcp2's `gtlsclient` does ECN: it marks its own datagrams ECT(0) (which the server counts and reports) and
  echoes our counts, so validation succeeds and every datagram of a download leaves ECT(0);
- with the link marking 5 % of the server's datagrams CE, the download completes intact with nothing dropped on the
  link, and the server counts valid CE increases (`event="ecn_ce"`), each a congestion event that reduces the
  window (QUICTests ECNTests show the reduction in both controllers with a fake clock).
"""

from __future__ import annotations

import asyncio
import hashlib
import http.client
import re
import shutil
import subprocess
import time
from typing import TYPE_CHECKING

import pytest
from h3client import H3Client
from tls_support import pattern
from udp_impairment import CE, DOWNSTREAM, ECT0, UPSTREAM, ImpairedLink, Impairment

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support", "process_support")

GTLSCLIENT = shutil.which("gtlsclient")
METRICS_LINE = re.compile(r"metrics on http://(?:\[[^\]]+\]|[^\s:/]+):(\d+)/metrics")
EVENT = re.compile(r'^peregrine_quic_path_events_total\{event="([a-z_]+)"\} (\d+)', re.MULTILINE)
#: ECNValidation.testingPackets: the marked packets sent before the server waits for proof.
TESTING_PACKETS = 10
NOT_ECT = 0


def path_events(server: Server) -> dict[str, int]:
    """The server's QUIC path event counters of ECN, from its metrics endpoint."""
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
    return {name: int(count) for name, count in EVENT.findall(body) if name.startswith("ecn_")}


def events_until(server: Server, done: Callable[[dict[str, int]], bool], timeout: float = 10.0) -> dict[str, int]:
    """Scrapes until `done` holds (a worker adds its counts after handling the datagrams that caused them)."""
    deadline = time.monotonic() + timeout
    while True:
        events = path_events(server)
        if done(events) or time.monotonic() > deadline:
            return events
        time.sleep(0.05)


def gtlsclient_download(port: int, directory: Path, path: str) -> bytes | None:
    assert GTLSCLIENT is not None
    directory.mkdir(parents=True, exist_ok=True)
    command = [GTLSCLIENT, "--exit-on-all-streams-close", "--no-quic-dump", "--no-http-dump",
               f"--download={directory}", "--timeout=30s", "-q", "127.0.0.1", str(port),
               f"https://127.0.0.1:{port}{path}"]  # fmt: skip
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=False)
    saved = directory / path.lstrip("/")
    return saved.read_bytes() if saved.exists() else None


@pytest.mark.timeout(60)
def test_server_marks_ect0_and_stops_for_a_client_without_ecn(
    serve: Callable[..., Server], tls_files: TLSFiles
) -> None:
    server = serve("tls_apps:asgi", *tls_files.server_options("--http3", "--metrics-port", "0"))
    with ImpairedLink(server.port) as link:
        client = H3Client(port=link.port, ca=tls_files.ca)

        async def one() -> int:
            async with client.open() as c:
                response = await c.request("GET", "/info", f"localhost:{link.port}", [], None)
                return int(response.status)

        assert asyncio.run(asyncio.wait_for(one(), 30)) == 200
        down, up = link.stats[DOWNSTREAM], link.stats[UPSTREAM]
    assert up.ecn == [up.received, 0, 0, 0], "aioquic sends unmarked datagrams"
    assert 1 <= down.ecn[ECT0] <= TESTING_PACKETS, down
    assert down.ecn[NOT_ECT] >= 1, f"marking went on after a failed validation: {down}"
    events = events_until(server, lambda e: e.get("ecn_validation_failed", 0) >= 1)
    assert events == {"ecn_ce": 0, "ecn_validation_failed": 1}


@pytest.mark.timeout(120)
@pytest.mark.skipif(GTLSCLIENT is None, reason="gtlsclient (Debian ngtcp2-client) is not installed")
def test_ecn_validates_with_ngtcp2(serve: Callable[..., Server], tls_files: TLSFiles, tmp_path: Path) -> None:
    server = serve("tls_apps:wsgi", *tls_files.server_options("--http3", "--metrics-port", "0"))
    n = 1 << 20
    with ImpairedLink(server.port) as link:
        body = gtlsclient_download(link.port, tmp_path, f"/big?n={n}")
        down, up = link.stats[DOWNSTREAM], link.stats[UPSTREAM]
    assert body is not None
    assert hashlib.sha256(body).digest() == hashlib.sha256(pattern(n)).digest()
    assert up.ecn[ECT0] >= 1, f"gtlsclient marks ECT(0): {up}"
    assert down.ecn[ECT0] == down.received, f"every datagram ECT(0): {down}"
    assert path_events(server) == {"ecn_ce": 0, "ecn_validation_failed": 0}


@pytest.mark.timeout(120)
@pytest.mark.skipif(GTLSCLIENT is None, reason="gtlsclient (Debian ngtcp2-client) is not installed")
def test_ce_marks_are_congestion_signals_without_loss(
    serve: Callable[..., Server], tls_files: TLSFiles, tmp_path: Path
) -> None:
    server = serve("tls_apps:wsgi", *tls_files.server_options("--http3", "--metrics-port", "0"))
    n = 2 << 20
    with ImpairedLink(server.port, down=Impairment(ce_mark=0.05), seed=5) as link:
        body = gtlsclient_download(link.port, tmp_path, f"/big?n={n}")
        down = link.stats[DOWNSTREAM]
    assert body is not None
    assert hashlib.sha256(body).digest() == hashlib.sha256(pattern(n)).digest()
    assert down.dropped == 0, down
    assert down.ce_marked >= 1, down
    assert down.ecn[ECT0] == down.received, f"the server kept marking: {down}"
    events = events_until(server, lambda e: e.get("ecn_ce", 0) >= 1)
    assert events["ecn_validation_failed"] == 0, events
    assert 1 <= events["ecn_ce"] <= down.ce_marked, events
    assert down.ecn[CE] == 0, "the server's datagrams leave ECT(0); CE is the link's doing"
