"""peregrine.contrib over real QUIC: the routers and the session object behind wtasgi_aioquic's reference
server of the WebTransport ASGI extension, driven by the client harnesses (aioquic; Chromium when installed).

The same applications (tests/apps/wt_fastapi_app.py and wt_handlers.py) are what peregrine serves once its
server speaks WebTransport; this shows the contrib side and the harnesses agree with the extension as
TRANSPORT.md specifies it: echo of bidirectional and unidirectional streams (a paired server stream) with FIN,
datagrams, closes with code and reason both ways, server-opened streams, resets with draft-02 §4.3 codes, and
the router's 404 refusal.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from wt_chromium import CHROMIUM, chromium_echo
from wtasgi_aioquic import asgi_server
from wtclient_aioquic import SessionRefusedError, WebTransportClient, WTSession

pytest.importorskip("fastapi")
APPS = Path(__file__).resolve().parent.parent / "apps"
if str(APPS) not in sys.path:
    sys.path.insert(0, str(APPS))

from wt_fastapi_app import app as fastapi_app  # noqa: E402

from peregrine.contrib.starlette import WebTransportRouter  # noqa: E402
from peregrine.contrib.webtransport import StreamResetError, WebTransportSession  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Iterator, MutableMapping

    from tls_support import TLSFiles

pytest_plugins = ("tls_support",)

SPEC = {
    "bidi": ["one", "two" * 5000],
    "uni": ["u1", "u2"],
    "datagrams": ["d1", "d2"],
    "close": {"code": 9, "reason": "client done"},
}

#: What the handlers below saw, for the assertions.
SEEN: list[object] = []


async def server_streams(session: WebTransportSession) -> None:
    """Opens a bidirectional and a unidirectional stream and greets on both; echoes the client's reply."""
    await session.accept()
    bidi = await session.open_stream()
    uni = await session.open_stream(unidirectional=True)
    await uni.send(b"hello uni", end=True)
    await bidi.send(b"hello bidi", end=True)
    SEEN.append(("reply", await bidi.read_all()))
    await session.close(4001, "server done")


async def resets(session: WebTransportSession) -> None:
    """Reads one client stream until its reset, then resets a stream of its own."""
    await session.accept()
    stream = await session.accept_stream()
    try:
        await stream.read_all()
    except StreamResetError as error:
        SEEN.append(("reset", error.code))
    await stream.reset(0x2A)
    await session.wait_closed()


#: A router answers every webtransport scope (unmatched: 404), so the extra routes get a router of their own
#: and the rest goes to the FastAPI application with its own router inside.
extra = WebTransportRouter()
extra.add_route("/server-streams", server_streams)
extra.add_route("/resets", resets)


async def contrib_app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:  # noqa: ANN401
    application = extra if scope.get("path") in ("/server-streams", "/resets") else fastapi_app
    await application(scope, receive, send)


@pytest.fixture(scope="module")
def port(tls_files: TLSFiles) -> Iterator[int]:
    with asgi_server(contrib_app, tls_files.cert, tls_files.key) as running:
        yield running


def test_aioquic_client_through_the_fastapi_router_and_session(port: int) -> None:
    result = WebTransportClient(port).echo("/wt/echo/7", SPEC)
    assert result["status"] == 200
    assert result["bidi"] == SPEC["bidi"]
    assert sorted(result["uni"]) == SPEC["uni"]
    assert result["datagrams"] == SPEC["datagrams"]
    assert result["closed"] is not None


def test_server_close_code_and_reason_reach_the_client(port: int) -> None:
    result = WebTransportClient(port).echo("/wt/close/4000/bye%20now", {"await_close": True})
    assert result["closed"] == {"code": 4000, "reason": "bye now"}


def test_unmatched_path_is_refused_with_404(port: int) -> None:
    assert WebTransportClient(port).echo("/wt/echo/not-a-number", {}) == {"status": 404}
    assert WebTransportClient(port).echo("/nowhere", {}) == {"status": 404}


def test_server_opened_streams(port: int) -> None:
    SEEN.clear()

    async def scenario(session: WTSession) -> tuple[dict[bool, bytes], tuple[int, str]]:
        got: dict[bool, bytes] = {}
        for _ in range(2):
            stream_id, unidirectional = await session.accept_stream()
            got[unidirectional] = await session.read(stream_id)
            if not unidirectional:
                session.send(stream_id, b"thanks", end=True)
        return got, await session.wait_closed()

    got, closed = WebTransportClient(port).run("/server-streams", scenario)
    assert got == {True: b"hello uni", False: b"hello bidi"}
    assert closed == (4001, "server done")
    assert SEEN == [("reply", b"thanks")]


def test_resets_carry_webtransport_codes_both_ways(port: int) -> None:
    SEEN.clear()

    async def scenario(session: WTSession) -> int | None:
        stream = await session.open_stream()
        session.send(stream, b"partial")
        session.reset(stream, 0x11)
        with pytest.raises(ConnectionResetError):
            await session.read(stream)
        code = session.reset_code(stream)
        session.close_session(0, "")
        await session.wait_closed()
        return code

    assert WebTransportClient(port).run("/resets", scenario) == 0x2A
    assert SEEN == [("reset", 0x11)]


def test_refused_run_raises(port: int) -> None:
    async def scenario(session: WTSession) -> None:
        await asyncio.sleep(0)

    with pytest.raises(SessionRefusedError):
        WebTransportClient(port).run("/nowhere", scenario)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium (Debian chromium) is not installed")
def test_chromium_through_the_fastapi_router_and_session(port: int, tls_files: TLSFiles, tmp_path: Path) -> None:
    result = chromium_echo(port, "/wt/echo/7", SPEC, tls_files.cert, tmp_path)
    assert result == {
        "status": 200,
        "bidi": SPEC["bidi"],
        "uni": SPEC["uni"],
        "datagrams": SPEC["datagrams"],
        "closed": SPEC["close"],
    }, result
