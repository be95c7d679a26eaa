"""wsgi.input (PEP 3333 "Input and Error Streams"): every method, over Content-Length and chunked bodies.

The expected results come from the same calls on io.BytesIO(body). Large
uploads are streamed: the application sees the first bytes before the client
has sent the rest, and the server's peak RSS stays far below the upload size.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from typing import TYPE_CHECKING

import pytest
from rawhttp import RawConnection, request

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server

BODIES = {
    "tiny-lines": b"a\nb\n\nccc\n" * 1000,
    "long-line": b"x" * 300_000 + b"\n" + b"y" * 100,
    "binary": bytes(range(256)) * 100,
    "one-byte": b"z",
    "empty": b"",
}


def _framed(target: str, body: bytes, framing: str) -> bytes:
    if framing == "content-length":
        return request("POST", target, [("Content-Length", str(len(body)))]) + body
    # Uneven chunk sizes so chunk boundaries fall inside lines.
    pieces, sizes, index = [], [1, 1000, 17, 4096, 3], 0
    while index < len(body):
        size = sizes[len(pieces) % len(sizes)]
        pieces.append(body[index : index + size])
        index += size
    data = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"
    return request("POST", target, [("Transfer-Encoding", "chunked")]) + data


def _parts(server: Server, target: str, body: bytes, framing: str) -> list[bytes]:
    with RawConnection.to(server, timeout=30) as connection:
        connection.send(_framed(target, body, framing))
        response = connection.read_response()
    assert response.status == 200, response.body[-3000:]
    return [part.encode("latin-1") for part in json.loads(response.body)]


framings = pytest.mark.parametrize("framing", ["content-length", "chunked"])
bodies = pytest.mark.parametrize("name", list(BODIES))


@framings
@bodies
@pytest.mark.parametrize("size", [1, 7, 65536])
def test_read_n_returns_the_body_in_pieces_of_at_most_n(
    wsgi_server: Server, framing: str, name: str, size: int
) -> None:
    body = BODIES[name]
    if size == 1 and len(body) > 20000:
        body = body[:20000]
    parts = _parts(wsgi_server, f"/input/read?n={size}", body, framing)
    assert b"".join(parts) == body
    assert all(0 < len(part) <= size for part in parts)


@framings
@bodies
def test_read_without_size_returns_everything_then_empty(wsgi_server: Server, framing: str, name: str) -> None:
    body = BODIES[name]
    assert _parts(wsgi_server, "/input-raw/read-all", body, framing) == [body, b""]


@framings
@pytest.mark.parametrize("name", ["tiny-lines", "binary"])
def test_read_minus_one_returns_everything(wsgi_server: Server, framing: str, name: str) -> None:
    body = BODIES[name]
    assert _parts(wsgi_server, "/input-raw/read-minus-one", body, framing) == [body]


@framings
@bodies
def test_readline_matches_a_file(wsgi_server: Server, framing: str, name: str) -> None:
    body = BODIES[name]
    expected = list(io.BytesIO(body))
    assert _parts(wsgi_server, "/input/readline", body, framing) == expected


@framings
@bodies
@pytest.mark.parametrize("size", [1, 5, 100, 70000])
def test_readline_with_size_matches_a_file(wsgi_server: Server, framing: str, name: str, size: int) -> None:
    body = BODIES[name]
    reference = io.BytesIO(body)
    expected = []
    while line := reference.readline(size):
        expected.append(line)
    assert _parts(wsgi_server, f"/input/readline?n={size}", body, framing) == expected


@framings
@bodies
def test_readlines_matches_a_file(wsgi_server: Server, framing: str, name: str) -> None:
    body = BODIES[name]
    parts = _parts(wsgi_server, "/input/readlines", body, framing)
    assert parts == [*io.BytesIO(body).readlines(), b"--rest--", b""]


@framings
@pytest.mark.parametrize("name", ["tiny-lines", "long-line"])
@pytest.mark.parametrize("hint", [1, 10, 5000])
def test_readlines_with_hint_returns_whole_lines_and_leaves_the_rest(
    wsgi_server: Server, framing: str, name: str, hint: int
) -> None:
    body = BODIES[name]
    parts = _parts(wsgi_server, f"/input/readlines?n={hint}", body, framing)
    separator = parts.index(b"--rest--")
    lines, rest = parts[:separator], parts[separator + 1 :]
    assert lines, "readlines(hint) returned nothing from a non-empty body"
    assert all(line.endswith(b"\n") for line in lines[:-1])
    assert b"".join(lines) + b"".join(rest) == body
    # The hint is advisory (PEP 3333), but lines are never split.
    consumed = len(b"".join(lines))
    assert consumed == len(body) or body[consumed - 1 : consumed] == b"\n"


@framings
@bodies
def test_iteration_yields_lines(wsgi_server: Server, framing: str, name: str) -> None:
    body = BODIES[name]
    assert _parts(wsgi_server, "/input-raw/iterate", body, framing) == list(io.BytesIO(body))


@framings
def test_iteration_through_the_validator(wsgi_server: Server, framing: str) -> None:
    body = BODIES["tiny-lines"]
    assert _parts(wsgi_server, "/input/iterate", body, framing) == list(io.BytesIO(body))


def test_read_past_content_length_does_not_touch_the_next_request(wsgi_server: Server) -> None:
    """The application asks for more than the body: it gets EOF, and the pipelined request is intact."""
    data = request("POST", "/input-raw/read-all", body=b"only this") + request("POST", "/echo/next", body=b"next body")
    with RawConnection.to(wsgi_server) as connection:
        connection.send(data)
        first = connection.read_response()
        assert json.loads(first.body) == ["only this", ""]
        assert connection.read_response().body == b"next body"


def test_application_sees_the_first_bytes_before_the_upload_is_finished(wsgi_server: Server) -> None:
    rest = b"r" * 200_000
    marker = f"first-read {time.monotonic_ns() % 100000:05d}"
    first = marker.split()[1].encode()
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("POST", "/first-read", [("Content-Length", str(5 + len(rest)))]) + first)
        assert wsgi_server.wait_for_event(marker, timeout=5), "the body was not streamed to the application"
        connection.send(rest)
        response = connection.read_response()
    assert response.body == str(5 + len(rest)).encode()


def test_chunked_upload_is_streamed_to_the_application(wsgi_server: Server) -> None:
    marker = f"first-read {time.monotonic_ns() % 100000:05d}"
    first = marker.split()[1].encode()
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("POST", "/first-read", [("Transfer-Encoding", "chunked")]) + b"5\r\n" + first + b"\r\n")
        assert wsgi_server.wait_for_event(marker, timeout=5), "the chunked body was not streamed to the application"
        connection.send(b"3\r\nabc\r\n0\r\n\r\n")
        assert connection.read_response().body == b"8"


@pytest.mark.timeout(120)
def test_50_mib_upload_is_streamed_without_buffering_it(start_server: Callable[..., Server]) -> None:
    server = start_server("wsgi_apps:app", "--max-body", "100m")
    size = 50 * 1024 * 1024
    block = hashlib.sha256(b"seed").digest() * 32768  # 1 MiB
    assert len(block) == 1024 * 1024
    expected = hashlib.sha256(block * 50).hexdigest()
    # Warm up (imports, first request) before taking the baseline.
    with RawConnection.to(server) as connection:
        connection.send(request("POST", "/digest", body=b"warm"))
        assert connection.read_response().status == 200
    baseline_kib = server.vm_kib("VmRSS")
    peak_during_kib = 0
    with RawConnection.to(server, timeout=60) as connection:
        connection.send(request("POST", "/digest", [("Content-Length", str(size))]))
        for _ in range(50):
            connection.send(block)
            peak_during_kib = max(peak_during_kib, server.vm_kib("VmRSS"))
        response = connection.read_response()
    assert response.status == 200
    result = json.loads(response.body)
    assert (result["size"], result["sha256"]) == (size, expected)
    assert 0 < result["largest"] <= 65536
    peak_kib = server.vm_kib("VmHWM")
    grown_mib = (max(peak_kib, peak_during_kib) - baseline_kib) / 1024
    assert grown_mib < 16, f"server RSS grew by {grown_mib:.1f} MiB during a 50 MiB upload"
