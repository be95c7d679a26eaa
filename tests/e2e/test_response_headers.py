"""Response header control (issue 18 point 6): `--header NAME:VALUE` (repeatable) adds fields to every response,
`--server-header VALUE` a `server` field, `--no-date-header` drops the Date the server adds; on HTTP/1.1,
HTTP/2 and HTTP/3, WSGI and ASGI, and on responses the server makes itself (400, the health path, the
WebSocket 101). A field the application sets itself wins: every default of that name is left out of that
response. Bad values exit 2 with one error line naming the option."""

from __future__ import annotations

import http.client
from typing import TYPE_CHECKING

import pytest
from h2client import H2Client
from h2websocket import H2WebSocket
from h3client import H3Client
from rawhttp import RawConnection, request
from test_cli import assert_clean_usage_error, run
from tls_support import client_context, https_request
from websocket_support import handshake

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support",)

TARGETS = ["header_apps:wsgi", "header_apps:asgi"]
DEFAULTS = (
    "--header",
    "X-Frame-Options: DENY",
    "--header",
    "x-extra:1",
    "--header",
    "X-Extra: 2",
    "--server-header",
    "peregrine-test",
)
#: What every response without fields of its own carries, lower-cased, in order.
EXPECTED = [("x-frame-options", "DENY"), ("x-extra", "1"), ("x-extra", "2"), ("server", "peregrine-test")]
#: /own sets X-Frame-Options and Server itself (tests/apps/header_apps.py).
EXPECTED_OWN = [("x-extra", "1"), ("x-extra", "2")]
OWN = {"x-frame-options": "SAMEORIGIN", "server": "app/1.0", "date": "Thu, 01 Jan 1970 00:00:00 GMT"}
WATCHED = {"x-frame-options", "x-extra", "server", "date"}


def watched(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(name.lower(), value) for name, value in headers if name.lower() in WATCHED]


def h1(server: Server, tls_files: TLSFiles | None, path: str) -> list[tuple[str, str]]:
    if tls_files is None:
        with RawConnection.to(server) as raw:
            raw.send(request("GET", path))
            response = raw.read_response()
        assert response.status == 200
        return watched(response.headers)
    https, sock = https_request(server, client_context(tls_files, alpn=["http/1.1"]), path)
    sock.close()
    assert https.status == 200
    return watched(https.getheaders())


def h2(server: Server, tls_files: TLSFiles | None, path: str) -> list[tuple[str, str]]:
    tls = client_context(tls_files, alpn=["h2"]) if tls_files is not None else None
    with H2Client(server.port, tls=tls) as client:
        response = client.request("GET", path, scheme="https" if tls else "http")
    assert response.status == 200
    return watched([(name.decode(), value.decode()) for name, value in response.headers])


def h3(server: Server, tls_files: TLSFiles, path: str) -> list[tuple[str, str]]:
    response = H3Client(port=server.port, ca=tls_files.ca).request("GET", path)
    assert response.status == 200
    return watched([(name.decode(), value.decode()) for name, value in response.headers])


def without_date(fields: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(name, value) for name, value in fields if name != "date"]


@pytest.mark.parametrize("target", TARGETS)
def test_defaults_on_http1_http2_and_http3(tls_server: Callable[..., Server], tls_files: TLSFiles, target: str) -> None:
    server = tls_server(target, "--http3", *DEFAULTS)
    for fields in (h1(server, tls_files, "/"), h2(server, tls_files, "/"), h3(server, tls_files, "/")):
        assert without_date(fields) == EXPECTED
        assert [name for name, _ in fields].count("date") == 1


@pytest.mark.parametrize("target", TARGETS)
def test_the_applications_own_field_wins_on_every_protocol(
    tls_server: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    server = tls_server(target, "--http3", *DEFAULTS)
    for fields in (h1(server, tls_files, "/own"), h2(server, tls_files, "/own"), h3(server, tls_files, "/own")):
        assert [field for field in fields if field[0] == "x-extra"] == EXPECTED_OWN
        for name, value in OWN.items():
            assert [v for n, v in fields if n == name] == [value], (name, fields)


@pytest.mark.parametrize("target", TARGETS)
def test_cleartext_http1_and_h2c_carry_them(start_server: Callable[..., Server], target: str) -> None:
    server = start_server(target, *DEFAULTS)
    assert without_date(h1(server, None, "/")) == EXPECTED
    assert without_date(h2(server, None, "/")) == EXPECTED


@pytest.mark.parametrize("target", TARGETS)
def test_no_date_header_drops_the_servers_date_only(
    tls_server: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    server = tls_server(target, "--http3", "--no-date-header")
    for get in (h1, h2, h3):
        assert get(server, tls_files, "/") == []
        own = get(server, tls_files, "/own")
        assert [value for name, value in own if name == "date"] == [OWN["date"]]


def test_without_options_there_is_a_date_and_no_server(start_server: Callable[..., Server]) -> None:
    server = start_server("header_apps:wsgi")
    fields = h1(server, None, "/")
    assert [name for name, _ in fields] == ["date"]


def test_server_made_responses_carry_them(start_server: Callable[..., Server]) -> None:
    """A 400 the server answers by itself, and the health path over HTTP/1.1 and HTTP/2."""
    server = start_server("header_apps:wsgi", "--health-path", "/healthz", *DEFAULTS)
    with RawConnection.to(server) as raw:
        raw.send(b"GET / HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n")
        response = raw.read_response()
    assert response.status == 400
    assert without_date(watched(response.headers)) == EXPECTED
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", "/healthz")
    health = connection.getresponse()
    health.read()
    connection.close()
    assert health.status == 200
    assert without_date(watched(health.getheaders())) == EXPECTED
    with H2Client(server.port) as client:
        response2 = client.request("GET", "/healthz")
    assert response2.status == 200
    assert without_date(watched([(n.decode(), v.decode()) for n, v in response2.headers])) == EXPECTED


def test_server_made_responses_without_a_date(start_server: Callable[..., Server]) -> None:
    server = start_server("header_apps:wsgi", "--no-date-header")
    with RawConnection.to(server) as raw:
        raw.send(b"GET / HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n")
        response = raw.read_response()
    assert response.status == 400
    assert response.header("date") is None
    assert response.body == b"Bad Request\n"


def test_websocket_101_and_its_http2_200_carry_them(start_server: Callable[..., Server]) -> None:
    server = start_server("header_apps:asgi", *DEFAULTS)
    with handshake(server, "/ws") as ws:
        assert watched(ws.response.headers) == EXPECTED
    with H2Client(server.port) as client:
        accepted = H2WebSocket.open(client, "/ws").accepted().response
        assert without_date(watched([(n.decode(), v.decode()) for n, v in accepted.headers])) == EXPECTED


@pytest.mark.parametrize(
    ("args", "mention"),
    [
        (["--header", "no-colon"], "--header"),
        (["--header", ":empty-name"], "--header"),
        (["--header", "bad name:x"], "--header"),
        (["--header", "x-a:one\r\nx-b: two"], "--header x-a"),
        (["--header", "x-a:one\ntwo"], "--header x-a"),
        (["--header", "x-a:\x01"], "--header x-a"),
        (["--header", "x-a:" + "v" * 4097], "--header x-a"),
        (["--header", "Date: now"], "date"),
        (["--header", "server: x"], "--server-header"),
        (["--header", "Connection: close"], "connection"),
        (["--header", "transfer-encoding: chunked"], "transfer-encoding"),
        (["--header", "content-length: 1"], "content-length"),
        (["--header", "upgrade: h2c"], "upgrade"),
        (["--header", "te: trailers"], "te"),
        (["--server-header", ""], "--server-header"),
        (["--server-header", "  "], "--server-header"),
        (["--server-header", "a\r\nx: y"], "--server-header"),
        (["--no-date-header=yes"], "--no-date-header"),
    ],
)
def test_invalid_values_exit_2(args: list[str], mention: str) -> None:
    assert_clean_usage_error(run(*args, "header_apps:wsgi"), mention)


def test_sixty_four_headers_are_too_many() -> None:
    args = [arg for i in range(64) for arg in ("--header", f"x-{i}: v")]
    assert_clean_usage_error(run(*args, "header_apps:wsgi"), "--header")
