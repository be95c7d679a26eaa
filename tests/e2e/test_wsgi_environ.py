"""The WSGI environ (PEP 3333 "environ Variables"), as the application sees it over a real connection.

/environ answers with the environ as JSON: {key: [type name, value]}.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import pytest
from rawhttp import RawConnection, request

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server, ServerPool


def environ_of(server: Server, data: bytes, connection: RawConnection | None = None) -> dict[str, list[Any]]:
    """Send `data` (a request to /environ...) and return the environ the application saw."""
    own = connection is None
    connection = connection or RawConnection.to(server)
    try:
        connection.send(data)
        response = connection.read_response()
    finally:
        if own:
            connection.close()
    assert response.status == 200, response.body[:2000]
    dumped: dict[str, list[Any]] = json.loads(response.body)
    return dumped


def values(environ: dict[str, list[Any]]) -> dict[str, Any]:
    return {key: value for key, (_, value) in environ.items()}


def test_every_required_key_is_present_with_its_type(wsgi_server: Server) -> None:
    environ = environ_of(wsgi_server, request("GET", "/environ/keys?x=1"))
    for key in (
        "REQUEST_METHOD",
        "SCRIPT_NAME",
        "PATH_INFO",
        "QUERY_STRING",
        "SERVER_NAME",
        "SERVER_PORT",
        "SERVER_PROTOCOL",
    ):
        assert environ[key][0] == "str", (key, environ[key])
    assert environ["wsgi.version"] == ["tuple", [1, 0]]
    assert environ["wsgi.url_scheme"] == ["str", "http"]
    for key in ("wsgi.multithread", "wsgi.multiprocess", "wsgi.run_once"):
        assert environ[key][0] == "bool", (key, environ[key])
    assert "wsgi.input" in environ
    assert "wsgi.errors" in environ
    assert environ["wsgi.file_wrapper"][0] != "NoneType"
    # The server's own stream objects, under the validator's wrappers: read, readline,
    # readlines, __iter__ on the input; write, flush, writelines on the errors stream.
    assert environ["wsgi.input.server"][1][:4] == [True, True, True, True]
    assert environ["wsgi.errors.server"][1][4:] == [True, True, True]
    for key, (type_name, _) in environ.items():
        if key.isupper():
            assert type_name == "str", f"CGI variable {key} is {type_name}, not a native string"


def test_request_line_variables(wsgi_server: Server) -> None:
    environ = values(environ_of(wsgi_server, request("DELETE", "/environ/rl?q=1")))
    assert environ["REQUEST_METHOD"] == "DELETE"
    assert environ["SCRIPT_NAME"] == ""
    assert environ["PATH_INFO"] == "/environ/rl"
    assert environ["QUERY_STRING"] == "q=1"
    assert environ["SERVER_PROTOCOL"] == "HTTP/1.1"


def test_server_protocol_of_an_http10_request(wsgi_server: Server) -> None:
    environ = values(environ_of(wsgi_server, request("GET", "/environ/ten", version="HTTP/1.0", host=None)))
    assert environ["SERVER_PROTOCOL"] == "HTTP/1.0"
    assert "HTTP_HOST" not in environ


def test_path_info_is_percent_decoded_as_latin_1(wsgi_server: Server) -> None:
    environ = values(environ_of(wsgi_server, request("GET", "/environ/caf%C3%A9/a%20b/100%25/x+y")))
    assert environ["PATH_INFO"] == "/environ/caf\xc3\xa9/a b/100%/x+y"


def test_path_info_with_raw_non_ascii_octets_is_latin_1(wsgi_server: Server) -> None:
    """Raw octets above 0x7f in the target are not RFC 3986, but if accepted they map through latin-1."""
    with RawConnection.to(wsgi_server) as connection:
        connection.send(b"GET /environ/\xc3\xa9 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        response = connection.read_response()
    if response.status == 200:
        assert json.loads(response.body)["PATH_INFO"][1] == "/environ/\xc3\xa9"
    else:
        assert response.status == 400


def test_query_string_is_passed_raw(wsgi_server: Server) -> None:
    environ = values(environ_of(wsgi_server, request("GET", "/environ/q?a=1&b=%20x+y&c&d=%C3%A9&a=2")))
    assert environ["QUERY_STRING"] == "a=1&b=%20x+y&c&d=%C3%A9&a=2"
    assert environ["PATH_INFO"] == "/environ/q"


def test_empty_query_string(wsgi_server: Server) -> None:
    assert values(environ_of(wsgi_server, request("GET", "/environ/noq")))["QUERY_STRING"] == ""
    assert values(environ_of(wsgi_server, request("GET", "/environ/emptyq?")))["QUERY_STRING"] == ""


def test_absolute_form_target(wsgi_server: Server) -> None:
    """RFC 9112 §3.2.2: a server MUST accept the absolute-form in requests."""
    environ = values(environ_of(wsgi_server, request("GET", "http://localhost/environ/abs?k=v")))
    assert (environ["PATH_INFO"], environ["QUERY_STRING"]) == ("/environ/abs", "k=v")


def test_content_type_and_content_length_have_no_http_prefix(wsgi_server: Server) -> None:
    data = request("POST", "/environ/ct", [("Content-Type", "text/x-test; charset=utf-8")], body=b"12345")
    environ = values(environ_of(wsgi_server, data))
    assert environ["CONTENT_TYPE"] == "text/x-test; charset=utf-8"
    assert environ["CONTENT_LENGTH"] == "5"
    assert "HTTP_CONTENT_TYPE" not in environ
    assert "HTTP_CONTENT_LENGTH" not in environ


def test_request_without_body_has_no_content_length_value(wsgi_server: Server) -> None:
    environ = values(environ_of(wsgi_server, request("GET", "/environ/nobody")))
    assert environ.get("CONTENT_LENGTH", "") in ("", "0")
    assert environ.get("CONTENT_TYPE", "") == ""


def test_http_headers_become_http_variables(wsgi_server: Server) -> None:
    data = request(
        "GET",
        "/environ/h",
        [("x-CUSTOM-header", "Value"), ("Accept", "*/*"), ("X-Pad", "  v  ")],
        host="example.com:8080",
    )
    environ = values(environ_of(wsgi_server, data))
    assert environ["HTTP_X_CUSTOM_HEADER"] == "Value"
    assert environ["HTTP_ACCEPT"] == "*/*"
    assert environ["HTTP_X_PAD"] == "v"
    assert environ["HTTP_HOST"] == "example.com:8080"


def test_repeated_headers_are_joined_with_comma_space(wsgi_server: Server) -> None:
    data = request(
        "GET", "/environ/multi", [("X-Multi", "a"), ("Accept", "text/html"), ("x-multi", "b, c"), ("X-Multi", "d")]
    )
    environ = values(environ_of(wsgi_server, data))
    assert environ["HTTP_X_MULTI"] == "a, b, c, d"


def test_repeated_cookie_headers_are_joined_with_semicolon_space(wsgi_server: Server) -> None:
    data = request("GET", "/environ/cookies", [("Cookie", "a=1"), ("Cookie", "b=2; c=3")])
    environ = values(environ_of(wsgi_server, data))
    assert environ["HTTP_COOKIE"] == "a=1; b=2; c=3"


def test_header_names_with_underscore_are_dropped(wsgi_server: Server) -> None:
    data = request(
        "GET",
        "/environ/underscore",
        [("X-Auth-User", "alice"), ("X_Auth_User", "mallory"), ("X_Only_Underscore", "dropped")],
    )
    environ = values(environ_of(wsgi_server, data))
    assert environ["HTTP_X_AUTH_USER"] == "alice"
    assert "HTTP_X_ONLY_UNDERSCORE" not in environ
    assert "mallory" not in json.dumps(environ)


def test_underscore_header_cannot_forge_content_length(wsgi_server: Server) -> None:
    data = request("POST", "/environ/forge", [("Content_Length", "999"), ("Content_Type", "evil")], body=b"ok")
    environ = values(environ_of(wsgi_server, data))
    assert environ["CONTENT_LENGTH"] == "2"
    assert environ.get("CONTENT_TYPE", "") == ""


def test_proxy_header_is_dropped(wsgi_server: Server) -> None:
    """httpoxy: a Proxy request header must never become HTTP_PROXY."""
    data = request("GET", "/environ/proxy", [("Proxy", "http://evil.example:8080"), ("X-Keep", "1")])
    environ = values(environ_of(wsgi_server, data))
    assert "HTTP_PROXY" not in environ
    assert environ["HTTP_X_KEEP"] == "1"


def test_remote_and_server_address(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        client_port = connection.sock.getsockname()[1]
        environ = values(environ_of(wsgi_server, request("GET", "/environ/addr"), connection))
    assert environ["REMOTE_ADDR"] == "127.0.0.1"
    assert environ["REMOTE_PORT"] == str(client_port)
    assert environ["SERVER_PORT"] == str(wsgi_server.port)
    assert environ["SERVER_NAME"] != ""


def test_each_request_gets_a_fresh_environ(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        first = values(environ_of(wsgi_server, request("GET", "/environ/1", [("X-Only-First", "1")]), connection))
        second = values(environ_of(wsgi_server, request("GET", "/environ/2"), connection))
    assert first["HTTP_X_ONLY_FIRST"] == "1"
    assert "HTTP_X_ONLY_FIRST" not in second
    assert second["PATH_INFO"] == "/environ/2"


def test_wsgi_errors_reach_the_server_log(wsgi_server: Server) -> None:
    marker = f"errors-marker-{time.monotonic_ns()}"
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", f"/errors?m={marker}"))
        assert connection.read_response().body == b"logged"
    for suffix in ("write", "lines-1", "lines-2"):
        found = wsgi_server.stderr.wait_for(lambda line, s=suffix: f"{marker}-{s}" in line, 5)
        assert found is not None, f"{marker}-{suffix} not in the server's stderr"


# --- --root-path --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mounted(server_pool: ServerPool) -> Server:
    return server_pool.get("wsgi_apps:app", "--root-path", "/mount")


def test_root_path_becomes_script_name_and_is_stripped_from_path_info(mounted: Server) -> None:
    environ = values(environ_of(mounted, request("GET", "/mount/environ/inner?x=1")))
    assert environ["SCRIPT_NAME"] == "/mount"
    assert environ["PATH_INFO"] == "/environ/inner"
    assert environ["QUERY_STRING"] == "x=1"


def test_root_path_with_percent_encoded_path(mounted: Server) -> None:
    environ = values(environ_of(mounted, request("GET", "/mount/environ/caf%C3%A9")))
    assert (environ["SCRIPT_NAME"], environ["PATH_INFO"]) == ("/mount", "/environ/caf\xc3\xa9")


# --- unix socket --------------------------------------------------------------------------------


def test_unix_socket_serves_and_remote_addr_is_empty(
    start_server: Callable[..., Server], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("unix") / "peregrine.sock"
    server = start_server("wsgi_apps:app", "--unix", str(path))
    assert server.unix_path == str(path)
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/hello"))
        assert connection.read_response().body == b"hello"
        environ = values(environ_of(server, request("GET", "/environ/unix"), connection))
    assert environ["REMOTE_ADDR"] == ""
    assert environ["PATH_INFO"] == "/environ/unix"
    assert environ["wsgi.url_scheme"] == "http"


def test_field_values_with_tab_obs_text_and_empty_value(wsgi_server: Server) -> None:
    data = (
        b"GET /environ/values HTTP/1.1\r\nHost: localhost\r\nX-Tab: a\tb\r\nX-Latin: caf\xe9\r\n"
        b"X-Empty:\r\nX-Spaces:    \r\n\r\n"
    )
    environ = values(environ_of(wsgi_server, data))
    assert environ["HTTP_X_TAB"] == "a\tb"
    assert environ["HTTP_X_LATIN"] == "caf\xe9"
    assert environ["HTTP_X_EMPTY"] == ""
    assert environ["HTTP_X_SPACES"] == ""


def test_extension_method_is_passed_through(wsgi_server: Server) -> None:
    environ = values(environ_of(wsgi_server, request("PURGE", "/environ/purge")))
    assert environ["REQUEST_METHOD"] == "PURGE"


def test_method_longer_than_any_implemented_is_refused_501(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("X" * 100, "/environ/long-method"))
        assert connection.read_response().status == 501
        assert connection.closed_by_server()
    assert not [call for call in wsgi_server.calls() if "long-method" in call]


def test_requests_in_a_row_on_one_connection_each_see_their_own_request_line(wsgi_server: Server) -> None:
    # The server keeps the last request's method, path, query and target strs for the next request that repeats
    # them; each request must still see exactly its own, and nothing an earlier application wrote into its environ.
    sent = [
        ("GET", "/environ/a?x=1"),
        ("GET", "/environ/a?x=1"),
        ("POST", "/environ/a?x=1"),
        ("GET", "/environ/b"),
        ("GET", "/scribble?q=1"),
        ("GET", "/environ/a?x=2"),
        ("PUT", "/environ/caf%C3%A9"),
        ("GET", "/environ/a?x=1"),
    ]
    with RawConnection.to(wsgi_server) as connection:
        seen = []
        for method, target in sent:
            if target.startswith("/scribble"):
                connection.send(request(method, target))
                assert connection.read_response().body == b"scribbled"
                continue
            environ = values(environ_of(wsgi_server, request(method, target), connection))
            seen.append(environ)
    expected = [(m, t) for m, t in sent if not t.startswith("/scribble")]
    for environ, (method, target) in zip(seen, expected, strict=True):
        path, _, query = target.partition("?")
        assert environ["REQUEST_METHOD"] == method
        assert environ["RAW_URI"] == target
        assert environ["REQUEST_URI"] == target
        assert environ["QUERY_STRING"] == query
        assert environ["PATH_INFO"] == path.replace("%C3%A9", "\xc3\xa9")
        assert "X_ADDED" not in environ
        assert isinstance(environ["REMOTE_PORT"], str)
        assert environ["REMOTE_PORT"] == seen[0]["REMOTE_PORT"]
        assert environ["wsgi.input"] is not None
