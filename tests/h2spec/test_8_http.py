"""RFC 9113 §8: HTTP message framing (§8.1), fields (§8.2), pseudo-header fields (§8.3), CONNECT (§8.5).

Malformed requests (§8.1.1) must be reset with PROTOCOL_ERROR (a 4xx may come
first; GOAWAY PROTOCOL_ERROR is accepted as §5.4.1 allows it) and must never
reach the application: each case uses its own path and checks the
application's call log.
"""

from __future__ import annotations

import itertools
import json
from typing import TYPE_CHECKING

import pytest

pytest.register_assert_rewrite("h2wire", "h2support")
from h2support import peregrine_only  # noqa: E402
from h2wire import (  # noqa: E402
    E,
    FrameConn,
    HeaderList,
    S,
    T,
    assert_still_serving,
    expect_ignored,
    expect_malformed,
    request_headers,
)

pytest_plugins = ("h2support",)
pytestmark = pytest.mark.timeout(60)

if TYPE_CHECKING:
    from h2support import Target

_serial = itertools.count()


def unique(path: str = "/hello") -> str:
    """A path no other case uses (so the call log tells whether this request reached the application)."""
    return f"{path}/case{next(_serial)}"


def send_malformed(target: Target, headers: HeaderList, path: str, *, end_stream: bool = True) -> None:
    """Send `headers` as a request on stream 1 and expect it treated as malformed."""
    with FrameConn.open(target) as conn:
        conn.headers(1, headers, end_stream=end_stream)
        expect_malformed(conn, 1, path)


def pseudo(target: Target, path: str, method: str = "GET") -> list[tuple[str | bytes, str | bytes]]:
    """The four request pseudo-header fields."""
    return [(":method", method), (":scheme", target.scheme), (":authority", target.authority), (":path", path)]


# --- §8.1 message framing --------------------------------------------------------------------------


def test_second_headers_without_end_stream_is_malformed(target: Target) -> None:
    """RFC 9113 §8.1: a HEADERS after the request head that does not end the stream (trailers without END_STREAM)
    makes the request malformed."""
    with FrameConn.open(target) as conn:
        conn.headers(1, request_headers(target, "/echo", "POST"), end_stream=False)
        conn.data(1, b"body")
        conn.headers(1, [("x-trailer", "1")], end_stream=False)
        expect_malformed(conn, 1)


def test_trailers_with_a_pseudo_header_are_malformed(target: Target) -> None:
    """RFC 9113 §8.1: "Trailers MUST NOT include pseudo-header fields"."""
    with FrameConn.open(target) as conn:
        conn.headers(1, request_headers(target, "/echo", "POST"), end_stream=False)
        conn.data(1, b"body")
        conn.headers(1, [(":path", "/trailer"), ("x-trailer", "1")], end_stream=True)
        expect_malformed(conn, 1)


def test_request_trailers_are_accepted(target: Target) -> None:
    """RFC 9113 §8.1: a request may end with a trailer section; the body is delivered."""
    with FrameConn.open(target) as conn:
        conn.headers(1, request_headers(target, "/echo", "POST", [("te", "trailers")]), end_stream=False)
        conn.data(1, b"with trailers")
        conn.headers(1, [("x-checksum", "abc")], end_stream=True)
        assert conn.response(1).body == b"with trailers"


def test_trailers_directly_after_headers_are_accepted(target: Target) -> None:
    """RFC 9113 §8.1: a request of HEADERS then trailers (no DATA) is well-formed."""
    with FrameConn.open(target) as conn:
        conn.headers(1, request_headers(target, "/echo", "POST"), end_stream=False)
        conn.headers(1, [("x-trailer", "only")], end_stream=True)
        assert conn.response(1).body == b""


def test_content_length_larger_than_data_is_malformed(target: Target) -> None:
    """RFC 9113 §8.1.1: content-length not equal to the DATA payload length (less data) is malformed."""
    with FrameConn.open(target) as conn:
        conn.headers(1, request_headers(target, "/echo", "POST", [("content-length", "10")]), end_stream=False)
        conn.data(1, b"test", end_stream=True)
        expect_malformed(conn, 1)


def test_content_length_smaller_than_data_is_malformed(target: Target) -> None:
    """RFC 9113 §8.1.1: more DATA (over several frames) than content-length is malformed."""
    with FrameConn.open(target) as conn:
        conn.headers(1, request_headers(target, "/echo", "POST", [("content-length", "4")]), end_stream=False)
        conn.data(1, b"test")
        conn.data(1, b"more", end_stream=True)
        expect_malformed(conn, 1)


def test_content_length_without_any_data_is_malformed(target: Target) -> None:
    """RFC 9113 §8.1.1: content-length 5 on a request that ends with its HEADERS is malformed."""
    path = unique()
    send_malformed(target, request_headers(target, path, "POST", [("content-length", "5")]), path)


def test_content_length_zero_with_data_is_malformed(target: Target) -> None:
    """RFC 9113 §8.1.1: content-length 0 followed by a DATA octet is malformed."""
    with FrameConn.open(target) as conn:
        conn.headers(1, request_headers(target, "/echo", "POST", [("content-length", "0")]), end_stream=False)
        conn.data(1, b"x", end_stream=True)
        expect_malformed(conn, 1)


def test_matching_content_length_is_served(target: Target) -> None:
    """RFC 9113 §8.1.1: a content-length equal to the DATA payload total is fine."""
    with FrameConn.open(target) as conn:
        conn.headers(1, request_headers(target, "/echo", "POST", [("content-length", "8")]), end_stream=False)
        conn.data(1, b"test")
        conn.data(1, b"more", end_stream=True)
        assert conn.response(1).body == b"testmore"


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param([("content-length", "5, 5")], id="list-of-one-value"),
        pytest.param([("content-length", "5,5")], id="list-without-space"),
        pytest.param([("content-length", "5"), ("content-length", "5")], id="repeated-same-value"),
        pytest.param([("content-length", "5"), ("accept", "*/*"), ("content-length", "5")], id="repeated-apart"),
    ],
)
def test_content_length_list_or_repeat_of_one_value_is_reset_and_the_connection_serves_on(
    target: Target, fields: HeaderList
) -> None:
    """RFC 9110 §8.6: content-length = 1*DIGIT; of `42, 42` (or the same value twice) a recipient may reject the
    message or replace the value. peregrine rejects (DESIGN principle 7): the request is malformed, a stream error
    PROTOCOL_ERROR (RFC 9113 §8.1.1), never seen by the application; other streams on the connection go on."""
    peregrine_only(target, "RFC 9110 §8.6 lets a server replace the list by its one value instead")
    path = unique("/echo")
    with FrameConn.open(target) as conn:
        conn.headers(1, request_headers(target, path, "POST", fields), end_stream=False)
        conn.wait_for(lambda r: r.kind == T.RST_STREAM and r.stream_id == 1, "RST_STREAM on stream 1")
        assert conn.stream_state(1).reset == E.PROTOCOL_ERROR, conn.log()
        assert conn.goaway is None, conn.log()
        served = conn.request("/echo", "POST", [("content-length", "5")], b"hello")
        assert conn.response(served).body == b"hello"
    assert not [event for event in target.events() if event.endswith(" " + path)], "the application was called"


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param([("content-length", "5, 6")], id="list-of-two-values"),
        pytest.param([("content-length", "5"), ("content-length", "6")], id="repeated-differing"),
    ],
)
def test_content_length_of_differing_values_is_malformed(target: Target, fields: HeaderList) -> None:
    """RFC 9110 §8.6 / RFC 9113 §8.1.1: differing content-length values are an invalid value: malformed."""
    path = unique("/echo")
    send_malformed(target, request_headers(target, path, "POST", fields), path, end_stream=False)


def test_complete_response_before_the_request_ends(target: Target) -> None:
    """RFC 9113 §8.1: a server may answer before the request is complete; the client's later DATA is no error
    (the server may have reset the stream with NO_ERROR, then ignores it)."""
    with FrameConn.open(target) as conn:
        conn.headers(1, request_headers(target, "/hello", "POST"), end_stream=False)
        assert conn.response(1).body == b"hello"
        assert conn.streams[1].reset in (None, E.NO_ERROR), conn.log()
        conn.data(1, b"rest of the body", end_stream=True)
        conn.ping()
        assert conn.goaway is None, conn.log()


# --- §8.2 fields -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        pytest.param("X-Upper", "1", id="uppercase-name"),
        pytest.param("x bad", "1", id="space-in-name"),
        pytest.param("x:colon", "1", id="colon-in-name"),
        pytest.param("x-nul", "a\x00b", id="nul-in-value"),
        pytest.param("x-cr", "a\rb", id="cr-in-value"),
        pytest.param("x-lf", "a\nb", id="lf-in-value"),
        pytest.param("x-lead", " leading", id="leading-space"),
        pytest.param("x-trail", "trailing\t", id="trailing-tab"),
        pytest.param("x-del\x7f", "1", id="del-in-name"),
    ],
)
def test_invalid_field_is_malformed(target: Target, name: str, value: str) -> None:
    """RFC 9113 §8.2.1: names with upper-case, SP, colon or controls, and values with NUL/CR/LF or surrounding
    whitespace, make the request malformed."""
    path = unique()
    send_malformed(target, [*pseudo(target, path), (name, value)], path)


@pytest.mark.parametrize("name", ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"])
def test_connection_specific_field_is_malformed(target: Target, name: str) -> None:
    """RFC 9113 §8.2.2: connection-specific fields make the request malformed."""
    path = unique()
    value = {"connection": "keep-alive", "transfer-encoding": "chunked", "upgrade": "websocket"}.get(name, "1")
    send_malformed(target, [*pseudo(target, path), (name, value)], path)


def test_te_other_than_trailers_is_malformed(target: Target) -> None:
    """RFC 9113 §8.2.2: TE may only be "trailers"."""
    path = unique()
    send_malformed(target, [*pseudo(target, path), ("te", "trailers, deflate")], path)


def test_te_trailers_is_allowed(target: Target) -> None:
    """RFC 9113 §8.2.2: TE: trailers is the one allowed value."""
    with FrameConn.open(target) as conn:
        assert conn.response(conn.request("/hello", extra=[("te", "trailers")])).status == 200


def test_response_has_no_connection_specific_fields_and_lowercase_names(target: Target) -> None:
    """RFC 9113 §8.2.1, §8.2.2: the server lower-cases response field names and drops connection-specific fields
    the application set."""
    with FrameConn.open(target) as conn:
        response = conn.response(conn.request("/hop"))
    names = [name for name, _ in response.headers]
    assert response.body == b"hop"
    assert all(name == name.lower() for name in names), names
    assert not {"connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection"} & set(names), names
    assert ("x-mixed-case", "yes") in response.headers


# --- §8.3 pseudo-header fields ---------------------------------------------------------------------


def test_unknown_pseudo_header_is_malformed(target: Target) -> None:
    """RFC 9113 §8.3: "Endpoints MUST treat a request or response that contains undefined or invalid pseudo-header
    fields as malformed"."""
    path = unique()
    send_malformed(target, [*pseudo(target, path), (":foo", "bar")], path)


def test_response_pseudo_header_in_a_request_is_malformed(target: Target) -> None:
    """RFC 9113 §8.3: pseudo-header fields defined for responses (:status) are invalid in requests."""
    path = unique()
    send_malformed(target, [*pseudo(target, path), (":status", "200")], path)


def test_pseudo_header_after_a_regular_field_is_malformed(target: Target) -> None:
    """RFC 9113 §8.3: "All pseudo-header fields MUST appear in a field block before all regular field lines"."""
    path = unique()
    fields = pseudo(target, path)
    send_malformed(target, [*fields[:3], ("x-regular", "1"), fields[3]], path)


@pytest.mark.parametrize("missing", [":method", ":scheme", ":path"])
def test_missing_mandatory_pseudo_header_is_malformed(target: Target, missing: str) -> None:
    """RFC 9113 §8.3.1: a request without :method, :scheme or :path is malformed."""
    path = unique()
    send_malformed(target, [pair for pair in pseudo(target, path) if pair[0] != missing], path)


@pytest.mark.parametrize("twice", [":method", ":scheme", ":path", ":authority"])
def test_duplicated_pseudo_header_is_malformed(target: Target, twice: str) -> None:
    """RFC 9113 §8.3.1: each request pseudo-header field appears at most once."""
    path = unique()
    fields = pseudo(target, path)
    doubled = next(pair for pair in fields if pair[0] == twice)
    send_malformed(target, [*fields, doubled], path)


def test_empty_path_is_malformed(target: Target) -> None:
    """RFC 9113 §8.3.1: ":path ... MUST NOT be empty for "http" or "https" URIs"."""
    fields = [pair for pair in pseudo(target, "/") if pair[0] != ":path"]
    send_malformed(target, [*fields, (":path", "")], "")


def refused_never_served(target: Target, headers: HeaderList, path: str) -> None:
    """Malformed (RST_STREAM / GOAWAY PROTOCOL_ERROR) or refused with a 4xx; never served nor passed on."""
    with FrameConn.open(target) as conn:
        conn.headers(1, headers)
        conn.wait_for(lambda r: r.stream_id in (1, 0) and r.kind in (T.RST_STREAM, T.HEADERS, T.GOAWAY), "an answer")
        state = conn.streams.get(1)
        if state is not None and state.blocks:
            status = dict(state.blocks[0]).get(b":status", b"")
            assert status.startswith(b"4"), f"served: {status!r}; {conn.log()}"
        elif conn.goaway is not None:
            assert conn.goaway.error_code == E.PROTOCOL_ERROR, conn.log()
        else:
            assert state is not None, conn.log()
            assert state.reset == E.PROTOCOL_ERROR, conn.log()
    assert not [event for event in target.events() if event.endswith(" " + path)], "the application was called"
    assert_still_serving(target)


def test_empty_authority_is_refused(target: Target) -> None:
    """RFC 9113 §8.3.1: if :authority or Host is present it "MUST NOT be empty" — malformed or 400."""
    path = unique()
    fields = [pair for pair in pseudo(target, path) if pair[0] != ":authority"]
    refused_never_served(target, [*fields, (":authority", "")], path)


def test_empty_host_without_authority_is_refused(target: Target) -> None:
    """RFC 9113 §8.3.1: the same for an empty Host field standing in for :authority."""
    path = unique()
    fields = [pair for pair in pseudo(target, path) if pair[0] != ":authority"]
    refused_never_served(target, [*fields, ("host", "")], path)


def test_missing_authority_and_host_is_refused(target: Target) -> None:
    """RFC 9113 §8.3.1: an http(s) request "MUST contain either an :authority pseudo-header field or a Host
    header field" — malformed (reset) or refused with a 4xx, never served."""
    path = unique()
    refused_never_served(target, [pair for pair in pseudo(target, path) if pair[0] != ":authority"], path)


def test_options_asterisk_is_well_formed(target: Target) -> None:
    """RFC 9113 §8.3.1: ":path" is "*" for a server-wide OPTIONS request; it is not a malformed request."""
    with FrameConn.open(target) as conn:
        conn.headers(1, pseudo(target, "*", "OPTIONS"))
        conn.wait_for(lambda r: r.stream_id in (1, 0) and r.kind in (T.RST_STREAM, T.HEADERS, T.GOAWAY), "an answer")
        assert conn.goaway is None, conn.log()
        assert conn.streams[1].reset != E.PROTOCOL_ERROR, conn.log()


def test_request_pseudo_headers_in_any_order_are_accepted(target: Target) -> None:
    """RFC 9113 §8.3: pseudo-header fields come first, in any order among themselves."""
    with FrameConn.open(target) as conn:
        fields = list(reversed(pseudo(target, "/hello")))
        conn.headers(1, fields)
        assert conn.response(1).body == b"hello"


def test_response_pseudo_headers(target: Target) -> None:
    """RFC 9113 §8.3.2: a response carries exactly one :status, first, and no other pseudo-header field."""
    with FrameConn.open(target) as conn:
        conn.response(conn.request("/hello"))
        block = conn.streams[1].blocks[0]
    assert block[0][0] == b":status", block
    assert [name for name, _ in block if name.startswith(b":")] == [b":status"], block


# --- §8.5 CONNECT ----------------------------------------------------------------------------------


def test_well_formed_connect_is_not_malformed(target: Target) -> None:
    """RFC 9113 §8.5: CONNECT with :method and :authority only is well-formed (answered or refused, not reset
    as malformed)."""
    with FrameConn.open(target) as conn:
        conn.headers(1, [(":method", "CONNECT"), (":authority", "example.com:443")], end_stream=False)
        conn.wait_for(lambda r: r.stream_id in (1, 0) and r.kind in (T.RST_STREAM, T.HEADERS, T.GOAWAY), "an answer")
        assert conn.goaway is None, conn.log()
        assert conn.streams[1].reset != E.PROTOCOL_ERROR, conn.log()
        conn.rst(1, E.CANCEL)
        expect_ignored(conn)


def test_connect_with_scheme_is_malformed(target: Target) -> None:
    """RFC 9113 §8.5: "The :scheme and :path pseudo-header fields MUST be omitted" (with :scheme)."""
    fields = [(":method", "CONNECT"), (":scheme", target.scheme), (":authority", "example.com:443")]
    send_malformed(target, fields, "example.com:443", end_stream=False)


def test_connect_with_path_is_malformed(target: Target) -> None:
    """RFC 9113 §8.5: the same with :path."""
    fields = [(":method", "CONNECT"), (":authority", "example.com:443"), (":path", "/")]
    send_malformed(target, fields, "/", end_stream=False)


def test_connect_without_authority_is_malformed(target: Target) -> None:
    """RFC 9113 §8.5: "The :authority pseudo-header field contains the host and port to connect to" — required."""
    send_malformed(target, [(":method", "CONNECT")], "", end_stream=False)


def test_protocol_pseudo_header_without_extended_connect_is_malformed(target: Target) -> None:
    """RFC 8441 §4 / RFC 9113 §8.3: :protocol is undefined unless the server enabled extended CONNECT, and
    only a CONNECT request may carry it when it did."""
    with FrameConn.open(target) as conn:
        path = unique()
        if conn.server_settings.get(S.ENABLE_CONNECT_PROTOCOL) == 1:
            conn.headers(1, [*pseudo(target, path, "GET"), (":protocol", "websocket")], end_stream=True)
        else:
            conn.headers(1, [*pseudo(target, path, "CONNECT"), (":protocol", "websocket")], end_stream=False)
        expect_malformed(conn, 1, path)


# --- §8.3.1 / §8.2.3 what the application sees -----------------------------------------------------


def test_host_from_authority_reaches_the_application(target: Target) -> None:
    """RFC 9113 §8.3.1: :authority stands for Host; the application sees it as the host."""
    with FrameConn.open(target) as conn:
        conn.headers(1, pseudo(target, "/headers"))
        report = json.loads(conn.response(1).body)
    hosts = [value for name, value in report["headers"] if name == "host"]
    assert hosts == [target.authority], report["headers"]
