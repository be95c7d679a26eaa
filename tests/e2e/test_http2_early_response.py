"""HTTP/2: a response complete before the client's END_STREAM (issue 22 point 4).

RFC 9113 §8.1: "A server can send a complete response prior to the client
sending an entire request ... the server MAY request that the client abort
transmission of a request without error by sending a RST_STREAM with an
error code of NO_ERROR after sending a complete response". That reset is for
stopping an upload the server does not want. When every byte of the
declared content-length has already arrived there is nothing left to stop
but the END_STREAM flag, and httpx (httpcore) treats the reset as an error
and throws away the complete response: it sends END_STREAM in an empty DATA
frame of its own after the body, so an application that reads exactly
CONTENT_LENGTH bytes and answers at once (Django, Falcon) races it.

- the declared body has fully arrived: no reset; the client's END_STREAM
  (late, or never) closes the stream, and the connection goes on;
- the declared body has not fully arrived, or no length was declared and
  the body has not ended: RST_STREAM(NO_ERROR) as before, which stops the
  upload.

Served: Django's WSGI handler and Falcon's ASGI app (tests/apps/frameworks), and
tests/apps/wsgi_apps.py's `/ignore-body`.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING

import h2.errors
import httpx
import pytest
from h2client import H2Client

if TYPE_CHECKING:
    from collections.abc import Iterator

    from conftest import Server, ServerPool

#: Applications that read exactly CONTENT_LENGTH bytes of a JSON body and answer at once.
EXACT_READERS = {
    "django-wsgi": "frameworks.django_project.wsgi:application",
    "falcon-asgi": "frameworks.falcon_asgi_app:app",
}
BODY = json.dumps({"name": "early", "numbers": [1, 2, 3]}).encode()
ANSWER = {"name": "early", "total": 6}
#: How long a test waits for a reset that must not come.
QUIET = 0.5


@pytest.fixture(params=sorted(EXACT_READERS), scope="module")
def exact(request: pytest.FixtureRequest, server_pool: ServerPool) -> Server:
    return server_pool.get(EXACT_READERS[request.param])


def send_body_without_end(client: H2Client, body: bytes, *, declared: int | None) -> int:
    """POST /json with `body` in DATA but no END_STREAM; `declared` is the content-length sent, if any."""
    headers = [("content-type", "application/json")]
    if declared is not None:
        headers.append(("content-length", str(declared)))
    return client.send("POST", "/json", body=body, headers=headers, end_stream=False)


def wait_quietly(client: H2Client, seconds: float) -> None:
    """Read whatever the server sends for `seconds`."""
    deadline = time.monotonic() + seconds
    while (remaining := deadline - time.monotonic()) > 0:
        client.sock.settimeout(remaining)
        try:
            if not client.read_once():
                return
        except TimeoutError:
            return


def test_complete_declared_body_is_not_reset_before_the_late_end_stream(exact: Server) -> None:
    with H2Client(exact.port) as client:
        sid = send_body_without_end(client, BODY, declared=len(BODY))
        response = client.collect(sid)[0]
        assert response.status == 200
        assert json.loads(bytes(response.body)) == ANSWER
        wait_quietly(client, QUIET)
        assert response.reset_code is None, "RST_STREAM after the whole declared body had arrived"
        # The late END_STREAM (httpx's empty DATA frame) is taken without complaint.
        client.conn.end_stream(sid)
        client.flush()
        following = client.request("GET", "/items/5")
        assert following.status == 200
        assert client.terminated is None


def test_stream_of_a_complete_declared_body_ends_without_end_stream_too(exact: Server) -> None:
    """A client that never sends END_STREAM does not keep the stream open for ever: it is reset (NO_ERROR) after
    a while, and the connection goes on."""
    with H2Client(exact.port) as client:
        sid = send_body_without_end(client, BODY, declared=len(BODY))
        response = client.collect(sid)[0]
        assert response.status == 200
        deadline = time.monotonic() + 10
        while response.reset_code is None and time.monotonic() < deadline:
            wait_quietly(client, 0.2)
        assert response.reset_code == h2.errors.ErrorCodes.NO_ERROR
        assert client.request("GET", "/items/5").status == 200


def test_unfinished_declared_body_is_still_reset_with_no_error(server_pool: ServerPool) -> None:
    """The reset that stops an upload stays: half the declared body, and an application that does not read it."""
    server = server_pool.get("wsgi_apps:app")
    with H2Client(server.port) as client:
        sid = client.send(
            "POST", "/ignore-body", body=b"x" * 1000, headers=[("content-length", "2000")], end_stream=False
        )
        response = client.collect(sid)[0]
        assert response.status == 200
        deadline = time.monotonic() + 5
        while response.reset_code is None and time.monotonic() < deadline:
            wait_quietly(client, 0.1)
        assert response.reset_code == h2.errors.ErrorCodes.NO_ERROR
        assert client.request("GET", "/hello").status == 200


def test_body_without_declared_length_is_still_reset_with_no_error(server_pool: ServerPool) -> None:
    server = server_pool.get("wsgi_apps:app")
    with H2Client(server.port) as client:
        sid = client.send("POST", "/ignore-body", body=b"x" * 1000, end_stream=False)
        response = client.collect(sid)[0]
        assert response.status == 200
        deadline = time.monotonic() + 5
        while response.reset_code is None and time.monotonic() < deadline:
            wait_quietly(client, 0.1)
        assert response.reset_code == h2.errors.ErrorCodes.NO_ERROR


def slow_end(body: bytes, delay: float) -> Iterator[bytes]:
    """The body, then a pause before httpx sends its END_STREAM."""
    yield body
    time.sleep(delay)


def test_httpx_keeps_the_response_when_its_end_stream_comes_late(exact: Server) -> None:
    with httpx.Client(base_url=exact.base_url, http1=False, http2=True, timeout=20) as client:
        for _ in range(3):
            response = client.post(
                "/json",
                content=slow_end(BODY, 0.2),
                headers={"content-type": "application/json", "content-length": str(len(BODY))},
            )
            assert response.http_version == "HTTP/2"
            assert response.json() == ANSWER


def test_httpx_gathered_posts_on_one_connection(exact: Server) -> None:
    async def main() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=exact.base_url, http1=False, http2=True, timeout=20) as client:
            return await asyncio.gather(*(client.post("/json", content=BODY) for _ in range(50)))

    for response in asyncio.run(main()):
        assert response.http_version == "HTTP/2"
        assert response.json() == ANSWER
