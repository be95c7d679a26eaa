"""The HTTP half of the WebTransport routers (peregrine.contrib) with a real FastAPI and a real Django app.

tests/apps/wt_fastapi_app.py puts the FastAPI router in front of FastAPI as a middleware;
tests/apps/wt_django_app.py puts the Django router under Channels' ProtocolTypeRouter beside Django. Every
scope that is not `webtransport` must reach the framework untouched, over HTTP/1.1 and over HTTP/3 (RFC 9114).
The WebTransport half (the routes themselves, tests/apps/wt_handlers.py) is driven over peregrine's own
HTTP/3 by the client harnesses: aioquic's (draft-02) and pywebtransport's (the current draft) — echo of
bidirectional and unidirectional streams with FIN and of datagrams, the client's close recorded by the handler,
the server's close with the route's code and reason, and the router's 404 for a path no route matches. The
routers' matching and session handling are unit-tested in tests/contrib.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import httpx
import pytest
from h3client import H3Client
from wtclient_aioquic import WebTransportClient
from wtclient_pywebtransport import MISSING, PYWEBTRANSPORT, pywebtransport_echo

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


#: The WebTransport routes per framework (the Django ones end with a slash).
WT_PATHS = {
    "fastapi": ("/wt/echo/7", "/wt/close/4001/router%20bye", "/wt/nothing"),
    "django": ("/wt/echo/7/", "/wt/close/4001/router%20bye/", "/wt/nothing/"),
}


def wait_event(server: Server, prefix: str, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        found = [line for line in server.events() if line.startswith(prefix)]
        if found:
            return found[-1]
        assert time.monotonic() < deadline, f"no {prefix!r} event: {server.events()!r}"
        time.sleep(0.05)


@pytest.mark.parametrize("client", ["aioquic", "pywebtransport"])
@pytest.mark.parametrize("framework", sorted(CASES))
def test_webtransport_routes(tls_server: Callable[..., Server], framework: str, client: str) -> None:
    if client == "pywebtransport" and PYWEBTRANSPORT is None:
        pytest.skip(MISSING)
    target, _, _ = CASES[framework]
    echo_path, close_path, missing_path = WT_PATHS[framework]
    server = tls_server(target, "--http3")
    spec = {
        "bidi": ["one", "two" * 1000],
        "uni": ["three"],
        "datagrams": ["four"],
        "close": {"code": 9, "reason": "bye"},
    }

    def run(path: str, spec: dict[str, object]) -> dict[str, object]:
        if client == "aioquic":
            return WebTransportClient(server.port).echo(path, spec)
        return pywebtransport_echo(server.port, path, spec)

    result = run(echo_path, spec)
    assert result["status"] == 200
    assert result["bidi"] == ["one", "two" * 1000]
    assert result["uni"] == ["three"]
    assert result["datagrams"] == ["four"]
    assert wait_event(server, "wt-closed") == "wt-closed 9 bye"
    closed = run(close_path, {"await_close": True})
    assert closed["closed"] == {"code": 4001, "reason": "router bye"}
    refused = run(missing_path, {})
    if client == "aioquic":
        assert refused["status"] == 404
    else:
        assert "error" in refused  # pywebtransport reports a refusal without its status
