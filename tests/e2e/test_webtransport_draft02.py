"""WebTransport over HTTP/3, draft-ietf-webtrans-http3-02, served by peregrine to ASGI applications, driven by
aioquic's client (wtclient_aioquic.py).

- aioquic's own demo `wt` handler (tests/apps/wt_apps.py `/demo`) runs unchanged: bidirectional and
  unidirectional echo (a client unidirectional stream is answered on one server stream paired with it),
  datagrams both ways (RFC 9297 §2.1 prefix);
- our echo: streams ended with FIN both ways (`end`), the scope (`webtransport`, draft02, subprotocols,
  max_datagram_size) and the 200 with `sec-webtransport-http3-draft: draft02` (draft-02 §3.3);
- refusals: close before accept → 403, webtransport.reject → its status and fields, an exception → 500;
- the close capsule (CLOSE_WEBTRANSPORT_SESSION, draft-02 §5) both ways with code and reason, a FIN alone
  (code 0), the client vanishing → webtransport.disconnect; an application that returns closes with 0;
- streams: the application's RESET_STREAM and STOP_SENDING with codes (mapped, draft-02 §4.3) and the
  client's reaching it as webtransport.stream.reset / .stop; server-opened unidirectional streams
  (webtransport.stream.open → .opened) carrying megabytes past QUIC's windows (send() waits under flow
  control) and bidirectional ones (read both ways);
- two sessions on one connection, an HTTP request beside a session; a graceful shutdown (GOAWAY) drains
  sessions (webtransport.drain); --no-webtransport and WSGI.

Served application: tests/apps/wt_apps.py.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

import pytest
from aioquic.asyncio.client import connect
from aioquic.quic.events import StreamReset
from h3client import H3Client
from wtclient_aioquic import SessionRefusedError, WebTransportClient, WTSession, echo_scenario

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support",)

APP = "wt_apps:app"


@pytest.fixture(scope="module")
def server(server_pool: Any, tls_files: TLSFiles) -> Server:  # noqa: ANN401 (conftest's pool)
    return server_pool.get(APP, *tls_files.server_options("--http3"))


def records(server: Server, files: TLSFiles, ident: str) -> dict[str, Any]:
    response = H3Client(port=server.port, ca=files.ca).request("GET", f"/records?id={ident}")
    assert response.status == 200, response
    found: dict[str, Any] = json.loads(response.body)
    return found


def wait_record(server: Server, files: TLSFiles, ident: str, key: str, timeout: float = 15.0) -> Any:  # noqa: ANN401
    deadline = time.monotonic() + timeout
    while True:
        found = records(server, files, ident)
        if key in found:
            return found[key]
        assert time.monotonic() < deadline, f"record {ident} never got {key!r}: {found!r}"
        time.sleep(0.05)


def test_aioquic_demo_handler_echoes_streams_and_datagrams(server: Server) -> None:
    # The demo never ends a stream: read as many bytes as were sent.
    async def scenario(session: WTSession) -> dict[str, Any]:
        spec = {"bidi": ["hello", "bidirectional"], "datagrams": ["dgram"], "fin": False}
        result = await echo_scenario(session, spec)
        uni = await session.open_stream(unidirectional=True)
        session.send(uni, b"one way", end=True)
        reply, unidirectional = await session.accept_stream()
        result["uni"] = [(await session.read(reply, size=len(b"one way"))).decode(), unidirectional]
        return result

    result = WebTransportClient(server.port).run("/demo", scenario)
    assert result["status"] == 200
    assert result["bidi"] == ["hello", "bidirectional"]
    assert result["uni"] == ["one way", True]  # on the server stream paired with ours
    assert result["datagrams"] == ["dgram"]


def test_echo_with_fin_and_the_scope(server: Server, tls_files: TLSFiles) -> None:
    big = "x" * 300_000  # past QUIC's stream windows: flow control both ways
    spec = {"bidi": ["ping", big], "uni": ["u1", "u2"], "datagrams": ["d"], "fin": True}
    result = WebTransportClient(server.port).echo("/echo?id=scope", spec)
    assert result["bidi"] == ["ping", big]
    assert sorted(result["uni"]) == ["u1", "u2"]
    assert result["datagrams"] == ["d"]
    scope = wait_record(server, tls_files, "scope", "scope")
    assert scope["type"] == "webtransport"
    assert scope["http_version"] == "3"
    assert scope["scheme"] == "https"
    assert scope["method"] == "CONNECT"
    assert scope["path"] == "/echo"
    assert scope["draft"] == "draft02"
    assert 1000 < scope["max_datagram_size"] < 65536
    assert scope["subprotocols"] == []
    assert "sec-webtransport-http3-draft02" in scope["headers"]
    assert ":protocol" not in scope["headers"]
    events = wait_record(server, tls_files, "scope", "disconnect")
    assert events == [0, ""]  # the client's connection went away without a close
    seen = records(server, tls_files, "scope")["events"]
    uni = [e for e in seen if e[0] == "webtransport.stream.receive" and e[4]]
    assert uni
    assert all(e[5] for e in uni)  # opened_by_peer
    assert any(e[3] for e in uni)  # end on the last chunk


def test_accept_response_fields(server: Server) -> None:
    async def scenario(session: WTSession) -> tuple[int, dict[bytes, bytes]]:
        return session.status, dict(session.response_headers)

    status, fields = WebTransportClient(server.port).run("/echo", scenario)
    assert status == 200
    assert fields[b"sec-webtransport-http3-draft"] == b"draft02"
    assert fields[b"x-accepted"] == b"yes"


@pytest.mark.parametrize(("path", "status"), [("/refuse", 403), ("/reject?status=429", 429), ("/raise", 500),
                                              ("/nowhere", 404)])  # fmt: skip
def test_refusals(server: Server, path: str, status: int) -> None:
    async def scenario(session: WTSession) -> None:
        raise AssertionError("accepted")

    with pytest.raises(SessionRefusedError) as refused:
        WebTransportClient(server.port).run(path, scenario)
    assert refused.value.status == status
    if path.startswith("/reject"):
        assert (b"x-why", b"test") in refused.value.headers


def test_server_closes_with_code_and_reason(server: Server, tls_files: TLSFiles) -> None:
    result = WebTransportClient(server.port).echo("/close?id=sclose&code=7&reason=bye%20now", {"await_close": True})
    assert result["closed"] == {"code": 7, "reason": "bye now"}
    assert wait_record(server, tls_files, "sclose", "disconnect") == ["webtransport.disconnect", 7, "bye now"]


def test_client_closes_with_code_and_reason(server: Server, tls_files: TLSFiles) -> None:
    spec = {"bidi": ["a"], "close": {"code": 42, "reason": "done"}}
    result = WebTransportClient(server.port).echo("/echo?id=cclose", spec)
    assert result["bidi"] == ["a"]
    assert result["closed"] == {"code": 0, "reason": ""}  # the server's FIN answers (draft-02 §5)
    assert wait_record(server, tls_files, "cclose", "disconnect") == [42, "done"]


def test_client_fin_alone_is_close_zero(server: Server, tls_files: TLSFiles) -> None:
    async def scenario(session: WTSession) -> tuple[int, str]:
        session.finish_session()
        return await session.wait_closed()

    assert WebTransportClient(server.port).run("/echo?id=fin", scenario) == (0, "")
    assert wait_record(server, tls_files, "fin", "disconnect") == [0, ""]


def test_application_return_closes_the_session(server: Server) -> None:
    result = WebTransportClient(server.port).echo("/return", {"await_close": True})
    assert result["closed"] == {"code": 0, "reason": ""}


def test_misuse_raises_and_closes(server: Server, tls_files: TLSFiles) -> None:
    result = WebTransportClient(server.port).echo("/misuse?id=misuse", {"await_close": True})
    assert result["closed"] == {"code": 0, "reason": "application error"}
    assert wait_record(server, tls_files, "misuse", "error") == "ValueError"


def test_http_request_beside_a_session(server: Server) -> None:
    async def scenario(session: WTSession) -> tuple[dict[str, Any], int, bytes]:
        echoed = await echo_scenario(session, {"bidi": ["before"]})
        status, body = await session.get("/hello")
        again = await echo_scenario(session, {"bidi": ["after"]})
        return {"bidi": echoed["bidi"] + again["bidi"]}, status, body

    result, status, body = WebTransportClient(server.port).run("/echo", scenario)
    assert result == {"bidi": ["before", "after"]}
    assert (status, body) == (200, b"hello")


def test_two_sessions_on_one_connection(server: Server, tls_files: TLSFiles) -> None:
    async def scenario(session: WTSession) -> list[bytes]:
        second = await session.open_another_session("/echo?id=second")
        first_stream = await session.open_stream()
        second_stream = await session.open_stream(session_id=second)
        session.send(first_stream, b"to the first", end=True)
        session.send(second_stream, b"to the second", end=True)
        return [await session.read(first_stream), await session.read(second_stream)]

    assert WebTransportClient(server.port).run("/echo?id=first", scenario) == [b"to the first", b"to the second"]
    assert wait_record(server, tls_files, "first", "disconnect") == [0, ""]
    assert wait_record(server, tls_files, "second", "disconnect") == [0, ""]


def test_no_webtransport_option(tls_server: Callable[..., Server]) -> None:
    server = tls_server(APP, "--http3", "--no-webtransport")

    async def scenario(session: WTSession) -> None:
        raise AssertionError("accepted")

    # Extended CONNECT is still offered (WebSockets): a :protocol other than websocket is 501.
    with pytest.raises(SessionRefusedError) as refused:
        WebTransportClient(server.port).run("/echo", scenario, timeout=10)
    assert refused.value.status == 501


def test_wsgi_application(tls_server: Callable[..., Server]) -> None:
    server = tls_server("wsgi_apps:app", "--http3")

    async def scenario(session: WTSession) -> None:
        raise AssertionError("accepted")

    # WebTransport is offered, and a WSGI application, which has no interface for a session, refuses it: 501.
    with pytest.raises(SessionRefusedError) as refused:
        WebTransportClient(server.port).run("/echo", scenario, timeout=10)
    assert refused.value.status == 501
    # And the next one the same way: the worker keeps serving.
    with pytest.raises(SessionRefusedError) as again:
        WebTransportClient(server.port).run("/echo", scenario, timeout=10)
    assert again.value.status == 501


def control_events(server: Server, files: TLSFiles, ident: str, count: int) -> list[list[Any]]:
    deadline = time.monotonic() + 15
    while True:
        events: list[list[Any]] = records(server, files, ident).get("events", [])
        if len(events) >= count:
            return events
        assert time.monotonic() < deadline, f"{ident}: {events!r}"
        time.sleep(0.05)


def test_application_resets_and_stops_streams(server: Server) -> None:
    async def scenario(session: WTSession) -> tuple[int | None, int | None]:
        reset = await session.open_stream()
        session.send(reset, b"reset 9")
        with pytest.raises(ConnectionResetError):
            await session.read(reset)
        stopped = await session.open_stream()
        session.send(stopped, b"stop 5")
        for _ in range(200):
            if stopped in session.stops:
                break
            await asyncio.sleep(0.05)
        return session.reset_code(reset), session.stops.get(stopped)

    assert WebTransportClient(server.port).run("/control?id=appreset", scenario) == (9, 5)


def test_client_resets_and_stops_reach_the_application(server: Server, tls_files: TLSFiles) -> None:
    async def scenario(session: WTSession) -> list[int]:
        # Each stream's first bytes are echoed first: a reset before its header was read would be
        # nothing the application could see.
        reset = await session.open_stream()
        session.send(reset, b"hold")
        await session.read(reset, size=4)
        session.reset(reset, 33)
        stopped = await session.open_stream()
        session.send(stopped, b"hold")
        await session.read(stopped, size=4)
        session.stop(stopped, 44)
        await asyncio.sleep(0.2)
        return [reset, stopped]

    reset, stopped = WebTransportClient(server.port).run("/control?id=clientreset", scenario)
    events = control_events(server, tls_files, "clientreset", 4)
    assert ["webtransport.stream.reset", reset, 33] in events
    assert ["webtransport.stream.stop", stopped, 44] in events


def test_server_opened_unidirectional_stream_with_backpressure(server: Server, tls_files: TLSFiles) -> None:
    size = 3_000_000  # > the client's 1 MB stream window and the server's 256 KiB high-water mark

    async def scenario(session: WTSession) -> tuple[int, bool, int]:
        command = await session.open_stream()
        session.send(command, f"open {size}".encode(), end=True)
        stream, unidirectional = await session.accept_stream()
        data = await session.read(stream)
        assert set(data) == {ord("z")}
        return stream, unidirectional, len(data)

    stream, unidirectional, received = WebTransportClient(server.port).run("/control?id=open", scenario, timeout=60)
    assert (unidirectional, received) == (True, size)
    assert stream % 4 == 3  # server-initiated unidirectional (RFC 9000 §2.1)
    events = control_events(server, tls_files, "open", 3)
    assert ["webtransport.stream.opened", stream, True, str(size)] in events
    assert ["sent", stream, size] in events


def test_server_opened_bidirectional_stream(server: Server, tls_files: TLSFiles) -> None:
    async def scenario(session: WTSession) -> tuple[int, bool, bytes]:
        command = await session.open_stream()
        session.send(command, b"bidi 70000", end=True)
        stream, unidirectional = await session.accept_stream()
        data = await session.read(stream)
        session.send(stream, b"answer", end=True)  # the client's side of the server's stream
        await asyncio.sleep(0.2)
        return stream, unidirectional, data

    stream, unidirectional, data = WebTransportClient(server.port).run("/control?id=bidi", scenario)
    assert stream % 4 == 1  # server-initiated bidirectional (RFC 9000 §2.1)
    assert not unidirectional
    assert data == b"z" * 70000
    events = control_events(server, tls_files, "bidi", 4)
    assert ["webtransport.stream.opened", stream, False, "70000"] in events
    assert ["data", stream, "answer", True, False] in events  # opened_by_peer False


def test_going_away_drains_sessions(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    # --max-connection-age: the first request past it begins a graceful shutdown (GOAWAY); the open session
    # is asked to finish up (webtransport.drain) and still works until it closes.
    server = tls_server(APP, "--http3", "--max-connection-age", "1")

    async def scenario(session: WTSession) -> dict[str, Any]:
        await asyncio.sleep(0.05)
        assert await session.get("/hello") == (200, b"hello")
        return await echo_scenario(session, {"bidi": ["still here"], "close": {"code": 3, "reason": "drained"}})

    result = WebTransportClient(server.port).run("/echo?id=drain", scenario)
    assert result["bidi"] == ["still here"]
    assert wait_record(server, tls_files, "drain", "disconnect") == [3, "drained"]
    assert records(server, tls_files, "drain")["drain"] is True


def test_slow_application_holds_the_client(server: Server, tls_files: TLSFiles) -> None:
    # 6 MB on each of two streams while the application sleeps: past its queue bound (--ws-max-queue-bytes, 4 MiB)
    # the session's streams are not read, QUIC flow control holds the client, and reading resumes as the
    # application receives; nothing is lost.
    size = 6_000_000

    async def scenario(session: WTSession) -> list[bytes]:
        streams = [await session.open_stream() for _ in range(2)]
        for stream in streams:
            session.send(stream, b"s" * size, end=True)
        return [await session.read(stream) for stream in streams]

    answers = WebTransportClient(server.port).run("/slow?id=slow&sleep=1", scenario, timeout=60)
    assert answers == [str(size).encode()] * 2


def test_datagram_over_max_size_is_dropped(server: Server) -> None:
    async def scenario(session: WTSession) -> bytes:
        command = await session.open_stream()
        session.send(command, b"datagrams", end=True)
        return await asyncio.wait_for(session.receive_datagram(), 10)

    assert WebTransportClient(server.port).run("/control?id=dgram", scenario) == b"small"


class _RawResets(WTSession):
    """Records the server's RESET_STREAM codes as sent (HTTP/3 codes, not mapped to WebTransport's)."""

    def __init__(self, quic: Any, stream_handler: Any = None) -> None:  # noqa: ANN401 (aioquic's types)
        super().__init__(quic, stream_handler)
        self.raw_resets: dict[int, int] = {}

    def quic_event_received(self, event: Any) -> None:  # noqa: ANN401 (aioquic's type)
        if isinstance(event, StreamReset):
            self.raw_resets[event.stream_id] = event.error_code
        super().quic_event_received(event)


def test_a_session_after_plain_requests(server: Server) -> None:
    """A connection's WebTransport side is made when first used (TRANSPORT.md, "What an idle HTTP/3 connection
    holds"), here after two plain requests: it still knows them as no sessions, so a stream naming one is
    refused at once with WT_SESSION_GONE (not held for a CONNECT that will not come, draft-02 §4.5), and a
    session opened next works."""
    client = WebTransportClient(server.port)

    async def scenario() -> tuple[list[tuple[int, bytes]], int | None, dict[str, Any]]:
        async with connect(
            client.host, client.port, configuration=client.configuration(), create_protocol=_RawResets
        ) as protocol:
            assert isinstance(protocol, _RawResets)
            plain = [await protocol.get("/hello"), await protocol.get("/hello")]  # streams 0 and 4
            stray = await protocol.open_stream(session_id=0)
            protocol.send(stray, b"for a request that was no session", end=True)
            with pytest.raises(ConnectionResetError):
                await protocol.read(stray)
            await protocol.open_session(f"{client.server_name}:{client.port}", "/echo", [])
            echoed = await echo_scenario(protocol, {"bidi": ["after"], "uni": ["too"]})
            return plain, protocol.raw_resets.get(stray), echoed

    plain, code, echoed = asyncio.run(asyncio.wait_for(scenario(), 20.0))
    assert plain == [(200, b"hello"), (200, b"hello")]
    assert code == 0x170D7B68, "WT_SESSION_GONE"
    assert echoed["bidi"] == ["after"]
    assert echoed["uni"] == ["too"]
