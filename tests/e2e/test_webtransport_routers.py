"""The HTTP half of the WebTransport routers (peregrine.contrib) with a real FastAPI and a real Django app.

tests/apps/wt_fastapi_app.py puts the FastAPI router in front of FastAPI as a middleware;
tests/apps/wt_django_app.py puts the Django router under Channels' ProtocolTypeRouter beside Django. Every
scope that is not `webtransport` must reach the framework untouched, over HTTP/1.1 and over HTTP/3 (RFC 9114).
The WebTransport half (the routes themselves, tests/apps/wt_handlers.py) is driven by the client harnesses
(wtclient_aioquic.py, wtclient_pywebtransport.py, wt_chromium.py) once the server speaks WebTransport; the
routers' matching, 404 refusal and session handling are unit-tested in tests/contrib.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import httpx
import pytest
from h3client import H3Client

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support",)

pytest.importorskip("fastapi")
pytest.importorskip("channels")

#: (target, path, expected JSON) per framework; Django also reports the scope's http_version.
CASES = {
    "fastapi": ("wt_fastapi_app:app", "/items/42", {"item_id": 42}),
    "django": ("wt_django_app:application", "/hello/peregrine/", {"hello": "peregrine"}),
}


@pytest.mark.parametrize("framework", sorted(CASES))
def test_http11_passes_through_the_webtransport_router(start_server: Callable[..., Server], framework: str) -> None:
    target, path, expected = CASES[framework]
    server = start_server(target)
    response = httpx.get(server.base_url + path, timeout=20)
    assert response.status_code == 200, response.text
    body = response.json()
    assert {key: body[key] for key in expected} == expected
    if framework == "django":
        assert body["protocol"] == "1.1"
    # A path the framework does not know is the framework's own 404, not the router's.
    assert httpx.get(server.base_url + "/wt/echo/1", timeout=20).status_code == 404


@pytest.mark.parametrize("framework", sorted(CASES))
def test_http3_passes_through_the_webtransport_router(
    tls_server: Callable[..., Server], tls_files: TLSFiles, framework: str
) -> None:
    target, path, expected = CASES[framework]
    server = tls_server(target, "--http3")
    client = H3Client(port=server.port, ca=tls_files.ca)
    response = client.request("GET", path)
    assert response.status == 200, response.body
    body = json.loads(response.body)
    assert {key: body[key] for key in expected} == expected
    if framework == "django":
        assert body["protocol"] == "3"
    assert client.request("GET", "/wt/echo/1").status == 404
