"""WebTransport over HTTP/3 as the current draft (draft-ietf-webtrans-http3, `:protocol webtransport-h3`,
SETTINGS_WT_ENABLED, session flow control) with pywebtransport's client, and as browsers speak it with
headless Chromium (wt_chromium.py), served by peregrine to ASGI applications (tests/apps/wt_apps.py).

- the echo scenario: bidirectional streams (one past the session's initial WT_MAX_DATA of 1 MiB, so credit
  goes back as the application consumes: WT_MAX_DATA, §5.6.4), unidirectional streams answered on paired
  server streams, datagrams; the scope says draft "h3";
- the close capsule (WT_CLOSE_SESSION, §6) both ways with code and reason; a refusal's status.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import pytest
from h3client import H3Client
from wt_chromium import CHROMIUM, chromium_echo
from wtclient_pywebtransport import MISSING, PYWEBTRANSPORT, pywebtransport_echo

if TYPE_CHECKING:
    from pathlib import Path

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support",)

APP = "wt_apps:app"


@pytest.fixture(scope="module")
def server(server_pool: Any, tls_files: TLSFiles) -> Server:  # noqa: ANN401 (conftest's pool)
    return server_pool.get(APP, *tls_files.server_options("--http3"))


def wait_record(server: Server, files: TLSFiles, ident: str, key: str, timeout: float = 15.0) -> Any:  # noqa: ANN401
    deadline = time.monotonic() + timeout
    while True:
        response = H3Client(port=server.port, ca=files.ca).request("GET", f"/records?id={ident}")
        found = json.loads(response.body)
        if key in found:
            return found[key]
        assert time.monotonic() < deadline, f"record {ident} never got {key!r}: {found!r}"
        time.sleep(0.05)


pywebtransport_only = pytest.mark.skipif(PYWEBTRANSPORT is None, reason=MISSING)
chromium_only = pytest.mark.skipif(CHROMIUM is None, reason="chromium (Debian chromium) is not installed")


@pywebtransport_only
def test_pywebtransport_echo(server: Server, tls_files: TLSFiles) -> None:
    big = "b" * 1_500_000  # past the session's initial WT_MAX_DATA (1 MiB)
    spec = {"bidi": ["one", big], "uni": ["u1", "u2"], "datagrams": ["d1", "d2"], "fin": True}
    result = pywebtransport_echo(server.port, "/echo?id=pw-echo", spec, timeout=60)
    assert result["status"] == 200
    assert result["bidi"] == ["one", big]
    assert sorted(result["uni"]) == ["u1", "u2"]
    assert result["datagrams"] == ["d1", "d2"]
    scope = wait_record(server, tls_files, "pw-echo", "scope")
    assert scope["draft"] == "h3"
    assert scope["http_version"] == "3"


@pywebtransport_only
def test_pywebtransport_close_both_ways(server: Server, tls_files: TLSFiles) -> None:
    closed = pywebtransport_echo(server.port, "/close?id=pw-sclose&code=4000&reason=server+bye", {"await_close": True})
    assert closed["closed"] == {"code": 4000, "reason": "server bye"}, closed
    assert wait_record(server, tls_files, "pw-sclose", "disconnect") == ["webtransport.disconnect", 4000, "server bye"]
    spec = {"bidi": ["x"], "close": {"code": 77, "reason": "client bye"}}
    pywebtransport_echo(server.port, "/echo?id=pw-cclose", spec)
    assert wait_record(server, tls_files, "pw-cclose", "disconnect") == [77, "client bye"]


@pywebtransport_only
def test_pywebtransport_refused(server: Server) -> None:
    refused = pywebtransport_echo(server.port, "/refuse", {})
    assert refused["status"] == 0
    assert "error" in refused


@chromium_only
def test_chromium_echo(server: Server, tls_files: TLSFiles, tmp_path: Path) -> None:
    spec = {"bidi": ["one", "two" * 1000], "uni": ["three"], "datagrams": ["four"]}
    result = chromium_echo(server.port, "/echo?id=chromium", spec, tls_files.cert, tmp_path)
    assert result["status"] == 200
    assert result["bidi"] == ["one", "two" * 1000]
    assert result["uni"] == ["three"]
    assert result["datagrams"] == ["four"]
    assert wait_record(server, tls_files, "chromium", "scope")["draft"] in ("h3", "draft02")


@chromium_only
def test_chromium_closes_with_a_code_and_reason(server: Server, tls_files: TLSFiles, tmp_path: Path) -> None:
    # The page's WebTransport.close({closeCode, reason}) reaches the application as webtransport.disconnect.
    spec = {"bidi": ["x"], "close": {"code": 77, "reason": "client bye"}}
    result = chromium_echo(server.port, "/echo?id=chromium-cclose", spec, tls_files.cert, tmp_path)
    assert result["status"] == 200
    assert result["bidi"] == ["x"]
    assert wait_record(server, tls_files, "chromium-cclose", "disconnect") == [77, "client bye"]


@chromium_only
def test_chromium_sees_the_server_close(server: Server, tls_files: TLSFiles, tmp_path: Path) -> None:
    path = "/close?id=chromium-close&code=4000&reason=server+bye"
    result = chromium_echo(server.port, path, {"await_close": True}, tls_files.cert, tmp_path)
    assert result["closed"] == {"code": 4000, "reason": "server bye"}, result
