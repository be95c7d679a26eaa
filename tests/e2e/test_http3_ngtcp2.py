"""HTTP/3 against ngtcp2's example client (issue 14 point 8): Debian's `gtlsclient` (package ngtcp2-client, ngtcp2
0.12 with nghttp3 and GnuTLS), a QUIC stack in C that shares no code with the server's, aioquic or curl_cffi's.

The client saves each response body with `--download` (file named after the path's last segment) and, without
`-q`, logs every packet: which key phase it was protected with (`k=0`/`k=1`), the frames in it. It does not check
the server's certificate, and exits 0 whatever happened to the requests, so the tests judge by the bodies
saved and by the server's access log.

- a GET (`/info`), as a plain client;
- a key update (RFC 9001 §6): the client moves to the next 1-RTT keys 10 ms after the handshake and sends its
  request only after 200 ms, so the whole 5 MiB response must come protected with the new keys (`k=1`): the
  server followed the update (§6.2) rather than dropping or misreading packets of the new phase;
- packet loss (RFC 9002): the client drops 10 % of what it sends and 10 % of what it receives, so the server
  sees lost requests, lost ACKs and retransmissions and must resend what the client never got; 2 MiB and a
  small response arrive whole, several times over.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import TYPE_CHECKING

import pytest
from tls_support import TLSFiles, pattern

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server

pytest_plugins = ("tls_support",)

GTLSCLIENT = shutil.which("gtlsclient")
pytestmark = pytest.mark.skipif(GTLSCLIENT is None, reason="gtlsclient (Debian ngtcp2-client) is not installed")

TARGETS = ["tls_apps:wsgi", "tls_apps:asgi"]
FIVE_MIB = 5 * 1024 * 1024
TWO_MIB = 2 * 1024 * 1024


def gtlsclient(server: Server, downloads: Path, paths: list[str], *options: str, quiet: bool = True) -> str:
    """Runs the client for `paths` on one connection until every stream closes; returns its log."""
    assert GTLSCLIENT is not None
    downloads.mkdir(exist_ok=True)
    uris = [f"https://127.0.0.1:{server.port}{path}" for path in paths]
    command = [GTLSCLIENT, "--exit-on-all-streams-close", "--no-quic-dump", "--no-http-dump", f"--download={downloads}",
               *options, *(["-q"] if quiet else []), "127.0.0.1", str(server.port), *uris]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    return done.stdout + done.stderr


@pytest.mark.parametrize("target", TARGETS)
def test_get(tls_server: Callable[..., Server], tls_files: TLSFiles, tmp_path: Path, target: str) -> None:
    server = tls_server(target, "--http3", "--access-log")
    log = gtlsclient(server, tmp_path / "dl", ["/info"])
    saved = tmp_path / "dl" / "info"
    assert saved.exists(), log[-2000:]
    info = json.loads(saved.read_bytes())
    if target.endswith("asgi"):
        assert info["http_version"] == "3"
    else:
        assert info["wsgi.url_scheme"] == "https"
    assert server.stdout.wait_for(lambda line: '"GET /info HTTP/3" 200' in line, 5.0) is not None


@pytest.mark.parametrize("target", TARGETS)
def test_key_update(tls_server: Callable[..., Server], tls_files: TLSFiles, tmp_path: Path, target: str) -> None:
    server = tls_server(target, "--http3", "--access-log")
    path = f"/big?n={FIVE_MIB}"
    log = gtlsclient(server, tmp_path / "dl", [path], "--key-update=10ms", "--delay-stream=200ms", quiet=False)
    saved = tmp_path / "dl" / f"big?n={FIVE_MIB}"
    assert saved.exists(), log[-3000:]
    assert saved.read_bytes() == pattern(FIVE_MIB)
    lines = log.splitlines()
    assert "Initiate key update" in lines
    first_new = next(i for i, line in enumerate(lines) if " pkt rx " in line and "type=1RTT k=1" in line)
    first_response = next(
        i for i, line in enumerate(lines) if " frm rx " in line and " STREAM(" in line and " id=0x0 " in line
    )
    assert first_new < first_response, "response data came before the server's first packet with the new keys"
    # After its first k=1 packet the server never goes back to the old phase (RFC 9001 §6.1).
    after = [line for line in lines[first_new:] if " pkt rx " in line and "type=1RTT" in line]
    assert all(line.endswith("k=1") for line in after)
    assert len(after) > 1000
    assert server.stdout.wait_for(lambda line: f'"GET {path} HTTP/3" 200 {FIVE_MIB}' in line, 5.0) is not None


@pytest.mark.parametrize("round_", range(3))
@pytest.mark.parametrize("target", TARGETS)
def test_ten_percent_loss_each_way(
    tls_server: Callable[..., Server], tls_files: TLSFiles, tmp_path: Path, target: str, round_: int
) -> None:
    server = tls_server(target, "--http3", "--access-log")
    # An initial RTT of 20 ms (not 333) and a 30 s handshake timeout: lost handshake packets are resent after
    # probe timeouts that double each time (RFC 9002 §6.2), which at 333 ms can outlast the default 10 s.
    log = gtlsclient(server, tmp_path / "dl", [f"/big?n={TWO_MIB}", "/info"], "--tx-loss=0.1", "--rx-loss=0.1",
                     "--initial-rtt=20ms", "--handshake-timeout=30s")  # fmt: skip
    big, info = tmp_path / "dl" / f"big?n={TWO_MIB}", tmp_path / "dl" / "info"
    assert big.exists(), log[-2000:]
    assert info.exists(), log[-2000:]
    assert big.read_bytes() == pattern(TWO_MIB)
    assert json.loads(info.read_bytes())
    assert server.stdout.wait_for(lambda line: f'"GET /big?n={TWO_MIB} HTTP/3" 200 {TWO_MIB}' in line, 5.0) is not None
