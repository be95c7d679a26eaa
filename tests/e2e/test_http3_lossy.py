"""HTTP/3 over a lossy, reordering, duplicating, corrupting path (issue 15 point 6; RFC 9002 loss recovery).

The kernel here has no `netem`: every client talks to the server through `udp_impairment.ImpairedLink`, a UDP
proxy in the test process with deterministic seeds (see its docstring). Two independent QUIC stacks drive the
server: aioquic (tests/e2e/h3client.py, against `tls_apps:asgi`) and ngtcp2's `gtlsclient` (Debian
ngtcp2-client, against `tls_apps:wsgi`, driven as in test_http3_ngtcp2.py). Every test runs against one worker
and against `--workers 2` (datagrams steered to the worker by connection ID, ARCHITECTURE.md "QUIC across
workers"); the servers are shared per option set and must still be alive after each test and exit 0 at the end.

- 50 handshakes at 30 % loss each way, all at once, each followed by a GET of `/info`: every one completes
  (lost Initial and Handshake packets are resent on probe timeouts, RFC 9002 §6.2; the server's
  anti-amplification limit, RFC 9000 §8.1, must not wedge a handshake whose client packets were lost);
- a download at 2 % and at 10 % loss each way, with jitter, reordering and duplicates: the body's SHA-256 matches
  (RFC 9002 §6.1 loss detection, §7 congestion control, RFC 9000 §2.2 reassembly of reordered and duplicated
  stream data, §4 flow control credit that must keep flowing when MAX_DATA/MAX_STREAM_DATA frames are lost);
- a 2-second blackout both ways a quarter into a download: the transfer resumes and completes (probe timeouts
  with backoff, RFC 9002 §6.2.1, without persistent congestion killing the connection, §7.6);
- 10 % of datagrams each way corrupted (1-3 bytes XORed anywhere): the corrupted packets are dropped (RFC 9001
  §5.3 AEAD failure, §5.4 header protection; RFC 9000 §12.2 for a coalesced packet that fails) and everything
  still arrives intact.

CI time: the file runs in about three minutes on two cores against a debug build, so by default the downloads
are 2 MiB (blackout: 4 MiB). PEREGRINE_LOSSY_LONG=1 runs them at the issue's 10 MiB and adds a round at 25 %
loss (on a loaded two-core machine, debug build: 20-24 s per download at 2 %, 29 s with gtlsclient and
40-45 s with aioquic at 10 %, 86-98 s with gtlsclient at 25 %; the whole file about 11 minutes). The 25 %
round is an xfail, not strict: see SLOW.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import shutil
import subprocess
import time
from typing import TYPE_CHECKING

import pytest
from h3client import H3Client, H3Response
from process_support import wait_for_workers
from tls_support import pattern
from udp_impairment import DOWNSTREAM, UPSTREAM, ImpairedLink, Impairment

if TYPE_CHECKING:
    from pathlib import Path

    from aioquic.quic.configuration import QuicConfiguration
    from tls_support import TLSFiles

    from conftest import Server, ServerPool

pytest_plugins = ("tls_support",)

GTLSCLIENT = shutil.which("gtlsclient")
#: Figures (durations, what the link did): `-o log_cli=true --log-cli-level=INFO` shows them.
log = logging.getLogger(__name__)
LONG = os.environ.get("PEREGRINE_LOSSY_LONG") == "1"
MIB = 1024 * 1024
#: The download size of the loss and blackout tests.
SIZE = 10 * MIB if LONG else 2 * MIB
BLACKOUT_SIZE = 10 * MIB if LONG else 4 * MIB
CLIENTS = ["aioquic", "gtlsclient"]
WORKERS = ["1", "2"]
#: The idle timeout of both ends: above the blackout and the worst backoff. At 30 % loss each way a run of
#: five lost probes in a row (PTOs 1+2+4+8+16 s) happens about once in a few hundred connections, and 30 s
#: cut one of fifty in a CI run.
IDLE_MS = 60000
#: Above the longest download (see `lossy_server`).
WORKER_TIMEOUT_MS = 150000
#: Seconds one download may take (the tests' own timeout is above it).
DOWNLOAD_TIMEOUT = 140.0


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def lossy_server(server_pool: ServerPool, tls_files: TLSFiles) -> object:
    """`lossy_server(client, workers)`: the shared server for that client's application and process model."""

    def get(client: str, workers: str) -> Server:
        target = "tls_apps:asgi" if client == "aioquic" else "tls_apps:wsgi"
        model = ("--workers", "2") if workers == "2" else ()
        # A short graceful timeout: connections whose CONNECTION_CLOSE was lost stay open until they idle out,
        # and would otherwise hold the server's stop at the end of the session that long. A long worker timeout:
        # the WSGI application runs inline, and a WSGI call longer than --worker-timeout (30 s by default) counts
        # as unresponsive (CONFIG.md), so a 10 MiB download taking 30 s at 10 % loss had its worker killed near
        # the end of the body -- the "stall" these tests used to xfail (the server fell silent, not even a probe).
        options = tls_files.server_options(
            "--http3", "--access-log", "--quic-idle-timeout", str(IDLE_MS), "--graceful-timeout", "3000",
            "--worker-timeout", str(WORKER_TIMEOUT_MS), *model,
        )  # fmt: skip
        server = server_pool.get(target, *options)
        if workers == "2":
            # Until the second worker has joined the SO_REUSEPORT group, every connection lands on the first.
            wait_for_workers(server, 2)
        return server

    return get


def require(client: str) -> None:
    if client == "gtlsclient" and GTLSCLIENT is None:
        pytest.skip("gtlsclient (Debian ngtcp2-client) is not installed")


def both_ways(loss: float, **more: float) -> dict[str, Impairment]:
    return {"up": Impairment(loss=loss, **more), "down": Impairment(loss=loss, **more)}


# MARK: - the two clients


def aioquic_client(port: int, files: TLSFiles, idle: float = IDLE_MS / 1000) -> H3Client:
    def configure(configuration: QuicConfiguration) -> None:
        configuration.idle_timeout = idle
        # Our own windows grow as the data is read; aioquic's defaults (1 MiB) are fine.

    return H3Client(port=port, ca=files.ca, configure=configure, timeout=120.0)


async def aioquic_gets(
    client: H3Client, paths: list[str], connections: int, timeout: float = 60.0
) -> list[H3Response | BaseException]:
    """`connections` connections at once, each sending GETs of `paths` one after another; the last response
    of each (or what it raised), each response given `timeout` seconds."""

    async def one() -> H3Response:
        async with client.open() as connection:
            response = H3Response()
            for path in paths:
                # Not `connection.request`, which gives up after 10 s: at 30 % loss each way five round trips
                # in a row fail about once in 35 connections, and the probe timeouts double each time
                # (RFC 9002 §6.2.1), so one request may honestly take that long.
                stream_id = connection.open(connection.fields(b"GET", path.encode()), end_stream=True)
                connection.transmit()
                response = await connection.response(stream_id, timeout=timeout)
                assert response.status != 0, f"{path}: the connection ended first ({connection.terminated})"
            return response

    return list(await asyncio.gather(*(one() for _ in range(connections)), return_exceptions=True))


def gtlsclient_command(port: int, downloads: Path, paths: list[str], idle: str = f"{IDLE_MS // 1000}s") -> list[str]:
    assert GTLSCLIENT is not None
    downloads.mkdir(parents=True, exist_ok=True)
    uris = [f"https://127.0.0.1:{port}{path}" for path in paths]
    # An initial RTT of 20 ms (not 333): the probe timeouts of a lossy handshake double from there (RFC 9002
    # §6.2.1), and the handshake timeout leaves room for several of them.
    return [GTLSCLIENT, "--exit-on-all-streams-close", "--no-quic-dump", "--no-http-dump", f"--download={downloads}",
            "--initial-rtt=20ms", "--handshake-timeout=60s", f"--timeout={idle}", "-q", "127.0.0.1", str(port),
            *uris]  # fmt: skip


def gtlsclient_runs(port: int, base: Path, paths: list[str], connections: int, timeout: float = 120.0) -> list[Path]:
    """`connections` gtlsclient processes at once (one connection each); their download directories."""
    directories = [base / f"c{n}" for n in range(connections)]
    processes = [
        subprocess.Popen(gtlsclient_command(port, d, paths), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for d in directories
    ]
    deadline = time.monotonic() + timeout
    for process in processes:
        try:
            process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return directories


def fetch_big(client: str, port: int, files: TLSFiles, tmp_path: Path, n: int) -> bytes | None:
    """GET /big?n=N on one connection; the body that arrived (None when nothing did)."""
    path = f"/big?n={n}"
    if client == "aioquic":
        # A 10 MiB body at 25 % loss takes more than a minute (the congestion window sits at its minimum).
        [response] = asyncio.run(aioquic_gets(aioquic_client(port, files), [path], 1, timeout=DOWNLOAD_TIMEOUT))
        assert isinstance(response, H3Response), repr(response)
        assert response.status == 200
        return response.body
    saved = gtlsclient_runs(port, tmp_path, [path], 1, timeout=DOWNLOAD_TIMEOUT)[0] / f"big?n={n}"
    return saved.read_bytes() if saved.exists() else None


def describe(link: ImpairedLink) -> str:
    return f"seed {link.seed}: up {link.stats[UPSTREAM]}, down {link.stats[DOWNSTREAM]}"


# MARK: - handshakes


@pytest.mark.timeout(150)
@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("client", CLIENTS)
def test_fifty_handshakes_at_30_percent_loss(
    lossy_server: object, tls_files: TLSFiles, tmp_path: Path, client: str, workers: str
) -> None:
    require(client)
    server = lossy_server(client, workers)  # type: ignore[operator]
    connections = 50
    with ImpairedLink(server.port, **both_ways(0.3), seed=30) as link:
        if client == "aioquic":
            results = asyncio.run(aioquic_gets(aioquic_client(link.port, tls_files), ["/info"], connections))
            failed = [r for r in results if not isinstance(r, H3Response) or r.status != 200]
            assert not failed, f"{len(failed)} of {connections} failed: {failed[:3]}; {describe(link)}"
            bodies = [json.loads(r.body) for r in results if isinstance(r, H3Response)]
        else:
            directories = gtlsclient_runs(link.port, tmp_path, ["/info"], connections)
            missing = [d.name for d in directories if not (d / "info").exists()]
            assert not missing, f"{len(missing)} of {connections} got no /info ({missing[:5]}); {describe(link)}"
            bodies = [json.loads((d / "info").read_bytes()) for d in directories]
        # Every client went through the link. Not `flows == connections`: a client that finished early frees its
        # UDP port, and one that binds later may be given it and so share its flow (49 flows for 50 gtlsclient
        # connections, once in CI).
        assert 0 < link.flows <= connections
        # The loss really happened, both ways.
        for direction in (UPSTREAM, DOWNSTREAM):
            stats = link.stats[direction]
            assert stats.dropped > 0.2 * stats.received, describe(link)
    if workers == "2":
        assert len({body["pid"] for body in bodies}) == 2, "the connections did not spread over both workers"


# MARK: - bulk download


#: At 25 % loss nearly every flight loses a packet and each loss is a congestion event, so the window stays
#: near its minimum (two datagrams) and 10 MiB crawls: 86-98 s with gtlsclient, and aioquic may not finish
#: within DOWNLOAD_TIMEOUT on a busy machine. Not strict: whether it finishes in time depends on the machine.
#: (These downloads used to stall outright, also gtlsclient at 10 %: the inline WSGI call outlived the default
#: --worker-timeout, see `lossy_server`, and the response stream starved the HTTP/3 control stream's resends.)
SLOW = pytest.mark.xfail(LONG, reason="10 MiB at 25 % loss crawls (see SLOW)", strict=False)
LOSSES = [
    0.02,
    0.10,
    *([pytest.param(0.25, marks=SLOW)] if LONG else []),
]


@pytest.mark.timeout(150)
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("client", CLIENTS)
def test_download_under_loss(
    lossy_server: object,
    tls_files: TLSFiles,
    tmp_path: Path,
    client: str,
    workers: str,
    loss: float,
) -> None:
    require(client)
    server = lossy_server(client, workers)  # type: ignore[operator]
    path = both_ways(loss, delay=0.001, jitter=0.002, reorder=0.02, duplicate=0.01)
    with ImpairedLink(server.port, **path, seed=int(loss * 1000)) as link:
        started = time.monotonic()
        body = fetch_big(client, link.port, tls_files, tmp_path, SIZE)
        took = time.monotonic() - started
        assert body is not None, f"nothing saved after {took:.1f}s; {describe(link)}"
        assert len(body) == SIZE, describe(link)
        assert digest(body) == digest(pattern(SIZE)), describe(link)
        down = link.stats[DOWNSTREAM]
        assert down.dropped > 0, describe(link)
        assert down.reordered > 0, describe(link)
        assert down.duplicated > 0, describe(link)
    log.info(f"{SIZE // MIB} MiB at {loss:.0%} loss ({client}, workers {workers}): {took:.1f}s; {describe(link)}")


# MARK: - blackout


@pytest.mark.timeout(120)
@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("client", CLIENTS)
def test_two_second_blackout_mid_transfer(
    lossy_server: object, tls_files: TLSFiles, tmp_path: Path, client: str, workers: str
) -> None:
    require(client)
    server = lossy_server(client, workers)  # type: ignore[operator]
    with ImpairedLink(server.port, seed=2) as link:
        link.blackout_after(BLACKOUT_SIZE // 4, 2.0)
        body = fetch_big(client, link.port, tls_files, tmp_path, BLACKOUT_SIZE)
        finished = time.monotonic()
        assert link.blackout_window is not None, "the blackout never began"
        begun, ended = link.blackout_window
        assert body is not None, describe(link)
        assert digest(body) == digest(pattern(BLACKOUT_SIZE)), describe(link)
        assert finished > ended, "the transfer finished during the blackout"
        assert link.stats[DOWNSTREAM].blacked_out > 0, describe(link)
        # The server kept sending into the void (its probes, RFC 9002 §6.2.4), then delivered after it.
        assert link.stats[DOWNSTREAM].bytes_received > BLACKOUT_SIZE
    log.info(f"blackout {ended - begun:.1f}s; resumed and finished {finished - ended:.1f}s after; {describe(link)}")


# MARK: - corruption


@pytest.mark.timeout(120)
@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("client", CLIENTS)
def test_corrupted_datagrams_are_dropped(
    lossy_server: object, tls_files: TLSFiles, tmp_path: Path, client: str, workers: str
) -> None:
    require(client)
    server = lossy_server(client, workers)  # type: ignore[operator]
    size = 1024 * 1024
    paths = ["/info", f"/big?n={size}", "/info"]
    connections = 8
    with ImpairedLink(server.port, up=Impairment(corrupt=0.1), down=Impairment(corrupt=0.1), seed=7) as link:
        if client == "aioquic":
            ok = 0
            results = asyncio.run(aioquic_gets(aioquic_client(link.port, tls_files), paths[:2], connections))
            for result in results:
                assert isinstance(result, H3Response), f"{result!r}; {describe(link)}"
                assert result.status == 200
                assert digest(result.body) == digest(pattern(size))
                ok += 1
            assert ok == connections
        else:
            for directory in gtlsclient_runs(link.port, tmp_path, paths[:2], connections):
                saved = directory / f"big?n={size}"
                assert saved.exists(), f"{directory.name}: nothing saved; {describe(link)}"
                assert digest(saved.read_bytes()) == digest(pattern(size))
                assert json.loads((directory / "info").read_bytes())
        for direction in (UPSTREAM, DOWNSTREAM):
            assert link.stats[direction].corrupted > 0, describe(link)
    # No harm: a clean connection afterwards is served as usual.
    with ImpairedLink(server.port, seed=8) as clean:
        assert fetch_big(client, clean.port, tls_files, tmp_path / "after", 4096) == pattern(4096)
    server.check_alive()
