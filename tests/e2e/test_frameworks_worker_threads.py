"""Django (its WSGI and its ASGI handler) and FastAPI served by two worker threads of one process (issue #16 point 6).

`--free-threaded --workers 2` on a free-threaded CPython, else the internal
PEREGRINE_WORKER_CONTEXTS=2 (conftest's `two_worker_threads`). Each
framework is imported once and serves from both threads: both threads answer,
the GIL stays off inside the requests on a free-threaded build (nothing the
frameworks import re-enables it: the worker would log a warning saying so),
and real requests (routing with path and query parameters, JSON, a POST body)
come back right while spread over both threads.

Applications: tests/apps/django_site (wsgi.py, asgi.py) and tests/apps/asgi_fastapi.py.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from installed import server_python_facts

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server

pytest.importorskip("django")
pytest.importorskip("fastapi")

#: (target, the path of a view that reports the serving thread, run where the worker's own thread runs it).
FRAMEWORKS = {
    "django-wsgi": ("django_site.wsgi:application", "/where"),
    "django-asgi": ("django_site.asgi:application", "/where-async"),
    "fastapi": ("asgi_fastapi:app", "/where"),
}
CLIENTS = 8
#: Rounds of CLIENTS requests on new connections at most, until both threads have answered.
MAX_ROUNDS = 25


def get_json(client: httpx.Client, path: str, **params: Any) -> Any:  # noqa: ANN401 (whatever JSON the view answered)
    """GET; the JSON of its 200."""
    response = client.get(path, params=params)
    assert response.status_code == 200, (path, response.status_code, response.text[:500])
    return response.json()


def client_of(server: Server) -> httpx.Client:
    """One client for all the test's threads (httpx's pool is thread-safe): CLIENTS connections at most."""
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    return httpx.Client(base_url=server.base_url, timeout=20, limits=limits)


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_both_worker_threads_serve_with_the_gil_off(two_worker_threads: Callable[..., Server], framework: str) -> None:
    target, where = FRAMEWORKS[framework]
    server = two_worker_threads(target)
    free = server_python_facts()["free_threaded"]
    answers: list[dict[str, Any]] = []
    # Each request on a new connection (Connection: close), so that accepting spreads them.
    with ThreadPoolExecutor(CLIENTS) as pool, client_of(server) as client:
        client.headers["connection"] = "close"
        for _ in range(MAX_ROUNDS):
            answers += pool.map(lambda _: get_json(client, where), range(CLIENTS))
            if len({answer["thread"] for answer in answers}) == 2:
                break
    assert len({answer["thread"] for answer in answers}) == 2, f"only one worker thread answered: {answers[:3]}"
    assert {answer["kind"] for answer in answers} == {"main", "server"}, answers[:3]
    assert {answer["gil"] for answer in answers} == {not free}, "the GIL was on inside a request" if free else ""
    assert "enabled the GIL" not in server.stderr.text(), server.excerpt()


def django_requests(client: httpx.Client, index: int) -> None:
    """Routing, JSON and a POST body through Django's handler."""
    hello = get_json(client, f"/hello/user{index}", q=["one", str(index)])
    assert (hello["name"], hello["q"], hello["method"], hello["path"]) == (
        f"user{index}",
        ["one", str(index)],
        "GET",
        f"/hello/user{index}",
    )
    body = f"post {index} ".encode() * (100 + index)
    response = client.post("/echo", content=body)
    assert response.status_code == 200
    assert response.json()["sha256"] == hashlib.sha256(body).hexdigest()
    form = client.post("/echo", data={"field": f"value {index}"})
    assert form.json()["field"] == f"value {index}"
    # CSRF protection still guards an unexempted POST.
    assert client.post("/protected", content=b"x").status_code == 403


def fastapi_requests(client: httpx.Client, index: int) -> None:
    """Routing, validation, JSON both ways through FastAPI (pydantic)."""
    assert get_json(client, f"/items/{index}", q="needle", limit=str(index)) == {
        "item_id": index,
        "q": "needle",
        "limit": index,
    }
    item = {"name": f"widget {index}", "price": index + 0.25, "tags": ["a", str(index)]}
    response = client.post("/items", json=item)
    assert response.status_code == 200
    assert response.json() == {"name": f"widget {index}", "price_cents": index * 100 + 25, "tags": ["a", str(index)]}
    assert client.get("/items/not-a-number").status_code == 422
    assert client.post("/items", json={"price": 1}).status_code == 422


REQUESTS: dict[str, Callable[[httpx.Client, int], None]] = {
    "django-wsgi": django_requests,
    "django-asgi": django_requests,
    "fastapi": fastapi_requests,
}


def thread_serving_one_connection(server: Server, framework: str, index: int) -> int:
    """The framework's requests over one new keep-alive connection; the worker thread that served them.

    Each worker thread accepts from the one listener, so which thread takes a
    given connection is up to the kernel's wake-ups: a connection stays with the
    thread that accepted it, so asking it first says who served the rest.
    """
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    with httpx.Client(base_url=server.base_url, timeout=20, limits=limits) as client:
        thread = get_json(client, FRAMEWORKS[framework][1])["thread"]
        REQUESTS[framework](client, index)
        return thread


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_routing_json_and_post_bodies_over_both_threads(
    two_worker_threads: Callable[..., Server], framework: str
) -> None:
    target, _ = FRAMEWORKS[framework]
    server = two_worker_threads(target)
    threads: set[int] = set()
    served = 0
    with ThreadPoolExecutor(CLIENTS) as pool:
        # At least 32 connections' worth of requests, then more rounds until both threads have served some.
        for _ in range(MAX_ROUNDS):
            indices = range(served, served + CLIENTS)
            threads |= set(pool.map(lambda index: thread_serving_one_connection(server, framework, index), indices))
            served += CLIENTS
            if served >= 32 and len(threads) == 2:
                break
    assert len(threads) == 2, f"only one worker thread served the requests of {served} connections"
