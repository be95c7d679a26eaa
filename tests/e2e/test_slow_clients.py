"""Slow clients cut at their timeouts (issue 19 point 3), where no other module tests it: an HTTP/3 request body
that stalls past `--request-timeout` (RELIABILITY.md, "Clients that crawl").

The application (tests/apps/abrupt_apps.py) records what it saw under the request's id.
"""

from __future__ import annotations

import ssl
import time
from typing import TYPE_CHECKING

from abrupt_support import Log
from h3client import H3Client, _Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support",)

TIMEOUT_MS = 1000


def test_http3_body_stalled_past_the_request_timeout_gets_408(
    start_server: Callable[..., Server], tls_files: TLSFiles
) -> None:
    """RFC 9110 §15.5.9: the client did not send the body in time. The application sees the request end
    (`http.disconnect`); the client gets 408 (nothing was sent yet), and the connection serves on."""
    server = start_server(
        "abrupt_apps:asgi",
        *tls_files.server_options("--no-lifespan", "--workers", "1", "--http3", "--request-timeout", str(TIMEOUT_MS)),
    )
    line = server.stderr.wait_for(lambda text: "HTTP/3 on UDP port" in text, 10.0)
    assert line is not None
    port = int(line.rsplit(" ", 1)[1])
    log = Log(server, ssl.create_default_context(cafile=str(tls_files.ca)))

    async def work(connection: _Protocol) -> tuple[int, float, int]:
        fields = connection.fields(b"POST", b"/upload?id=slow", (b"content-length", b"10000"))
        stream = connection.open(fields)
        connection.http.send_data(stream, b"s" * 100, end_stream=False)
        connection.transmit()
        began = time.monotonic()
        response = await connection.response(stream)
        waited = time.monotonic() - began
        # The connection serves on.
        after = await connection.request("GET", "/hello", f"localhost:{port}", [], None)
        return response.status, waited, after.status

    status, waited, after = H3Client(port=port, ca=tls_files.ca).session(work)
    assert status == 408
    assert waited >= TIMEOUT_MS / 1000 * 0.9
    assert after == 200
    entries = log.wait("slow", lambda found: "http.disconnect" in found)
    assert entries[0] == "started", entries
    assert entries[-1] == "http.disconnect", entries
    log.close()
