"""A real Flask application (tests/apps/flask_app.py, under the PEP 3333 validator) served by peregrine."""

from __future__ import annotations

import hashlib
import os
import time
from typing import TYPE_CHECKING

import httpx
import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

    from conftest import Server, ServerPool

pytest.importorskip("flask")


@pytest.fixture(scope="module")
def flask_server(server_pool: ServerPool) -> Server:
    # The validator's lint_app takes (*args, **kw): no signature to detect the protocol from.
    return server_pool.get("flask_app:application", "--protocol", "wsgi")


@pytest.fixture
def client(flask_server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=flask_server.base_url, timeout=20) as http:
        yield http


def test_index(client: httpx.Client) -> None:
    response = client.get("/")
    assert (response.status_code, response.text) == (200, "flask index")
    assert response.headers["content-type"].startswith("text/html")


def test_routing_with_a_converter_and_query(client: httpx.Client) -> None:
    response = client.get("/users/42", params={"q": "caf\u00e9 & co"})
    assert response.status_code == 200
    assert response.json() == {"id": 42, "kind": "int", "q": "caf\u00e9 & co"}


def test_unknown_route_uses_the_error_handler(client: httpx.Client) -> None:
    response = client.get("/users/not-a-number")
    assert (response.status_code, response.text) == (404, "flask says not found")


def test_method_not_allowed(client: httpx.Client) -> None:
    assert client.get("/form").status_code == 405


def test_form_post(client: httpx.Client) -> None:
    response = client.post("/form", data={"name": "Zo\u00eb", "tag": ["a", "b"]})
    assert response.status_code == 200
    assert response.json() == {
        "name": "Zo\u00eb",
        "tags": ["a", "b"],
        "content_type": "application/x-www-form-urlencoded",
    }


def test_file_upload_of_1_mib(client: httpx.Client) -> None:
    data = os.urandom(1024 * 1024 + 7)
    response = client.post(
        "/upload", files={"file": ("blob.bin", data, "application/octet-stream")}, data={"note": "hello"}
    )
    assert response.status_code == 200
    assert response.json() == {
        "filename": "blob.bin",
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "note": "hello",
    }


def test_file_upload_with_chunked_request_body(client: httpx.Client) -> None:
    data = os.urandom(300_000)
    request = client.build_request("POST", "/upload", files={"file": ("c.bin", data)})
    body = request.read()

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(body), 65536):
            yield body[start : start + 65536]

    headers = {"content-type": request.headers["content-type"]}
    response = client.post("/upload", content=pieces(), headers=headers)
    assert response.status_code == 200
    assert response.json()["sha256"] == hashlib.sha256(data).hexdigest()


def test_streaming_response(client: httpx.Client) -> None:
    started = time.monotonic()
    arrivals = []
    with client.stream("GET", "/stream", params={"n": "6"}) as response:
        assert response.status_code == 200
        assert response.headers.get("transfer-encoding") == "chunked"
        text = ""
        for piece in response.iter_text():
            arrivals.append(time.monotonic() - started)
            text += piece
    assert text == "".join(f"line {i} of 6\n" for i in range(6))
    assert arrivals[0] < 0.25, f"first line after {arrivals[0]:.2f}s: the stream was buffered"


def test_keep_alive_across_flask_requests(client: httpx.Client) -> None:
    for i in range(10):
        assert client.get(f"/users/{i}").json()["id"] == i


def test_plain_flask_app_is_detected_as_wsgi(server_pool: ServerPool) -> None:
    server = server_pool.get("flask_app:app")
    assert "(WSGI)" in server.stderr.text()
    assert httpx.get(server.base_url + "/", timeout=10).text == "flask index"
