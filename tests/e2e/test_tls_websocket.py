"""WebSocket over TLS (wss): the handshake, big messages both ways, and the scope's scheme and tls extension."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pytest
from tls_support import TLSFiles, client_context

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server

pytest_plugins = ("tls_support",)
sync_client = pytest.importorskip("websockets.sync.client")


def test_wss_scope_and_echo(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = tls_server("ws_apps:app")
    context = client_context(tls_files)
    with sync_client.connect(f"wss://localhost:{server.port}/scope", ssl=context, max_size=None) as ws:
        scope = json.loads(ws.recv())
        assert scope["scheme"] == "wss"
        assert scope["extensions"]["tls"]["tls_version"] in (0x0303, 0x0304)
        assert "websocket.http.response" in scope["extensions"]
        for size in (0, 10, 70_000, 3 * 1024 * 1024):
            payload = os.urandom(size)
            ws.send(payload)
            assert ws.recv() == payload
