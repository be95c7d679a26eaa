"""The environ a WSGI application neither kept nor changed is filled in again for the next request.

Building an environ copies a template dict; freeing the copy after the
response and copying again was a tenth of a small request's instructions, so
the server keeps an environ nothing else holds and that the application left
as it was (its reference count and its PEP 509 version tag say so), and fills
it in for the next plain request. None of that may show: every request must
see exactly the environ a fresh copy would have given it (PEP 3333
"environ Variables"), an application that keeps its environ must find it
untouched by later requests, and one that changed it must not pass the
change on.

The reference is `mutating`, which changes every environ it gets and so is
always given a fresh copy; `plain` and `iterable` (which reads the environ
from a generator, holding it until the iterable is closed) must see the same
environs for the same requests. Applications: tests/apps/environ_reuse_apps.py.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from rawhttp import RawConnection, request

if TYPE_CHECKING:
    from conftest import Server, ServerPool

Headers = list[tuple[str, str]]

# (method, target, headers, body): requests in a row that keep, change, add
# and drop fields, on a few connections.
SEQUENCE: list[list[tuple[str, str, Headers, bytes]]] = [
    [
        ("GET", "/a?x=1", [("User-Agent", "client/1"), ("Accept", "*/*")], b""),
        ("GET", "/a?x=1", [("User-Agent", "client/1"), ("Accept", "*/*")], b""),
        ("GET", "/a?x=2", [("Accept", "*/*"), ("User-Agent", "client/1")], b""),
        ("GET", "/b", [("User-Agent", "client/1"), ("X-One", "1")], b""),
        ("POST", "/c?form", [("Content-Type", "text/plain"), ("X-One", "1")], b"hello"),
        ("GET", "/d", [("X-Rep", "1"), ("X-Rep", "2"), ("Cookie", "a=1"), ("Cookie", "b=2")], b""),
        ("GET", "/d", [("X-Rep", "1"), ("X-Rep", "2"), ("Cookie", "a=1"), ("Cookie", "b=2")], b""),
        ("GET", "/d", [("X-Rep", "1"), ("Cookie", "a=1")], b""),
    ],
    [
        ("GET", "/e", [], b""),
        ("GET", "/f", [(f"X-Many-{i}", str(i)) for i in range(40)], b""),
        ("GET", "/f", [(f"X-Many-{i}", str(i)) for i in range(31)], b""),
        ("GET", "/g", [("X-A", "a"), ("X-B", "a"), ("X-A", "a")], b""),
        ("HEAD", "/h%7Ename/%2F?q=%20", [("Accept", "*/*")], b""),
        ("GET", "/i", [("Content-Length", "0"), ("Accept", "*/*")], b""),
    ],
    [
        ("GET", "/a?x=1", [("User-Agent", "client/1"), ("Accept", "*/*")], b""),
        ("OPTIONS", "*", [], b""),
        ("GET", "http://localhost/absolute?y", [("Accept", "*/*")], b""),
    ],
]


def environs(server: Server, sequence: list[list[tuple[str, str, Headers, bytes]]]) -> list[dict[str, Any]]:
    """Each request's environ as the application reported it, REMOTE_PORT checked against the client's port."""
    seen: list[dict[str, Any]] = []
    for requests in sequence:
        with RawConnection.to(server) as connection:
            client_port = connection.sock.getsockname()[1]
            for sent_method, target, headers, body in requests:
                method = sent_method
                if method == "HEAD":
                    # A HEAD answer has no body to report in: ask the same with GET after it.
                    connection.send(request("HEAD", target, headers))
                    assert connection.read_response("HEAD").status == 200
                    method = "GET"
                connection.send(request(method, target, headers, body))
                response = connection.read_response(method)
                assert response.status == 200, response.body[:500]
                environ: dict[str, Any] = json.loads(response.body)
                assert environ.pop("REMOTE_PORT") == str(client_port)
                assert environ.pop("SERVER_PORT") == str(server.port)
                environ.pop("pid")
                environ.pop("python")
                seen.append(environ)
    return seen


@pytest.mark.parametrize("target", ["environ_reuse_apps:plain", "environ_reuse_apps:iterable"])
def test_a_reused_environ_is_what_a_fresh_copy_would_be(server_pool: ServerPool, target: str) -> None:
    reference = environs(server_pool.get("environ_reuse_apps:mutating"), SEQUENCE)
    assert environs(server_pool.get(target), SEQUENCE) == reference
    lazy = [
        [(m, t.replace("?", "-lazy?", 1) if "?" in t else t + "-lazy", h, b) for m, t, h, b in requests]
        for requests in SEQUENCE
        if all(t.startswith("/") for _, t, _, _ in requests)
    ]
    assert environs(server_pool.get(target), lazy) == environs(server_pool.get("environ_reuse_apps:mutating"), lazy)


def test_the_same_with_a_pool_of_threads(server_pool: ServerPool) -> None:
    reference = environs(server_pool.get("environ_reuse_apps:mutating"), SEQUENCE)
    assert environs(server_pool.get("environ_reuse_apps:plain", "--wsgi-threads", "3"), SEQUENCE) == reference


def one(server: Server, target: str, headers: Headers | None = None) -> dict[str, Any]:
    with RawConnection.to(server) as connection:
        connection.send(request("GET", target, headers))
        response = connection.read_response()
    assert response.status == 200, response.body[:500]
    environ: dict[str, Any] = json.loads(response.body)
    return environ


def test_a_key_the_application_added_is_not_passed_on(server_pool: ServerPool) -> None:
    server = server_pool.get("environ_reuse_apps:plain")
    one(server, "/add")
    assert "x.added" not in one(server, "/after-add")
    assert "x.added" not in one(server, "/add")


def test_a_key_the_application_removed_comes_back(server_pool: ServerPool) -> None:
    server = server_pool.get("environ_reuse_apps:plain")
    for _ in range(2):
        assert one(server, "/delete", [("X-Gone", "here")])["HTTP_X_GONE"] == "here"
    assert one(server, "/after-delete", [("X-Gone", "here")])["HTTP_X_GONE"] == "here"


def test_values_the_application_rewrote_are_set_again(server_pool: ServerPool) -> None:
    # The same request twice: the server's record says PATH_INFO, QUERY_STRING and
    # the user agent already hold these strs, which is true only of an environ the
    # application did not change.
    server = server_pool.get("environ_reuse_apps:plain")
    for _ in range(3):
        environ = one(server, "/rewrite?q=1", [("User-Agent", "ua")])
        assert (environ["PATH_INFO"], environ["QUERY_STRING"], environ["HTTP_USER_AGENT"]) == ("/rewrite", "q=1", "ua")
    environ = one(server, "/same-value", [("User-Agent", "ua")])
    assert (environ["PATH_INFO"], environ["HTTP_USER_AGENT"]) == ("/same-value", "ua")


def test_a_kept_environ_is_never_filled_in_again(server_pool: ServerPool) -> None:
    server = server_pool.get("environ_reuse_apps:plain")
    for i in range(5):
        one(server, f"/keep-{i}?n={i}", [("X-Keep", str(i))])
        one(server, f"/other-{i}", [("X-Other", str(i)), ("User-Agent", "u")])
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/kept"))
        kept = json.loads(connection.read_response().body)
    assert kept["kept"] >= 5
    assert kept["changed"] == []


def test_after_an_application_error_the_next_request_has_its_own_environ(server_pool: ServerPool) -> None:
    server = server_pool.get("environ_reuse_apps:plain")
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/raise", [("X-Failed", "1")]))
        assert connection.read_response().status == 500
    environ = one(server, "/after-raise", [("Accept", "*/*")])
    assert environ["PATH_INFO"] == "/after-raise"
    assert "HTTP_X_FAILED" not in environ
