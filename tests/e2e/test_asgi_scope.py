"""The ASGI 3 HTTP connection scope (ASGI HTTP spec 2.4), as the application sees it (issue 3 item 2).

/scope on tests/apps/asgi_raw.py answers the scope as JSON, bytes shown as
{"bytes": latin-1 text}, tuples as {"tuple": [...]}, dicts as {"dict": {...}}.
Every test runs on uvloop and on plain asyncio.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pytest
from rawhttp import RawConnection, request

# Rewritten asserts in the shared helpers, which are also loaded as a plugin below.
pytest.register_assert_rewrite("asgi_support")
from asgi_support import LOOP_NAMES, LOOPS, RAW, get_json, raw_on  # noqa: E402

#: The shared ASGI fixtures (`loop`, `raw_server`) live in asgi_support.
pytest_plugins = ("asgi_support",)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server, ServerPool


def scope_of(server: Server, data: bytes) -> dict[str, Any]:
    """Send `data` (a request to /scope...) and return the scope the application saw."""
    with RawConnection.to(server) as connection:
        connection.send(data)
        response = connection.read_response()
    assert response.status == 200, response.body[:2000]
    dumped: dict[str, Any] = json.loads(response.body)
    return dumped


def header_pairs(scope: dict[str, Any]) -> list[tuple[str, str]]:
    """scope['headers'] as (name, value) text pairs, checking each is a 2-tuple of bytes."""
    pairs = []
    for item in scope["headers"]:
        assert set(item) == {"tuple"}, f"a header is not a tuple: {item!r}"
        name, value = item["tuple"]
        pairs.append((name["bytes"], value["bytes"]))
    return pairs


def test_the_startup_log_names_the_event_loop(raw_server: Server, loop: str) -> None:
    assert raw_server.stderr.wait_for(lambda line: LOOP_NAMES[loop] in line, 1) is not None, raw_server.excerpt()


def test_fixed_keys_and_their_types(raw_server: Server) -> None:
    scope = scope_of(raw_server, request("GET", "/scope/fixed?a=1"))
    assert scope["type"] == "http"
    assert scope["asgi"] == {"dict": {"version": "3.0", "spec_version": "2.4"}}
    assert scope["http_version"] == "1.1"
    assert scope["method"] == "GET"
    assert scope["scheme"] == "http"
    assert scope["root_path"] == ""
    assert scope["_types"]["path"] == "str"
    assert scope["_types"]["raw_path"] == "bytes"
    assert scope["_types"]["query_string"] == "bytes"
    assert scope["_types"]["headers"] in ("list", "tuple")
    assert scope["_types"]["client"] == "tuple"
    assert scope["_types"]["server"] == "tuple"
    assert scope["_types"]["state"] == "dict"
    assert scope["_thread"] in raw_server.own_threads, "the application did not run on the server's own thread"


def test_extensions_name_trailers_pathsend_and_early_hint(raw_server: Server) -> None:
    scope = scope_of(raw_server, request("GET", "/scope/ext"))
    extensions = scope["extensions"]["dict"]
    assert set(extensions) == {"http.response.trailers", "http.response.pathsend", "http.response.early_hint"}
    for value in extensions.values():
        assert value == {"dict": {}}


def test_path_raw_path_and_query_string(raw_server: Server) -> None:
    scope = scope_of(raw_server, request("GET", "/scope/a%20b/%C3%A9t%C3%A9/x%2Fy?q=%20&r=%C3%A9&flag"))
    assert scope["path"] == "/scope/a b/été/x/y"
    assert scope["raw_path"] == {"bytes": "/scope/a%20b/%C3%A9t%C3%A9/x%2Fy"}
    assert scope["query_string"] == {"bytes": "q=%20&r=%C3%A9&flag"}


def test_empty_query_string_is_empty_bytes(raw_server: Server) -> None:
    scope = scope_of(raw_server, request("GET", "/scope/noquery"))
    assert scope["query_string"] == {"bytes": ""}
    assert scope["raw_path"] == {"bytes": "/scope/noquery"}
    scope = scope_of(raw_server, request("GET", "/scope/emptyquery?"))
    assert scope["query_string"] == {"bytes": ""}
    assert scope["raw_path"] == {"bytes": "/scope/emptyquery"}


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "PURGE"])
def test_method_is_passed_through(raw_server: Server, method: str) -> None:
    scope = scope_of(raw_server, request(method, "/scope/m", body=b"x" if method in ("POST", "PUT") else b""))
    assert scope["method"] == method


def test_http10_request(raw_server: Server) -> None:
    scope = scope_of(raw_server, request("GET", "/scope/ten", version="HTTP/1.0", host=None))
    assert scope["http_version"] == "1.0"
    assert header_pairs(scope) == []


def test_headers_lower_cased_bytes_in_order_with_repeats(raw_server: Server) -> None:
    data = request(
        "GET",
        "/scope/headers",
        headers=[
            ("X-First", "1"),
            ("Accept", "text/html"),
            ("X-Repeat", "a"),
            ("x-mixed-CASE", "Value Keeps Case"),
            ("X-Repeat", "b"),
            ("Cookie", "a=1"),
            ("Cookie", "b=2"),
            ("X-Empty", ""),
        ],
    )
    scope = scope_of(raw_server, data)
    assert scope["_header_types"] == ["tuple(bytes,bytes)"]
    assert header_pairs(scope) == [
        ("host", "localhost"),
        ("x-first", "1"),
        ("accept", "text/html"),
        ("x-repeat", "a"),
        ("x-mixed-case", "Value Keeps Case"),
        ("x-repeat", "b"),
        ("cookie", "a=1"),
        ("cookie", "b=2"),
        ("x-empty", ""),
    ]


def test_header_values_keep_obs_text_bytes(raw_server: Server) -> None:
    data = b"GET /scope/latin HTTP/1.1\r\nHost: localhost\r\nX-Latin: caf\xe9\r\n\r\n"
    scope = scope_of(raw_server, data)
    assert ("x-latin", "caf\xe9") in header_pairs(scope)


def test_content_length_and_transfer_encoding_are_in_the_headers(raw_server: Server) -> None:
    scope = scope_of(raw_server, request("POST", "/scope/cl", body=b"abc"))
    assert ("content-length", "3") in header_pairs(scope)


def test_client_and_server_addresses(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        local_host, local_port = connection.sock.getsockname()[:2]
        connection.send(request("GET", "/scope/addr"))
        scope = json.loads(connection.read_response().body)
    assert scope["client"] == {"tuple": [local_host, local_port]}
    assert scope["server"] == {"tuple": ["127.0.0.1", raw_server.port]}


def test_keep_alive_requests_each_get_a_fresh_scope(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/scope/one?n=1", headers=[("X-One", "1")]))
        first = json.loads(connection.read_response().body)
        connection.send(request("POST", "/scope/two?n=2", body=b"zz"))
        second = json.loads(connection.read_response().body)
    assert (first["method"], first["path"], first["query_string"]) == ("GET", "/scope/one", {"bytes": "n=1"})
    assert (second["method"], second["path"], second["query_string"]) == ("POST", "/scope/two", {"bytes": "n=2"})
    assert ("x-one", "1") not in header_pairs(second)
    assert first["client"] == second["client"]


def test_state_is_the_lifespan_state(raw_server: Server) -> None:
    scope = scope_of(raw_server, request("GET", "/scope/state"))
    state = scope["state"]["dict"]
    assert state["name"] == "asgi_raw"
    assert isinstance(state["started_pid"], int)


def test_state_is_a_shallow_copy_per_request(raw_server: Server) -> None:
    # /state reports what it sees, then sets a new key, rebinds `name` and appends to a shared list.
    # Both on one connection: one worker thread, whose lifespan state both copy (each thread has its own).
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/state?tag=first"))
        first = json.loads(connection.read_response().body)
        connection.send(request("GET", "/state?tag=second"))
        second = json.loads(connection.read_response().body)
    assert first["name"] == second["name"] == "asgi_raw", "a rebinding in one request leaked into the next"
    assert first["added"] is None
    assert second["added"] is None, "a key added in one request's state was seen by the next"
    assert "added" not in second["keys"]
    # Shallow: the list object is the lifespan's, so an append is shared (as the spec says).
    assert second["shared_list"][-1:] == ["first"]


# --- --root-path ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mounted(server_pool: ServerPool, loop: str) -> Server:
    """asgi_raw:app with --root-path /mount."""
    return raw_on(server_pool, loop, "--root-path", "/mount")


def test_root_path_comes_from_the_option_and_path_is_the_full_path(mounted: Server) -> None:
    # ASGI HTTP spec 2.4: root_path is the mount point; `path` is the full request path, which
    # includes root_path (the application strips it when routing).
    with RawConnection.to(mounted) as connection:
        connection.send(request("GET", "/mount/items/7?x=1"))
        response = connection.read_response()
    # asgi_raw routes on the first segment: "mount" is not a route, so it answers 404 naming it.
    assert (response.status, response.body) == (404, b"no route mount")
    with RawConnection.to(mounted) as connection:
        connection.send(request("GET", "/scope/under/mount"))
        scope = json.loads(connection.read_response().body)
    assert scope["root_path"] == "/mount"
    assert scope["path"] == "/scope/under/mount"
    assert scope["raw_path"] == {"bytes": "/scope/under/mount"}


# --- unix socket ----------------------------------------------------------------------------------


def test_unix_socket_scope_has_no_client_or_server(
    start_server: Callable[..., Server], tmp_path: Path, loop: str
) -> None:
    path = tmp_path / "asgi.sock"
    server = start_server(RAW, *LOOPS[loop], "--unix", str(path))
    scope = scope_of(server, request("GET", "/scope/unix?u=1"))
    assert scope["client"] is None
    assert scope["server"] is None
    assert scope["path"] == "/scope/unix"
    assert scope["query_string"] == {"bytes": "u=1"}


def test_invalid_utf8_in_percent_escapes_is_replaced_like_urllib_unquote(raw_server: Server) -> None:
    scope = scope_of(raw_server, request("GET", "/scope/%FF%FE/ok%C3%A9?%FF"))
    assert scope["path"] == unquote("/scope/%FF%FE/ok%C3%A9") == "/scope/\ufffd\ufffd/oké"
    assert scope["raw_path"] == {"bytes": "/scope/%FF%FE/ok%C3%A9"}
    assert scope["query_string"] == {"bytes": "%FF"}


def test_encoded_slash_and_percent_stay_distinguishable_in_raw_path(raw_server: Server) -> None:
    scope = scope_of(raw_server, request("GET", "/scope/a%2Fb/100%25"))
    assert scope["path"] == "/scope/a/b/100%"
    assert scope["raw_path"] == {"bytes": "/scope/a%2Fb/100%25"}


def test_ninety_nine_headers_arrive_in_order(raw_server: Server) -> None:
    # 99 fields and Host: the most the default limits accept (more is a 431).
    fields = [(f"X-Field-{index:03d}", f"value {index}") for index in range(99)]
    scope = scope_of(raw_server, request("GET", "/scope/many", headers=fields))
    assert header_pairs(scope)[1:] == [(name.lower(), value) for name, value in fields]


def test_the_application_runs_on_the_servers_thread_and_loop_with_native_callables(
    raw_server: Server, loop: str
) -> None:
    """Issue 3 items 1 and 7: one thread, the chosen loop; receive/send are native, a ready send does not suspend."""
    facts = get_json(raw_server, "/fastpath")
    assert facts["thread"] in raw_server.own_threads, facts
    assert facts["loop"] == ("uvloop.Loop" if loop == "uvloop" else "asyncio.unix_events._UnixSelectorEventLoop")
    assert facts["send_is_python"] is False, facts
    assert facts["receive_is_python"] is False, facts
    assert facts["receive_is_coroutine"] is False, facts
    assert facts["start_is_coroutine"] is False, facts
    assert facts["start_suspended"] is False, facts
    assert facts["received"] == "http.request"
