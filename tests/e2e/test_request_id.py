"""--request-id-header (issue 18 item 2) over HTTP/1.1, HTTP/2 and HTTP/3, for WSGI and ASGI.

A request's id is the client's when it sent exactly one well-formed field (1-200 visible ASCII characters),
otherwise 32 hex digits the worker makes. The application sees it as that request field (WSGI
`HTTP_X_REQUEST_ID`, ASGI `headers`), the response echoes it (unless the application set the field itself), and
the access log writes it. tests/apps/request_id_apps.py answers JSON of the ids it saw.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pytest
from h2client import H2Client
from rawhttp import RawConnection, request

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support",)

TARGETS = ["request_id_apps:wsgi", "request_id_apps:asgi"]
GENERATED = re.compile(r"[0-9a-f]{32}")


def seen_id(target: str, body: bytes | bytearray) -> str | None:
    """The one id the application saw (ASGI: exactly one field of that name)."""
    seen: Any = json.loads(body)["x-request-id"]
    if target.endswith("asgi"):
        assert len(seen) == 1, f"the application saw {seen!r}"
        return str(seen[0])
    return None if seen is None else str(seen)


def http1(server: Server, path: str, headers: list[tuple[str, str]] | None = None) -> tuple[str | None, list[str]]:
    """(id the application saw, x-request-id values of the response)."""
    with RawConnection.to(server) as connection:
        connection.send(request("GET", path, headers))
        response = connection.read_response()
    assert response.status == 200
    return json.loads(response.body)["x-request-id"], response.header_all("x-request-id")


@pytest.fixture(params=TARGETS)
def target(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_a_request_without_an_id_gets_a_generated_one(start_server: Callable[..., Server], target: str) -> None:
    server = start_server(target, "--request-id-header", "X-Request-ID", "--access-log-format", "json")
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/none"))
        response = connection.read_response()
    echoed = response.header_all("x-request-id")
    assert len(echoed) == 1
    assert GENERATED.fullmatch(echoed[0])
    assert seen_id(target, response.body) == echoed[0]
    line = server.stdout.wait_for(lambda text: "/none" in text, 5.0)
    assert line is not None
    assert json.loads(line)["request_id"] == echoed[0]


def test_generated_ids_are_unique(start_server: Callable[..., Server]) -> None:
    server = start_server(TARGETS[0], "--request-id-header", "X-Request-ID", "--workers", "2")
    ids = {http1(server, "/")[1][0] for _ in range(60)}
    assert len(ids) == 60
    assert all(GENERATED.fullmatch(i) for i in ids)


@pytest.mark.parametrize(
    "value", ["abc-123", "0" * 200, "!#$%&'*+-.^_`|~:/=;{}[]<>@\"\\"], ids=["short", "longest", "punctuation"]
)
def test_a_well_formed_client_id_is_kept(start_server: Callable[..., Server], target: str, value: str) -> None:
    log_format = "%(r)s [%({x-request-id}o)s]"
    server = start_server(target, "--request-id-header", "x-request-id", "--access-log-format", log_format)
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/kept", [("X-Request-Id", value)]))
        response = connection.read_response()
    assert response.header_all("x-request-id") == [value]
    assert seen_id(target, response.body) == value
    line = server.stdout.wait_for(lambda text: "/kept" in text, 5.0)
    assert line is not None
    assert value.replace("\\", "\\\\").replace('"', '\\"') in line


@pytest.mark.parametrize(
    "fields",
    [
        [("X-Request-ID", "has space")],
        [("X-Request-ID", "0" * 201)],
        [("X-Request-ID", "caf\xe9")],
        [("X-Request-ID", "one"), ("X-Request-ID", "two")],
    ],
    ids=["space", "too-long", "obs-text", "twice"],
)
def test_a_malformed_client_id_is_replaced(
    start_server: Callable[..., Server], target: str, fields: list[tuple[str, str]]
) -> None:
    server = start_server(target, "--request-id-header", "X-Request-ID")
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/bad", fields))
        response = connection.read_response()
    echoed = response.header_all("x-request-id")
    assert len(echoed) == 1
    assert GENERATED.fullmatch(echoed[0])
    assert seen_id(target, response.body) == echoed[0]


def test_the_applications_own_response_field_wins(start_server: Callable[..., Server], target: str) -> None:
    server = start_server(target, "--request-id-header", "X-Request-ID")
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/own-id", [("X-Request-ID", "client-id")]))
        response = connection.read_response()
    assert response.header_all("x-request-id") == ["from-app"]
    assert seen_id(target, response.body) == "client-id"


def test_without_the_option_nothing_is_added(start_server: Callable[..., Server], target: str) -> None:
    server = start_server(target)
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/off"))
        response = connection.read_response()
    assert response.header_all("x-request-id") == []
    seen: Any = json.loads(response.body)["x-request-id"]
    assert seen in (None, [])


def test_http2_request_ids(start_server: Callable[..., Server], target: str) -> None:
    server = start_server(target, "--request-id-header", "X-Request-ID", "--access-log-format", "json")
    with H2Client(server.port) as c:
        given = c.request("GET", "/h2-given", headers=[("x-request-id", "h2-client-id")])
        made = c.request("GET", "/h2-made")
        bad = c.request("GET", "/h2-bad", headers=[("x-request-id", "a b")])
    assert given.status == made.status == bad.status == 200
    assert given.header(b"x-request-id") == b"h2-client-id"
    assert seen_id(target, given.body) == "h2-client-id"
    for response in (made, bad):
        value = (response.header(b"x-request-id") or b"").decode()
        assert GENERATED.fullmatch(value)
        assert seen_id(target, response.body) == value
    line = server.stdout.wait_for(lambda text: "/h2-given" in text, 5.0)
    assert line is not None
    record = json.loads(line)
    assert (record["protocol"], record["request_id"]) == ("HTTP/2", "h2-client-id")


def test_http3_request_ids(tls_server: Callable[..., Server], tls_files: TLSFiles, target: str) -> None:
    pytest.importorskip("aioquic")
    from h3client import H3Client  # noqa: PLC0415 (needs aioquic)

    server = tls_server(target, "--http3", "--request-id-header", "X-Request-ID", "--access-log-format", "json")
    client = H3Client(port=server.port, ca=tls_files.ca)
    given = client.request("GET", "/h3-given", headers=[(b"x-request-id", b"h3-client-id")])
    made = client.request("GET", "/h3-made")
    assert given.status == made.status == 200
    assert dict(given.headers)[b"x-request-id"] == b"h3-client-id"
    assert seen_id(target, given.body) == "h3-client-id"
    value = dict(made.headers)[b"x-request-id"].decode()
    assert GENERATED.fullmatch(value)
    assert seen_id(target, made.body) == value
    line = server.stdout.wait_for(lambda text: "/h3-made" in text, 5.0)
    assert line is not None
    record = json.loads(line)
    assert (record["protocol"], record["request_id"]) == ("HTTP/3", value)


def test_the_wsgi_pool_threads_see_the_id(start_server: Callable[..., Server]) -> None:
    """--wsgi-threads copies the request to a pool thread: the generated id goes with it."""
    server = start_server(TARGETS[0], "--request-id-header", "X-Request-ID", "--wsgi-threads", "2")
    for _ in range(4):
        seen, echoed = http1(server, "/pool")
        assert len(echoed) == 1
        assert GENERATED.fullmatch(echoed[0])
        assert seen == echoed[0]
