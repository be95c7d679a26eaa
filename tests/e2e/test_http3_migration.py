"""QUIC connection migration (issue 15 point 4; RFC 9000 §9, path validation §8.2), with two independent clients,
each against one worker and against `--workers 2`.

With several workers every datagram is steered to its worker by the connection ID it carries (a classic BPF
program on the SO_REUSEPORT group, ARCHITECTURE.md "QUIC across workers"), not by the 4-tuple: a client that
moves keeps reaching the worker that holds its connection. A datagram steered to another worker would meet an
unknown connection ID and be answered with a stateless reset, ending the download; so each two-worker case runs
several connections, and the one that moves also switches to a connection ID the server issued in
NEW_CONNECTION_ID (§5.1.1).

- `gtlsclient` (Debian ngtcp2-client) `--change-local-addr`: a new local UDP socket mid-download, the client
  validating the new path itself (PATH_CHALLENGE, answered on that path) before it moves there; the server then
  validates it too. With `--nat-rebinding` the client just moves, and the server validates the new path before
  lifting the anti-amplification limit. ngtcp2 0.12 sends nothing after such a move until it has something to
  send (a real NAT rebinding happens because the client sent), so there the move comes before the request
  (`--delay-stream`): the whole response starts on the new, unvalidated path. The frames are read from the
  client's qlog (its packet log on stdout would slow the download tenfold).
- aioquic: the client's socket is replaced by a new one mid-download, on a new port (a NAT rebinding) or on
  127.0.0.2 (a new address: the server resets its congestion state, §9.4); aioquic answers the server's
  PATH_CHALLENGE. A second request on the moved connection shows the new address in the access log (the
  worker follows the connection's peer address).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
from typing import TYPE_CHECKING

import pytest
from h3client import H3Client, H3ClientConnection
from process_support import wait_for_workers
from tls_support import pattern

if TYPE_CHECKING:
    from pathlib import Path

    from tls_support import TLSFiles

    from conftest import Server, ServerPool

pytest_plugins = ("tls_support",)

GTLSCLIENT = shutil.which("gtlsclient")
MIB = 1024 * 1024
SIZE = 8 * MIB
WORKERS = ["1", "2"]


@pytest.fixture
def migration_server(server_pool: ServerPool, tls_files: TLSFiles) -> object:
    """`migration_server(target, workers)`: the shared server for that application and process model."""

    def get(target: str, workers: str, *more: str) -> Server:
        model = ("--workers", "2") if workers == "2" else ()
        server = server_pool.get(target, *tls_files.server_options("--http3", "--access-log", *model, *more))
        if workers == "2":
            # Until the second worker has joined the SO_REUSEPORT group, every connection lands on the first.
            wait_for_workers(server, 2)
        return server

    return get


def connections(workers: str) -> int:
    """Connections per case: with two workers, enough that misrouting would show (each has a 1/2 chance)."""
    return 4 if workers == "2" else 1


# MARK: - gtlsclient


def gtlsclient(server: Server, downloads: Path, path: str, *options: str) -> tuple[str, list[list[str]]]:
    """Downloads `path` on one connection; the client's output and, from its qlog, the frame types of each
    packet it received, in order (and, as `["parameters", VALUE]`, the server's disable_active_migration)."""
    assert GTLSCLIENT is not None
    downloads.mkdir(exist_ok=True)
    qlog = downloads / "client.qlog"
    command = [GTLSCLIENT, "-q", f"--qlog-file={qlog}", "--exit-on-all-streams-close", "--no-http-dump",
               f"--download={downloads}", *options, "127.0.0.1", str(server.port),
               f"https://127.0.0.1:{server.port}{path}"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    received = []
    for line in qlog.read_text().split("\n") if qlog.exists() else []:
        record = line.strip("\x1e \r")
        if '"transport:packet_received"' in record:
            frames = json.loads(record)["data"].get("frames", [])
            received.append([frame["frame_type"] for frame in frames])
        elif '"transport:parameters_set"' in record and '"owner":"remote"' in record:
            parameters = json.loads(record)["data"]
            received.append(["parameters", str(parameters.get("disable_active_migration"))])
    return done.stdout + done.stderr, received


@pytest.mark.skipif(GTLSCLIENT is None, reason="gtlsclient (Debian ngtcp2-client) is not installed")
@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("mode", ["change-local-addr", "nat-rebinding"])
def test_gtlsclient_moves_mid_download(migration_server: object, tmp_path: Path, mode: str, workers: str) -> None:
    server = migration_server("tls_apps:wsgi", workers)  # type: ignore[operator]
    path = f"/big?n={SIZE}"
    for i in range(connections(workers)):
        options = ["--change-local-addr=30ms"]
        if mode == "nat-rebinding":
            options += ["--nat-rebinding", "--delay-stream=150ms"]
        downloads = tmp_path / f"dl{i}"
        log, received = gtlsclient(server, downloads, path, *options)
        saved = downloads / f"big?n={SIZE}"
        assert saved.exists(), log[-3000:]
        assert saved.read_bytes() == pattern(SIZE)
        # The server validated the path the client moved to (§9.3): its PATH_CHALLENGE reached the client, and
        # response data kept coming after it.
        challenged = [n for n, frames in enumerate(received) if "path_challenge" in frames]
        assert challenged, log[-3000:]
        assert any("stream" in frames for frames in received[challenged[0] :])
        if mode == "change-local-addr":
            # The client probed first (§9.1) and the server answered on the new path (§8.2.2).
            assert any("path_response" in frames for frames in received), log[-3000:]


@pytest.mark.skipif(GTLSCLIENT is None, reason="gtlsclient (Debian ngtcp2-client) is not installed")
def test_no_migration_option_advertised_and_rebinding_still_followed(migration_server: object, tmp_path: Path) -> None:
    """`--quic-no-migration`: disable_active_migration in the transport parameters (RFC 9000 §18.2), which does
    not cover a NAT rebinding (§9): that is still followed."""
    server = migration_server("tls_apps:wsgi", "1", "--quic-no-migration")  # type: ignore[operator]
    path = f"/big?n={SIZE}"
    options = ["--change-local-addr=30ms", "--nat-rebinding", "--delay-stream=150ms"]
    log, received = gtlsclient(server, tmp_path / "dl", path, *options)
    assert ["parameters", "True"] in received, log[-3000:]
    assert (tmp_path / "dl" / f"big?n={SIZE}").read_bytes() == pattern(SIZE)
    assert any("path_challenge" in frames for frames in received)
    default = migration_server("tls_apps:wsgi", "1")  # type: ignore[operator]
    _, received = gtlsclient(default, tmp_path / "dl2", "/info")
    assert ["parameters", "False"] in received


# MARK: - aioquic


def rebound_socket(host: str) -> socket.socket:
    """A new UDP socket like aioquic's own (IPv6, dual-stack) on `host` and a fresh port."""
    sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.bind((f"::ffff:{host}", 0, 0, 0))
    return sock


async def move(connection: H3ClientConnection, host: str, *, new_connection_id: bool) -> None:
    """Replaces the connection's socket with a new one on `host` and closes the old one: for the server the
    client's address changed (aioquic itself does not notice, as behind a NAT)."""
    loop = asyncio.get_running_loop()
    old = connection._transport
    assert old is not None
    await loop.create_datagram_endpoint(lambda: connection, sock=rebound_socket(host))
    assert connection._transport is not old
    old.close()
    if new_connection_id:
        # A connection ID from the server's NEW_CONNECTION_ID (§5.1.1, §9.5): it must steer to the same worker.
        quic = connection._quic
        before = quic._peer_cid.cid
        quic.change_connection_id()
        assert quic._peer_cid.cid != before
    # What makes a NAT's new mapping: the client sends (the data it was getting went to the old socket, and
    # there is nothing new to acknowledge). A PING is not a probing frame: the server moves (§9.3).
    connection._quic.send_ping(0)
    connection.transmit()


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2"], ids=["new-port", "new-address"])
def test_aioquic_rebinds_mid_download(migration_server: object, tls_files: TLSFiles, host: str, workers: str) -> None:
    server = migration_server("tls_apps:asgi", workers)  # type: ignore[operator]
    path = f"/big?n={SIZE}"
    for _ in range(connections(workers)):
        client = H3Client(port=server.port, ca=tls_files.ca, timeout=60.0)

        async def work(connection: H3ClientConnection) -> tuple[bytes, int, int]:
            stream = connection.open(connection.fields(b"GET", path.encode()), end_stream=True)
            connection.transmit()
            assert await connection.until(lambda: len(connection._bodies.get(stream, b"")) >= SIZE // 8, 30.0)
            await move(connection, host, new_connection_id=host != "127.0.0.1")
            response = await connection.response(stream, 30.0)
            after = connection.open(connection.fields(b"GET", b"/info"), end_stream=True)
            connection.transmit()
            info = await connection.response(after, 10.0)
            local_port = connection._transport.get_extra_info("sockname")[1]
            assert response.status == 200
            return response.body, info.status, local_port

        body, info_status, _port = client.session(work)
        assert body == pattern(SIZE)
        assert info_status == 200
        # Requests after the move see the new address (RFC 9000 §9: the connection's peer address changed).
        moved = server.stdout.wait_for(lambda line: '"GET /info HTTP/3" 200' in line and host in line, 5.0)
        assert moved is not None, server.excerpt()
