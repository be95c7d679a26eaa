"""A real FastAPI application (tests/apps/asgi_fastapi.py) with no server-specific code (issue 3 item 8).

Runs on uvloop and on plain asyncio.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
from typing import TYPE_CHECKING

import httpx
import pytest

# Rewritten asserts in the shared helpers, which are also loaded as a plugin below.
pytest.register_assert_rewrite("asgi_support")
from asgi_support import LOOPS, ONE_WORKER, logged  # noqa: E402

#: The shared ASGI fixtures (`loop`, `raw_server`) live in asgi_support.
pytest_plugins = ("asgi_support",)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from conftest import Server, ServerPool


@pytest.fixture(scope="module")
def fastapi_server(server_pool: ServerPool, loop: str) -> Server:
    """asgi_fastapi:app on each loop."""
    return server_pool.get("asgi_fastapi:app", *LOOPS[loop])


@pytest.fixture
def client(fastapi_server: Server) -> Iterator[httpx.Client]:
    """An httpx client for the FastAPI server."""
    with httpx.Client(base_url=fastapi_server.base_url, timeout=20) as http:
        yield http


def test_lifespan_context_manager_ran_at_startup(fastapi_server: Server) -> None:
    assert fastapi_server.events()[0] == "fastapi startup"


def test_path_and_query_parameters(client: httpx.Client) -> None:
    response = client.get("/items/42", params={"q": "needle haystack", "limit": "3"})
    assert response.status_code == 200
    assert response.json() == {"item_id": 42, "q": "needle haystack", "limit": 3}
    assert client.get("/items/7").json() == {"item_id": 7, "q": None, "limit": 10}


def test_invalid_path_parameter_is_a_422(client: httpx.Client) -> None:
    response = client.get("/items/not-a-number")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["path", "item_id"]


def test_json_body(client: httpx.Client) -> None:
    response = client.post("/items", json={"name": "widget", "price": 12.34, "tags": ["a", "b"]})
    assert response.status_code == 200
    assert response.json() == {"name": "widget", "price_cents": 1234, "tags": ["a", "b"]}


def test_invalid_json_body_is_a_422(client: httpx.Client) -> None:
    response = client.post("/items", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 422


def test_streaming_response(client: httpx.Client) -> None:
    with client.stream("GET", "/stream", params={"count": "20"}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/plain")
        assert response.headers.get("transfer-encoding") == "chunked"
        lines = list(response.iter_lines())
    assert lines == [f"line {index}" for index in range(20)]


def test_background_task_runs_after_the_response(client: httpx.Client, fastapi_server: Server) -> None:
    name = f"task-{os.getpid()}-{id(client)}"
    response = client.post(f"/background/{name}")
    assert response.json() == {"queued": name}
    assert fastapi_server.wait_for_event(f"background done {name}")


def test_sync_endpoint_runs_on_a_worker_thread(client: httpx.Client, fastapi_server: Server) -> None:
    """Kinds of thread: tests/apps/thread_kind.py."""
    assert client.get("/sync").json() == {"thread": "python"}
    assert client.get("/async-thread").json()["thread"] in fastapi_server.own_threads


def test_many_sync_requests_in_parallel(fastapi_server: Server) -> None:
    def fetch(_: int) -> int:
        with httpx.Client(base_url=fastapi_server.base_url, timeout=20) as http:
            return sum(http.get("/sync").status_code for _ in range(10))

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(fetch, range(8))) == [2000] * 8


def test_lifespan_state_reaches_requests(client: httpx.Client) -> None:
    assert client.get("/state").json() == {"greeting": "hello from lifespan"}


def test_upload_file_multipart_of_1_mib(client: httpx.Client) -> None:
    payload = os.urandom(1024 * 1024 + 123)
    response = client.post(
        "/upload",
        files={"file": ("data.bin", payload, "application/octet-stream")},
        data={"note": "a note"},
    )
    assert response.status_code == 200, response.text
    assert response.json() == {
        "filename": "data.bin",
        "size": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
        "note": "a note",
    }


def test_http_exception(client: httpx.Client) -> None:
    response = client.get("/missing")
    assert (response.status_code, response.json()) == (404, {"detail": "no such thing"})


def test_unhandled_exception_is_a_500_and_logged(client: httpx.Client, fastapi_server: Server) -> None:
    response = client.get("/crash")
    assert response.status_code == 500
    assert logged(fastapi_server, "RuntimeError: fastapi endpoint crashed"), fastapi_server.excerpt()
    assert client.get("/plain").text == "plain text"


def test_keep_alive_connection_serves_many_requests(client: httpx.Client) -> None:
    for index in range(50):
        assert client.get(f"/items/{index}").json()["item_id"] == index


def test_shutdown_runs_the_end_of_the_lifespan_context(start_server: Callable[..., Server], loop: str) -> None:
    # One worker thread: one lifespan (each worker thread runs its own; see test_asgi_lifespan.py).
    server = start_server("asgi_fastapi:app", *ONE_WORKER, *LOOPS[loop])
    with httpx.Client(base_url=server.base_url, timeout=20) as http:
        assert http.get("/plain").text == "plain text"
    assert server.stop() == 0
    assert server.events() == ["fastapi startup", "fastapi shutdown"], server.excerpt()
