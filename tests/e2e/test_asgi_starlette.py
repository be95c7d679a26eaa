"""A real Starlette application (tests/apps/asgi_starlette.py) with no server-specific code (issue 3 item 8).

Runs on uvloop and on plain asyncio.
"""

from __future__ import annotations

import hashlib
import os
import time
from typing import TYPE_CHECKING

import httpx
import pytest
from rawhttp import RawConnection, request

# Rewritten asserts in the shared helpers, which are also loaded as a plugin below.
pytest.register_assert_rewrite("asgi_support")
from asgi_support import LOOPS  # noqa: E402

#: The shared ASGI fixtures (`loop`, `raw_server`) live in asgi_support.
pytest_plugins = ("asgi_support",)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from conftest import Server, ServerPool


@pytest.fixture(scope="module")
def starlette_server(server_pool: ServerPool, loop: str) -> Server:
    """asgi_starlette:app on each loop."""
    return server_pool.get("asgi_starlette:app", *LOOPS[loop])


@pytest.fixture
def client(starlette_server: Server) -> Iterator[httpx.Client]:
    """An httpx client for the Starlette server."""
    with httpx.Client(base_url=starlette_server.base_url, timeout=20) as http:
        yield http


def test_homepage_goes_through_both_middlewares(client: httpx.Client) -> None:
    response = client.get("/")
    assert (response.status_code, response.text) == (200, "starlette home")
    assert response.headers["x-tag"] == "starlette"
    assert float(response.headers["x-process-time"]) >= 0


def test_routing_with_converters_and_query(client: httpx.Client) -> None:
    response = client.get("/users/17/profile", params=[("sort", "asc"), ("tag", "a"), ("tag", "b c")])
    assert response.json() == {"user_id": 17, "section": "profile", "sort": "asc", "tags": ["a", "b c"]}


def test_unknown_route_and_wrong_method(client: httpx.Client) -> None:
    assert client.get("/users/not-int/profile").status_code == 404
    assert client.get("/nowhere").status_code == 404
    assert client.get("/form").status_code == 405


def test_middleware_can_answer_itself(client: httpx.Client) -> None:
    response = client.get("/blocked")
    assert (response.status_code, response.text) == (403, "blocked by middleware")
    assert "x-process-time" in response.headers


def test_mount(client: httpx.Client) -> None:
    assert client.get("/api/info").json() == {"root_path": "/api", "path": "/api/info"}


def test_streaming_response(client: httpx.Client) -> None:
    with client.stream("GET", "/numbers", params={"count": "1000"}) as response:
        assert response.status_code == 200
        assert response.headers["x-tag"] == "starlette"
        body = response.read()
    assert body == "".join(f"{index}\n" for index in range(1000)).encode()


@pytest.mark.parametrize("size", [0, 1, 200_000, 3 * 1024 * 1024 + 5])
def test_file_response(client: httpx.Client, tmp_path: Path, size: int) -> None:
    payload = os.urandom(size)
    path = tmp_path / f"file-{size}.bin"
    path.write_bytes(payload)
    response = client.get("/download", params={"path": str(path)})
    assert response.status_code == 200
    assert response.headers["content-length"] == str(size)
    assert response.content == payload
    assert "etag" in response.headers


def test_file_response_to_head(client: httpx.Client, tmp_path: Path) -> None:
    path = tmp_path / "head.bin"
    path.write_bytes(b"h" * 5000)
    response = client.head("/download", params={"path": str(path)})
    assert response.status_code == 200
    assert response.headers["content-length"] == "5000"
    assert response.content == b""


def test_file_response_range(client: httpx.Client, tmp_path: Path) -> None:
    path = tmp_path / "range.bin"
    path.write_bytes(bytes(range(256)) * 4)
    response = client.get("/download", params={"path": str(path)}, headers={"Range": "bytes=10-19"})
    assert response.status_code == 206
    assert response.content == bytes(range(10, 20))


def test_form_post(client: httpx.Client) -> None:
    response = client.post("/form", data={"name": "Ada Lovelace", "langs": ["en", "fr"]})
    assert response.json() == {"name": ["Ada Lovelace"], "langs": ["en", "fr"]}


def test_request_stream_of_a_large_body(client: httpx.Client) -> None:
    payload = os.urandom(5 * 1024 * 1024)
    response = client.post("/digest", content=payload)
    assert response.json() == {"size": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}


def test_request_stream_of_a_chunked_upload(client: httpx.Client) -> None:
    pieces = [os.urandom(10_000) for _ in range(20)]

    def generate() -> Iterator[bytes]:
        yield from pieces

    response = client.post("/digest", content=generate())
    joined = b"".join(pieces)
    assert response.json() == {"size": len(joined), "sha256": hashlib.sha256(joined).hexdigest()}


def test_endless_stream_stops_when_the_client_goes_away(starlette_server: Server) -> None:
    ident = f"endless-{time.monotonic_ns()}"
    with RawConnection.to(starlette_server) as connection:
        connection.send(request("GET", f"/endless?id={ident}"))
        assert connection.read_head().status == 200
        assert connection.read_line() == b"5\r\n"
    assert starlette_server.wait_for_event(f"endless stopped {ident}"), "the stream went on after the disconnect"


def test_request_is_disconnected_notices_the_client_leaving(server_pool: ServerPool, loop: str) -> None:
    """Without BaseHTTPMiddleware in front (see asgi_starlette.bare for why)."""
    server = server_pool.get("asgi_starlette:bare", *LOOPS[loop])
    ident = f"noticed-{time.monotonic_ns()}"
    with RawConnection.to(server) as connection:
        connection.send(request("POST", f"/disconnected?id={ident}", body=b"payload"))
        time.sleep(0.1)
    assert server.wait_for_event(f"noticed disconnect {ident}", timeout=5)


@pytest.fixture(scope="module")
def prefixed(server_pool: ServerPool, loop: str) -> Server:
    """asgi_starlette:app behind --root-path /prefix."""
    return server_pool.get("asgi_starlette:app", "--root-path", "/prefix", *LOOPS[loop])


def test_root_path_is_honoured_by_starlette_routing(prefixed: Server) -> None:
    with httpx.Client(base_url=prefixed.base_url, timeout=20) as http:
        response = http.get("/prefix/users/5/settings")
        assert response.status_code == 200, response.text
        assert response.json()["user_id"] == 5
        assert http.get("/prefix/api/info").json() == {"root_path": "/prefix/api", "path": "/prefix/api/info"}
