"""Django's own ASGI handler (tests/apps/django_site) with no server-specific code (issue 3 item 8).

Django does not speak lifespan (it raises on the scope), so the server must
detect that and serve it without. Runs on uvloop and on plain asyncio.
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING

import httpx
import pytest

# Rewritten asserts in the shared helpers, which are also loaded as a plugin below.
pytest.register_assert_rewrite("asgi_support")
from asgi_support import LOOPS, logged  # noqa: E402

#: The shared ASGI fixtures (`loop`, `raw_server`) live in asgi_support.
pytest_plugins = ("asgi_support",)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from conftest import Server, ServerPool

TARGET = "django_site.asgi:application"


@pytest.fixture(scope="module")
def django_server(server_pool: ServerPool, loop: str) -> Server:
    """Django's ASGI handler on each loop."""
    return server_pool.get(TARGET, *LOOPS[loop])


@pytest.fixture
def client(django_server: Server) -> Iterator[httpx.Client]:
    """An httpx client for the Django server."""
    with httpx.Client(base_url=django_server.base_url, timeout=20) as http:
        yield http


def test_served_without_lifespan(django_server: Server) -> None:
    assert logged(django_server, "does not support the ASGI lifespan protocol"), django_server.excerpt()


def test_sync_view_with_path_and_query(client: httpx.Client) -> None:
    """Django runs a sync view under ASGI in a thread of its own (see tests/apps/thread_kind.py)."""
    response = client.get("/hello/ada", params=[("q", "one"), ("q", "two")], headers={"User-Agent": "e2e/1"})
    assert response.status_code == 200
    assert response.json() == {
        "name": "ada",
        "q": ["one", "two"],
        "method": "GET",
        "agent": "e2e/1",
        "script_name": "",
        "path": "/hello/ada",
        "thread": "python",
    }


def test_async_view_runs_on_the_loop_thread(client: httpx.Client, django_server: Server) -> None:
    assert client.get("/async-view").json()["thread"] in django_server.own_threads


def test_unknown_url_is_a_404(client: httpx.Client) -> None:
    assert client.get("/nowhere").status_code == 404


def test_csrf_exempt_post_with_a_body(client: httpx.Client) -> None:
    payload = os.urandom(300_000)
    response = client.post("/echo", content=payload, headers={"Content-Type": "application/octet-stream"})
    assert response.status_code == 200
    assert response.json() == {
        "size": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
        "content_type": "application/octet-stream",
        "field": None,
    }


def test_csrf_exempt_form_post(client: httpx.Client) -> None:
    response = client.post("/echo", data={"field": "value with spaces"})
    assert response.json()["field"] == "value with spaces"


def test_post_without_csrf_token_is_refused(client: httpx.Client) -> None:
    assert client.post("/protected", data={"x": "1"}).status_code == 403


def test_streaming_http_response(client: httpx.Client) -> None:
    with client.stream("GET", "/stream", params={"count": "500"}) as response:
        assert response.status_code == 200
        assert response.headers.get("transfer-encoding") == "chunked"
        lines = list(response.iter_lines())
    assert lines == [f"django line {index}" for index in range(500)]


def test_view_exception_is_answered_500_by_django(client: httpx.Client) -> None:
    assert client.get("/crash").status_code == 500
    assert client.get("/hello/after").status_code == 200


@pytest.fixture(scope="module")
def mounted_django(server_pool: ServerPool, loop: str) -> Server:
    """Django behind --root-path /dj."""
    return server_pool.get(TARGET, "--root-path", "/dj", *LOOPS[loop])


def test_root_path_becomes_djangos_script_name(mounted_django: Server) -> None:
    with httpx.Client(base_url=mounted_django.base_url, timeout=20) as http:
        response = http.get("/dj/hello/grace")
    assert response.status_code == 200, response.text
    result = response.json()
    assert (result["name"], result["script_name"], result["path"]) == ("grace", "/dj", "/dj/hello/grace")
