"""HTTP/1.1 strictness (issue 2 item 5): every malformed request is refused over a real socket.

Each case sends raw bytes to /echo/MARKER, expects the exact status, the
connection closed after it, the application never called for MARKER, and
the server still answering a normal request on a new connection.
RFC 9112 §2.2, §3, §5, §6.1-6.3, §7.1; RFC 9110 §5.5, §7.2, §10.1.1, §15.
"""

from __future__ import annotations

import contextlib
import itertools
from typing import TYPE_CHECKING

import pytest
from rawhttp import RawConnection, assert_still_serving, chunked, request

if TYPE_CHECKING:
    from conftest import Server

_ids = itertools.count()


def _marker() -> str:
    return f"/echo/rejected-{next(_ids)}"


def assert_rejected(server: Server, data: bytes, status: int, marker: str) -> None:
    """`data` gets `status`, then the connection closes; the app never sees `marker`."""
    with RawConnection.to(server) as connection:
        connection.send(data)
        response = connection.read_response()
        assert response.status == status, f"{data[:200]!r}: got {response.status} {response.reason}"
        assert connection.closed_by_server(), "connection left open after an error response"
    assert not [call for call in server.calls() if marker in call], "the application was called"
    assert_still_serving(server)


def head(marker: str, *fields: str, method: str = "POST", version: str = "HTTP/1.1") -> bytes:
    """A request head with Host and the given raw field lines."""
    lines = [f"{method} {marker} {version}", "Host: localhost", *fields]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


# --- message framing: Content-Length and Transfer-Encoding (RFC 9112 §6) -----------------------


def test_content_length_with_transfer_encoding_is_refused_400(wsgi_server: Server) -> None:
    marker = _marker()
    data = head(marker, "Content-Length: 5", "Transfer-Encoding: chunked") + chunked(b"hello")
    assert_rejected(wsgi_server, data, 400, marker)


def test_smuggled_request_in_cl_te_body_never_reaches_the_application(wsgi_server: Server) -> None:
    smuggled = "/echo/smuggled-cl-te"
    inner = request("GET", smuggled)
    body = b"0\r\n\r\n" + inner
    data = head("/echo/outer-cl-te", f"Content-Length: {len(body)}", "Transfer-Encoding: chunked") + body
    assert_rejected(wsgi_server, data, 400, smuggled)
    assert not [call for call in wsgi_server.calls() if "outer-cl-te" in call]


@pytest.mark.parametrize("coding", ["gzip", "chunked, gzip", "identity", "chunked;q=1, deflate"])
def test_transfer_encoding_whose_final_coding_is_not_chunked_is_refused_400(wsgi_server: Server, coding: str) -> None:
    marker = _marker()
    assert_rejected(wsgi_server, head(marker, f"Transfer-Encoding: {coding}") + b"5\r\nhello\r\n0\r\n\r\n", 400, marker)


def test_transfer_encoding_gzip_then_chunked_is_not_implemented_501(wsgi_server: Server) -> None:
    marker = _marker()
    assert_rejected(wsgi_server, head(marker, "Transfer-Encoding: gzip, chunked") + chunked(b"hello"), 501, marker)


def test_transfer_encoding_in_two_field_lines_is_refused_400(wsgi_server: Server) -> None:
    marker = _marker()
    data = head(marker, "Transfer-Encoding: chunked", "Transfer-Encoding: chunked") + chunked(b"hello")
    assert_rejected(wsgi_server, data, 400, marker)


def test_chunked_applied_twice_is_refused_400(wsgi_server: Server) -> None:
    marker = _marker()
    assert_rejected(wsgi_server, head(marker, "Transfer-Encoding: chunked, chunked") + chunked(b"hello"), 400, marker)


@pytest.mark.parametrize("value", ["abc", "-1", "+5", "5 5", "0x5", "", "5.0", "99999999999999999999999"])
def test_invalid_content_length_is_refused_400(wsgi_server: Server, value: str) -> None:
    marker = _marker()
    assert_rejected(wsgi_server, head(marker, f"Content-Length: {value}") + b"hello", 400, marker)


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param(("Content-Length: 5, 5",), id="list-of-one-value"),
        pytest.param(("Content-Length: 5,5",), id="list-without-space"),
        pytest.param(("Content-Length: 5 ,\t5",), id="list-with-ows"),
        pytest.param(("Content-Length: 5, 6",), id="list-of-two-values"),
        pytest.param(("Content-Length: 5,",), id="list-with-empty-element"),
        pytest.param(("Content-Length: 5", "Content-Length: 5"), id="two-identical-lines"),
        pytest.param(("Content-Length: 5", "content-length:5"), id="two-identical-lines-other-spelling"),
        pytest.param(("Content-Length: 5", "Content-Length: 6"), id="two-differing-lines"),
    ],
)
def test_content_length_that_is_not_one_decimal_is_refused_400(wsgi_server: Server, fields: tuple[str, ...]) -> None:
    """RFC 9110 §8.6 lets a server reject `Content-Length: 5, 5` or replace it by 5; peregrine rejects every list
    and every repeated line (DESIGN principle 7), so CONTENT_LENGTH only ever holds one decimal."""
    marker = _marker()
    data = head(marker, *fields) + b"hello"
    with RawConnection.to(wsgi_server) as connection:
        connection.send(data)
        response = connection.read_response()
        assert response.status == 400, f"{data!r}: got {response.status} {response.reason}"
        assert response.header("connection") == "close"
        assert connection.closed_by_server(), "connection left open after an error response"
    assert not [call for call in wsgi_server.calls() if marker in call], "the application was called"
    assert_still_serving(wsgi_server)


def test_single_content_length_with_leading_zeros_is_still_served(wsgi_server: Server) -> None:
    """Content-Length = 1*DIGIT (RFC 9110 §8.6): `005` is one decimal and frames a five-byte body."""
    with RawConnection.to(wsgi_server) as connection:
        connection.send(head("/echo/leading-zeros", "Content-Length: 005") + b"hello")
        response = connection.read_response("POST")
        assert (response.status, response.body) == (200, b"hello")


# --- field lines (RFC 9112 §5, RFC 9110 §5.5) ---------------------------------------------------


def test_whitespace_between_field_name_and_colon_is_refused_400(wsgi_server: Server) -> None:
    marker = _marker()
    assert_rejected(wsgi_server, head(marker, "X-Spaced : value", method="GET"), 400, marker)


def test_whitespace_before_colon_in_content_length_is_refused_400(wsgi_server: Server) -> None:
    marker = _marker()
    assert_rejected(wsgi_server, head(marker, "Content-Length : 5") + b"hello", 400, marker)


def test_obs_fold_is_refused_400(wsgi_server: Server) -> None:
    marker = _marker()
    assert_rejected(wsgi_server, head(marker, "X-Folded: first", " continued", method="GET"), 400, marker)


def test_obs_fold_with_tab_is_refused_400(wsgi_server: Server) -> None:
    marker = _marker()
    assert_rejected(wsgi_server, head(marker, "X-Folded: first", "\tcontinued", method="GET"), 400, marker)


@pytest.mark.parametrize(
    "name", ["X(Bad)", "X Bad", 'X"Bad', "X/Bad", "X@Bad", "X\x7fBad", "X\xe9Bad", "X{Bad}", "X\x01Bad", ""]
)
def test_non_token_character_in_field_name_is_refused_400(wsgi_server: Server, name: str) -> None:
    marker = _marker()
    assert_rejected(wsgi_server, head(marker, f"{name}: value", method="GET"), 400, marker)


def test_field_line_without_colon_is_refused_400(wsgi_server: Server) -> None:
    marker = _marker()
    assert_rejected(wsgi_server, head(marker, "X-No-Colon", method="GET"), 400, marker)


@pytest.mark.parametrize(
    "value", ["a\rb", "a\nb", "a\x00b", "a\rX-Injected: 1", "\x00"], ids=["CR", "LF", "NUL", "CR-injection", "only-NUL"]
)
def test_cr_lf_nul_in_field_value_is_refused_400(wsgi_server: Server, value: str) -> None:
    marker = _marker()
    assert_rejected(wsgi_server, head(marker, f"X-Value: {value}", method="GET"), 400, marker)


def test_bare_lf_line_ending_is_refused_400(wsgi_server: Server) -> None:
    marker = _marker()
    data = f"GET {marker} HTTP/1.1\nHost: localhost\n\n".encode()
    assert_rejected(wsgi_server, data, 400, marker)


# --- Host (RFC 9112 §3.2) -----------------------------------------------------------------------


def test_http11_request_without_host_is_refused_400(wsgi_server: Server) -> None:
    marker = _marker()
    assert_rejected(wsgi_server, f"GET {marker} HTTP/1.1\r\nX-Other: 1\r\n\r\n".encode(), 400, marker)


def test_two_host_fields_are_refused_400(wsgi_server: Server) -> None:
    marker = _marker()
    assert_rejected(wsgi_server, head(marker, "Host: other", method="GET"), 400, marker)


@pytest.mark.parametrize("value", ["a b", "exa mple.com:80", "host:port", "a/b", "[::1"])
def test_invalid_host_is_refused_400(wsgi_server: Server, value: str) -> None:
    marker = _marker()
    data = f"GET {marker} HTTP/1.1\r\nHost: {value}\r\n\r\n".encode()
    assert_rejected(wsgi_server, data, 400, marker)


# --- request line (RFC 9112 §3) -----------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "GET {m}",  # HTTP/0.9 form: no version
        "GET  {m} HTTP/1.1",  # two spaces
        "GET {m}  HTTP/1.1",
        "GET {m} HTTP/1.1 extra",
        "GET {m} http/1.1",  # the version name is case-sensitive
        "GET {m} HTTP/1",
        "GET {m} HTTP/1.1.1",
        "GET {m} HTTP/11",
        "G(T {m} HTTP/1.1",  # non-token method
        "GET echo{m} HTTP/1.1",  # not origin-, absolute-, authority- or asterisk-form
        "GET {m}/a b HTTP/1.1",  # space inside the target
        "GET {m}\x7f HTTP/1.1",  # DEL in the target
        "GET {m}\x00 HTTP/1.1",
        " GET {m} HTTP/1.1",  # leading space
        "GET\t{m}\tHTTP/1.1",
        "{m} HTTP/1.1",
    ],
    ids=[
        "no-version",
        "double-space-1",
        "double-space-2",
        "extra-token",
        "lowercase-version",
        "short-version",
        "long-version",
        "no-dot",
        "bad-method",
        "bad-target-form",
        "space-in-target",
        "DEL-in-target",
        "NUL-in-target",
        "leading-space",
        "tabs",
        "no-method",
    ],
)
def test_bad_request_line_is_refused_400(wsgi_server: Server, line: str) -> None:
    marker = _marker()
    data = (line.format(m=marker) + "\r\nHost: localhost\r\n\r\n").encode("latin-1")
    assert_rejected(wsgi_server, data, 400, marker)


@pytest.mark.parametrize("version", ["HTTP/2.0", "HTTP/3.0", "HTTP/2"])
def test_unsupported_http_version_is_refused_505(wsgi_server: Server, version: str) -> None:
    marker = _marker()
    if version == "HTTP/2":
        # Not even a well-formed HTTP-version (RFC 9112 §2.3: two digits): 400 or 505 are both fair.
        with RawConnection.to(wsgi_server) as connection:
            connection.send(head(marker, method="GET", version=version))
            assert connection.read_response().status in (400, 505)
            assert connection.closed_by_server()
        assert_still_serving(wsgi_server)
        return
    assert_rejected(wsgi_server, head(marker, method="GET", version=version), 505, marker)


def test_request_target_of_8000_octets_is_served(wsgi_server: Server) -> None:
    target = "/hello/" + "a" * (8000 - len("/hello/"))
    assert len(target) == 8000
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", target))
        response = connection.read_response()
    assert (response.status, response.body) == (200, b"hello")
    assert f"call GET {target}" in wsgi_server.calls()


@pytest.mark.parametrize("length", [16 * 1024 + 1, 100 * 1024])
def test_request_target_over_16_kib_is_refused_414(wsgi_server: Server, length: int) -> None:
    marker = _marker()
    target = marker + "/" + "b" * (length - len(marker) - 1)
    assert len(target) == length
    assert_rejected(wsgi_server, head(target, method="GET"), 414, marker)


# --- expectations (RFC 9110 §10.1.1) ------------------------------------------------------------


@pytest.mark.parametrize("value", ["200-ok", "100-continue-please", "something"])
def test_expectation_other_than_100_continue_is_refused_417(wsgi_server: Server, value: str) -> None:
    marker = _marker()
    assert_rejected(wsgi_server, head(marker, f"Expect: {value}", "Content-Length: 5") + b"hello", 417, marker)


# --- chunked request bodies (RFC 9112 §7.1) -----------------------------------------------------


@pytest.mark.parametrize(
    "size_line",
    [b"zz", b"-1", b"0x5", b"5 5", b"", b"fffffffffffffffffffff", b" 5"],
    ids=["not-hex", "negative", "0x-prefix", "inner-space", "empty", "overflow", "leading-space"],
)
def test_bad_chunk_size_is_refused_400(wsgi_server: Server, size_line: bytes) -> None:
    marker = _marker()
    data = head(marker, "Transfer-Encoding: chunked") + size_line + b"\r\nhello\r\n0\r\n\r\n"
    assert_rejected(wsgi_server, data, 400, marker)


def test_bad_chunk_size_after_good_chunks_is_refused_400(wsgi_server: Server) -> None:
    marker = _marker()
    data = head(marker, "Transfer-Encoding: chunked") + b"5\r\nhello\r\nxyz\r\nworld\r\n0\r\n\r\n"
    with RawConnection.to(wsgi_server) as connection:
        connection.send(data)
        response = connection.read_response()
        assert response.status == 400
        assert connection.closed_by_server()
    assert_still_serving(wsgi_server)


def test_chunk_data_not_followed_by_crlf_is_refused_400(wsgi_server: Server) -> None:
    marker = _marker()
    data = head(marker, "Transfer-Encoding: chunked") + b"5\r\nhelloXX\r\n0\r\n\r\n"
    assert_rejected(wsgi_server, data, 400, marker)


@pytest.mark.parametrize(
    "extension",
    [b";" + b"a" * 4096, b";a=b" * 1000, b"; a=" + b"v" * 100_000],
    ids=["one-long-name", "many-extensions", "huge-value"],
)
def test_chunk_extension_abuse_is_refused_400(wsgi_server: Server, extension: bytes) -> None:
    marker = _marker()
    data = head(marker, "Transfer-Encoding: chunked") + b"5" + extension + b"\r\nhello\r\n0\r\n\r\n"
    assert_rejected(wsgi_server, data, 400, marker)


@pytest.mark.parametrize(
    "extension", [b";\x00", b';a="unterminated', b";=v", b";a b"], ids=["NUL", "open-quote", "no-name", "space-in-name"]
)
def test_invalid_chunk_extension_is_refused_400(wsgi_server: Server, extension: bytes) -> None:
    marker = _marker()
    data = head(marker, "Transfer-Encoding: chunked") + b"5" + extension + b"\r\nhello\r\n0\r\n\r\n"
    assert_rejected(wsgi_server, data, 400, marker)


def test_valid_chunk_extensions_are_accepted(wsgi_server: Server) -> None:
    data = head("/echo/ext-ok", "Transfer-Encoding: chunked") + (
        b'5;name=value;flag\r\nhello\r\n6 ; q="quoted;\\"x"\r\n world\r\n0;last\r\n\r\n'
    )
    with RawConnection.to(wsgi_server) as connection:
        connection.send(data)
        response = connection.read_response()
    assert (response.status, response.body) == (200, b"hello world")


def test_error_response_ends_pipelined_requests(wsgi_server: Server) -> None:
    """A bad request followed by a good one in the same packet: only the error is answered."""
    marker, following = _marker(), _marker()
    data = head(marker, "X-Bad : 1", method="GET") + request("GET", following)
    with RawConnection.to(wsgi_server) as connection:
        connection.send(data)
        assert connection.read_response().status == 400
        assert connection.closed_by_server()
        assert connection.buffer == b"", f"more after the error response: {connection.buffer[:200]!r}"
    calls = wsgi_server.calls()
    assert not [call for call in calls if marker in call or following in call]


def test_bad_chunk_size_arriving_while_the_application_reads_is_answered_400(wsgi_server: Server) -> None:
    """The application is already running when the bad framing arrives: it gets an error, the client a 400."""
    marker = _marker().replace("/echo/", "/input-error/")
    with RawConnection.to(wsgi_server) as connection:
        connection.send(head(marker, "Transfer-Encoding: chunked") + b"5\r\nhello\r\n")
        assert wsgi_server.wait_for_event(f"call POST {marker}")
        connection.send(b"zz\r\nworld\r\n0\r\n\r\n")
        response = connection.read_response()
        assert response.status == 400
        assert connection.closed_by_server()
    assert "input-error none" not in wsgi_server.events()[-3:]
    assert_still_serving(wsgi_server)


def test_chunk_extension_abuse_arriving_while_the_application_reads_is_answered_400(wsgi_server: Server) -> None:
    marker = _marker().replace("/echo/", "/input-error/")
    with RawConnection.to(wsgi_server) as connection:
        connection.send(head(marker, "Transfer-Encoding: chunked") + b"5\r\nhello\r\n")
        assert wsgi_server.wait_for_event(f"call POST {marker}")
        # The server may answer and shut down before all of this is sent.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            connection.send(b"5;" + b"e" * 5000 + b"\r\nworld\r\n0\r\n\r\n")
        assert connection.read_response().status == 400
        assert connection.closed_by_server()
    assert_still_serving(wsgi_server)
