"""Address validation, Retry, NEW_TOKEN, stateless reset and Initial floods (RFC 9000 §8.1, §10.3, §17.2.5;
TRANSPORT.md "Address validation, Retry, stateless reset, Initial floods").

aioquic's client follows a Retry and checks `original_destination_connection_id` and
`retry_source_connection_id` against it (§7.3), and keeps the NEW_TOKEN tokens it is given; the flood is
real Initials (aioquic's ClientHellos, each with its own connection ID) from many source ports.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from typing import TYPE_CHECKING

import pytest
from asgi_support import rss_kib
from h3client import H3_ALPN, H3Client
from process_support import wait_for_workers

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support",)

QuicConnection = pytest.importorskip("aioquic.quic.connection").QuicConnection
QuicConfiguration = pytest.importorskip("aioquic.quic.configuration").QuicConfiguration


def client(server: Server, files: TLSFiles, **settings: object) -> H3Client:
    return H3Client(port=server.port, ca=files.ca, **settings)  # type: ignore[arg-type]


@pytest.fixture
def h3_server(tls_server: Callable[..., Server]) -> Callable[..., Server]:
    def starter(target: str, *options: str) -> Server:
        return tls_server(target, "--http3", *options)

    return starter


@pytest.mark.parametrize("target", ["tls_apps:wsgi", "tls_apps:asgi"])
def test_quic_retry_handshake_completes(h3_server: Callable[..., Server], tls_files: TLSFiles, target: str) -> None:
    """--quic-retry: the client is sent a Retry, follows it, and its transport-parameter checks pass (§7.3)."""
    server = h3_server(target, "--quic-retry")
    c = client(server, tls_files)
    assert c.request("GET", "/info").status == 200
    assert c.connection_facts["retried"] is True


@pytest.mark.skipif(shutil.which("gtlsclient") is None, reason="gtlsclient (Debian ngtcp2-client) is not installed")
def test_gtlsclient_follows_retry(h3_server: Callable[..., Server], tmp_path: Path) -> None:
    """ngtcp2's client (another QUIC stack) receives the Retry, verifies its integrity tag (RFC 9001 §5.8), sends
    its Initial again to the Retry's connection ID with the token, and checks the transport parameters (§7.3).
    (Its --token-file cannot read back the NEW_TOKEN token it saved, in this ngtcp2 0.12 build, so NEW_TOKEN is
    tested with aioquic only.)"""
    server = h3_server("tls_apps:asgi", "--quic-retry", "--access-log")
    downloads = tmp_path / "dl"
    downloads.mkdir()
    command = [shutil.which("gtlsclient") or "gtlsclient", "--exit-on-all-streams-close", "--no-quic-dump",
               "--no-http-dump", f"--download={downloads}", "127.0.0.1", str(server.port),
               f"https://127.0.0.1:{server.port}/info"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    log = done.stdout + done.stderr
    assert (downloads / "info").exists(), log[-3000:]
    received = [line for line in log.splitlines() if " pkt rx " in line]
    assert any("type=Retry" in line for line in received), log[-3000:]
    assert server.stdout.wait_for(lambda line: '"GET /info HTTP/3" 200' in line, 5.0) is not None


def test_no_retry_by_default_and_new_token_sent(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    """Without --quic-retry and under the threshold no Retry; the server sends NEW_TOKEN (§8.1.3)."""
    server = h3_server("tls_apps:asgi")
    c = client(server, tls_files)
    assert c.request("GET", "/info").status == 200
    assert c.connection_facts["retried"] is False
    assert c.new_tokens, "no NEW_TOKEN frame"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_new_token_skips_retry(h3_server: Callable[..., Server], tls_files: TLSFiles, workers: str) -> None:
    """§8.1.3: a NEW_TOKEN token from an earlier connection validates the address: no Retry even with
    --quic-retry. With two workers the later connections land on either (their tokens are sealed with a
    key every worker derives from the supervisor's secret); each connection uses the token of the one before."""
    server = h3_server("tls_apps:asgi", "--quic-retry", "--workers", workers)
    first = client(server, tls_files)
    assert first.request("GET", "/info").status == 200
    assert first.connection_facts["retried"] is True
    token = first.new_tokens[-1]
    for _ in range(6):
        later = client(server, tls_files, token=token)
        assert later.request("GET", "/info").status == 200
        assert later.connection_facts["retried"] is False
        token = later.new_tokens[-1]


def test_reused_new_token_gets_retry(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    """§8.1.4: a NEW_TOKEN token validates once; a second use is treated as no token (a Retry)."""
    server = h3_server("tls_apps:asgi", "--quic-retry")
    first = client(server, tls_files)
    assert first.request("GET", "/info").status == 200
    token = first.new_tokens[-1]
    second = client(server, tls_files, token=token)
    assert second.request("GET", "/info").status == 200
    assert second.connection_facts["retried"] is False
    third = client(server, tls_files, token=token)
    assert third.request("GET", "/info").status == 200
    assert third.connection_facts["retried"] is True


def _short_header(size: int) -> bytes:
    return bytes([0x40 | 0x01]) + os.urandom(size - 1)


def _replies(sock: socket.socket, wait: float) -> list[bytes]:
    out: list[bytes] = []
    sock.settimeout(wait)
    try:
        while True:
            out.append(sock.recv(2048))
    except TimeoutError:
        return out


def test_stateless_reset_for_unknown_connection(h3_server: Callable[..., Server]) -> None:
    """§10.3: a short-header packet for no connection gets a Stateless Reset, smaller than it (§10.3.3);
    none for a packet of 21 bytes or less; rate-limited (100 per second per worker)."""
    server = h3_server("tls_apps:asgi")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("127.0.0.1", server.port))
        sock.send(_short_header(100))
        replies = _replies(sock, 1.0)
        assert len(replies) == 1
        assert len(replies[0]) == 43
        assert replies[0][0] & 0xC0 == 0x40
        sock.send(_short_header(30))
        assert [len(r) for r in _replies(sock, 1.0)] == [29]
        sock.send(_short_header(21))
        assert _replies(sock, 0.5) == []
        for _ in range(400):
            sock.send(_short_header(60))
        flood = _replies(sock, 1.0)
        assert 0 < len(flood) <= 150


def test_stateless_reset_after_worker_restart_carries_the_token_the_client_holds(
    h3_server: Callable[..., Server], tls_files: TLSFiles
) -> None:
    """§10.3.2: the worker that replaces a killed one (or its sibling) does not know the connection but
    computes its reset token from the connection ID under the key every worker derives from the supervisor's
    secret: the reset ends in exactly the token the client was given in the transport parameters."""
    server = h3_server("tls_apps:asgi", "--workers", "2")
    wait_for_workers(server, 2)
    c = client(server, tls_files)
    response = c.request("GET", "/info")
    assert response.status == 200
    pid = json.loads(response.body)["pid"]
    cid, token = c.connection_facts["peer_cid"], c.connection_facts["stateless_reset_token"]
    assert len(token) == 16
    os.kill(pid, signal.SIGKILL)
    wait_for_workers(server, 2, exclude={pid})
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("127.0.0.1", server.port))
        sock.send(bytes([0x41]) + cid + os.urandom(60))
        replies = _replies(sock, 2.0)
    assert [len(r) for r in replies] == [43]
    assert replies[0][-16:] == token


def _initials(port: int, n: int) -> list[bytes]:
    """`n` real client Initials (each its own ClientHello and connection ID)."""
    out: list[bytes] = []
    for _ in range(n):
        quic = QuicConnection(
            configuration=QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name="localhost")
        )
        now = time.monotonic()
        quic.connect(("127.0.0.1", port), now=now)
        out.append(quic.datagrams_to_send(now=now)[0][0])
    return out


def test_initial_flood_bounded_and_real_client_served(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    """Thousands of Initials per second from many source ports: past --quic-retry-threshold they get
    Retries and cost no state, memory stays bounded, and a real client that connects meanwhile (it
    follows its Retry) is served."""
    server = h3_server("tls_apps:asgi", "--quic-retry-threshold", "20")
    assert client(server, tls_files).request("GET", "/info").status == 200
    baseline = rss_kib(server)
    initials = _initials(server.port, 2000)
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(256)]
    stop = threading.Event()
    sent = [0]

    def flood() -> None:
        # About 3,000 Initials per second (bursts of 30 every 10 ms), for at most 10 seconds.
        started = time.monotonic()
        i = 0
        while not stop.is_set() and time.monotonic() - started < 10:
            for _ in range(30):
                sockets[i % len(sockets)].sendto(initials[i % len(initials)], ("127.0.0.1", server.port))
                i += 1
            sent[0] = i
            time.sleep(0.01)

    thread = threading.Thread(target=flood)
    thread.start()
    try:
        time.sleep(1.0)
        started = time.monotonic()
        real = client(server, tls_files, timeout=15.0)
        response = real.request("GET", "/info")
        elapsed = time.monotonic() - started
        assert response.status == 200
        assert real.connection_facts["retried"] is True
        during = rss_kib(server)
        flooded = sent[0]
    finally:
        stop.set()
        thread.join()
        for s in sockets:
            s.close()
    assert flooded >= 2000, flooded
    # Served while the flood went on, without waiting for it to end (aioquic's first retransmission is
    # after about a second: allow a few).
    assert elapsed < 5.0, elapsed
    # The threshold's 20 handshakes plus Retry traffic; unbounded state would be thousands of TLS sessions.
    assert during - baseline < 48 * 1024, (baseline, during)
    assert client(server, tls_files).request("GET", "/info").status == 200
