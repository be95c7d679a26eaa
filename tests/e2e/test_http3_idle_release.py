"""What a quiet HTTP/3 connection gives back must come back unchanged on its next request.

After 2 s without traffic the worker releases an idle connection's spare memory (TRANSPORT.md, "What an idle
HTTP/3 connection holds"): among it the Python objects made for its requests (the WSGI `HTTPS`/`SSL_*` keys,
the ASGI `tls` scope extension). The next request on the same connection makes them again: the application
sees the same values before and after.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

import pytest

pytest.importorskip("aioquic")

from h3client import H3Client, H3Response

if TYPE_CHECKING:
    from collections.abc import Callable

    from h3client import _Protocol
    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support",)


@pytest.mark.parametrize("target", ["tls_apps:wsgi", "tls_apps:asgi"])
def test_tls_facts_are_the_same_after_the_idle_release(
    tls_server: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    server = tls_server(target, "--http3")
    authority = f"localhost:{server.port}"

    async def work(c: _Protocol) -> tuple[H3Response, H3Response, H3Response]:
        first = await c.request("GET", "/info", authority, [], None)
        second = await c.request("GET", "/info", authority, [], None)
        await asyncio.sleep(3.0)  # past the 2 s after which the worker releases an idle connection's spare memory
        third = await c.request("GET", "/info", authority, [], None)
        return first, second, third

    responses = H3Client(port=server.port, ca=tls_files.ca, timeout=30.0).session(work)
    assert [r.status for r in responses] == [200, 200, 200]
    first, second, third = (json.loads(r.body) for r in responses)
    assert first == second == third
    if target.endswith("asgi"):
        assert first["tls"]["tls_version"] == 0x0304
        assert first["tls"]["cipher_suite"] in (0x1301, 0x1302, 0x1303)
    else:
        assert first["HTTPS"] == "on"
        assert first["SSL_PROTOCOL"] == "TLSv1.3"
        assert first["SSL_CLIENT_VERIFY"] == "NONE"
