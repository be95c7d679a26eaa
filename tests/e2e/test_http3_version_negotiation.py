"""Compatible version negotiation from QUIC version 1 to version 2 (RFC 9368 §2.2, RFC 9369 §4).

A client whose first Initial is version 1 and whose version_information lists version 2 ahead of version 1 is
moved to version 2 by the server's first flight, without a round trip; the server follows the client's order,
so one listing version 1 first stays on it. Clients: aioquic (which implements RFC 9368 on the client side:
`original_version` is the version of its first Initial, `supported_versions` its Available Versions in order)
and gtlsclient (ngtcp2 0.12 knows version 2 only by a draft codepoint, which the server does not speak, so
offering it leaves the connection on version 1).
"""

from __future__ import annotations

import shutil
import subprocess
from typing import TYPE_CHECKING

import pytest

pytest.importorskip("aioquic")

from aioquic.quic.packet import QuicProtocolVersion
from h3client import H3Client
from tls_support import TLSFiles, pattern

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from aioquic.quic.configuration import QuicConfiguration

    from conftest import Server

pytest_plugins = ("tls_support",)

TARGETS = ["tls_apps:wsgi", "tls_apps:asgi"]
V1, V2 = QuicProtocolVersion.VERSION_1, QuicProtocolVersion.VERSION_2
GTLSCLIENT = shutil.which("gtlsclient")


def versions(original: int, available: list[int]) -> Callable[[QuicConfiguration], None]:
    def configure(configuration: QuicConfiguration) -> None:
        configuration.original_version = original
        configuration.supported_versions = available

    return configure


@pytest.mark.parametrize("retry", [False, True], ids=["direct", "after-retry"])
@pytest.mark.parametrize("target", TARGETS)
def test_v1_initial_moves_to_v2(
    tls_server: Callable[..., Server], tls_files: TLSFiles, target: str, retry: bool
) -> None:
    """A v1 Initial listing [v2, v1]: the connection runs v2 (aioquic checked our version_information:
    Chosen Version v2, a downgrade check of RFC 9368 §4), and a 1 MiB body arrives intact. After a Retry
    (sent in the original version, RFC 9369 §4) the switch happens on the Initial that carries the token,
    with v2 Initial keys from the Retry's connection ID."""
    server = tls_server(target, "--http3", *(["--quic-retry"] if retry else []))
    c = H3Client(port=server.port, ca=tls_files.ca, configure=versions(V1, [V2, V1]), timeout=60.0)
    response = c.request("GET", f"/big?n={1 << 20}")
    assert response.status == 200
    assert response.body == pattern(1 << 20)
    assert c.connection_facts["version"] == V2
    assert c.connection_facts["retried"] == retry


def test_client_order_is_followed(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    """A v1 Initial listing [v1, v2] stays on v1; a v2 Initial listing [v2, v1] stays on v2; and one
    listing only v1 is never switched."""
    server = tls_server("tls_apps:asgi", "--http3")
    for original, available, expected in [(V1, [V1, V2], V1), (V2, [V2, V1], V2), (V1, [V1], V1)]:
        c = H3Client(port=server.port, ca=tls_files.ca, configure=versions(original, available))
        assert c.request("GET", "/info").status == 200
        assert c.connection_facts["version"] == expected, (original, available)


@pytest.mark.skipif(GTLSCLIENT is None, reason="gtlsclient (Debian ngtcp2-client) is not installed")
def test_gtlsclient_offering_draft_v2_stays_on_v1(
    tls_server: Callable[..., Server], tls_files: TLSFiles, tmp_path: Path
) -> None:
    """gtlsclient lists the v2 draft codepoint (0x709a50c4), which the server does not speak: the server must
    not pick it, and the download completes on version 1."""
    assert GTLSCLIENT is not None
    server = tls_server("tls_apps:asgi", "--http3")
    downloads = tmp_path / "dl"
    downloads.mkdir()
    command = [GTLSCLIENT, "--exit-on-all-streams-close", "--no-quic-dump", "--no-http-dump", f"--download={downloads}",
               "--other-versions=v2draft,v1", "127.0.0.1", str(server.port),
               f"https://127.0.0.1:{server.port}/big?n=100000"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    saved = downloads / "big?n=100000"
    assert saved.exists(), (done.stdout + done.stderr)[-3000:]
    assert saved.read_bytes() == pattern(100_000)
    log = (done.stdout + done.stderr).splitlines()
    # The long headers the client received (its packet log: "pkt rx ... version=0x00000001 type=Initial").
    rx_versions = {line.split("version=")[1].split()[0] for line in log if " pkt rx " in line and "version=" in line}
    assert rx_versions == {"0x00000001"}, rx_versions
