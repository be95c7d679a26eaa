"""peregrine.contrib.webtransport against a fake server speaking the WebTransport ASGI extension.

Every event and message of the extension (TRANSPORT.md, "The WebTransport ASGI
extension"), ordering per stream and across streams, backpressure (a full
stream queue stops receive(), RFC 9000 §4 flow control does the rest on the
server), and every error the helper raises.
"""

from __future__ import annotations

import asyncio

import pytest
from fakeasgi import FakePeer, run, webtransport_scope

from peregrine.contrib.webtransport import (
    SessionClosedError,
    StreamResetError,
    StreamStoppedError,
    WebTransportError,
    WebTransportSession,
)


async def accepted(peer: FakePeer, **options: int) -> WebTransportSession:
    session = WebTransportSession(webtransport_scope(), peer.receive, peer.send, **options)
    peer.push("connect")
    await session.accept()
    assert (await peer.sent()) == {"type": "webtransport.accept"}
    return session


def test_scope_properties_come_from_the_extension_scope() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = WebTransportSession(webtransport_scope("/chat", path_params={"room": 3}), peer.receive, peer.send)
        assert session.path == "/chat"
        assert session.path_params == {"room": 3}
        assert session.headers == [(b"origin", b"https://example.test")]
        assert session.subprotocols == ["chat", "echo"]
        assert session.draft == "draft02"
        assert session.max_datagram_size == 1180
        assert not session.is_open
        assert not session.closed

    run(scenario())


def test_a_scope_of_another_type_is_refused() -> None:
    peer = FakePeer.__new__(FakePeer)
    with pytest.raises(ValueError, match="not a webtransport scope"):
        WebTransportSession({"type": "websocket"}, peer.receive, peer.send)


def test_accept_waits_for_connect_then_sends_accept_with_subprotocol_and_headers() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = WebTransportSession(webtransport_scope(), peer.receive, peer.send)
        accepting = asyncio.ensure_future(session.accept(subprotocol="chat", headers=[(b"x-a", b"1")]))
        await peer.settle()
        assert peer.nothing_sent()  # nothing goes out before webtransport.connect
        peer.push("connect")
        await accepting
        assert (await peer.sent()) == {
            "type": "webtransport.accept",
            "subprotocol": "chat",
            "headers": [[b"x-a", b"1"]],
        }
        assert session.is_open

    run(scenario())


def test_accept_when_the_client_left_before_connect_raises_session_closed() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = WebTransportSession(webtransport_scope(), peer.receive, peer.send)
        peer.push("disconnect", code=0, reason="")
        with pytest.raises(SessionClosedError):
            await session.accept()
        assert session.closed
        assert session.close_code == 0

    run(scenario())


def test_accept_when_the_first_event_is_not_connect_raises() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = WebTransportSession(webtransport_scope(), peer.receive, peer.send)
        peer.push("datagram.receive", data=b"x")
        with pytest.raises(WebTransportError, match=r"expected webtransport\.connect"):
            await session.accept()

    run(scenario())


def test_accept_twice_raises() -> None:
    async def scenario() -> None:
        session = await accepted(FakePeer())
        with pytest.raises(WebTransportError, match="already accepted"):
            await session.accept()

    run(scenario())


def test_reject_sends_the_status_and_headers_and_ends_the_session() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = WebTransportSession(webtransport_scope(), peer.receive, peer.send)
        peer.push("connect")
        await session.reject(404, headers=[(b"x-why", b"no room")])
        refusal = {"type": "webtransport.reject", "status": 404, "headers": [[b"x-why", b"no room"]]}
        assert (await peer.sent()) == refusal
        assert session.closed
        with pytest.raises(SessionClosedError):
            await session.send_datagram(b"x")

    run(scenario())


@pytest.mark.parametrize("status", [200, 399, 600])
def test_reject_with_a_status_that_is_not_an_error_raises(status: int) -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = WebTransportSession(webtransport_scope(), peer.receive, peer.send)
        with pytest.raises(ValueError, match="4xx or 5xx"):
            await session.reject(status)

    run(scenario())


def test_close_before_accept_sends_close_which_the_server_turns_into_403() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = WebTransportSession(webtransport_scope(), peer.receive, peer.send)
        peer.push("connect")
        await session.close(7, "no")
        assert (await peer.sent()) == {"type": "webtransport.close", "code": 7, "reason": "no"}
        assert session.closed
        assert (session.close_code, session.close_reason) == (7, "no")

    run(scenario())


def test_using_streams_before_accept_raises() -> None:
    async def scenario() -> None:
        session = WebTransportSession(webtransport_scope(), FakePeer().receive, FakePeer().send)
        with pytest.raises(WebTransportError, match="accept"):
            await session.open_stream()
        with pytest.raises(WebTransportError, match="accept"):
            await session.accept_stream()

    run(scenario())


def test_a_peer_bidirectional_stream_is_read_in_order_and_echoed_with_fin() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        peer.push_data(0, b"", end=False)  # an announced empty open is not a read of b""
        peer.push_data(0, b"hel")
        peer.push_data(0, b"lo", end=True)
        stream = await session.accept_stream()
        assert (stream.stream_id, stream.unidirectional, stream.opened_by_peer) == (0, False, True)
        assert await stream.read() == b"hel"
        assert await stream.read() == b"lo"
        assert await stream.read() == b""
        assert await stream.read() == b""  # stays at end
        await stream.send(b"hello", end=True)
        assert (await peer.sent()) == {"type": "webtransport.stream.send", "stream": 0, "data": b"hello", "end": True}
        with pytest.raises(WebTransportError, match="already finished"):
            await stream.send(b"more")

    run(scenario())


def test_fin_without_data_reads_as_end() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        peer.push_data(4, b"abc")
        peer.push_data(4, b"", end=True)
        stream = await session.accept_stream()
        assert await stream.read_all() == b"abc"

    run(scenario())


def test_read_all_over_its_limit_raises() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        peer.push_data(0, b"x" * 10)
        peer.push_data(0, b"x" * 10, end=True)
        stream = await session.accept_stream()
        with pytest.raises(WebTransportError, match="more than 15 bytes"):
            await stream.read_all(limit=15)

    run(scenario())


def test_incoming_streams_come_in_order_of_first_data_and_chunks_stay_per_stream() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        peer.push_data(8, b"a1")
        peer.push_data(2, b"b1", uni=True)
        peer.push_data(8, b"a2", end=True)
        peer.push_data(2, b"b2", end=True, uni=True)
        peer.push("disconnect", code=0, reason="")
        streams = [stream async for stream in session.incoming_streams()]
        assert [(s.stream_id, s.unidirectional) for s in streams] == [(8, False), (2, True)]
        # Both streams were complete before the disconnect: still readable after it.
        assert await streams[0].read_all() == b"a1a2"
        assert await streams[1].read_all() == b"b1b2"

    run(scenario())


def test_a_peer_unidirectional_stream_can_be_answered_on_the_paired_server_stream() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        peer.push_data(2, b"ping", end=True, uni=True)
        stream = await session.accept_stream()
        await stream.send(await stream.read_all(), end=True)
        assert (await peer.sent()) == {"type": "webtransport.stream.send", "stream": 2, "data": b"ping", "end": True}

    run(scenario())


def test_peer_reset_is_raised_after_the_data_before_it() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        peer.push_data(0, b"part")
        peer.push("stream.reset", stream=0, code=42)
        stream = await session.accept_stream()
        assert await stream.read() == b"part"
        with pytest.raises(StreamResetError) as raised:
            await stream.read()
        assert (raised.value.stream_id, raised.value.code) == (0, 42)
        assert await stream.read() == b""  # the receive side is over

    run(scenario())


def test_peer_stop_sending_makes_send_raise_but_reads_continue() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        peer.push_data(0, b"q")
        peer.push("stream.stop", stream=0, code=9)
        peer.push_data(0, b"r", end=True)
        stream = await session.accept_stream()
        assert await stream.read_all() == b"qr"
        assert stream.stop_code == 9
        with pytest.raises(StreamStoppedError) as raised:
            await stream.send(b"x")
        assert raised.value.code == 9
        assert peer.nothing_sent()

    run(scenario())


def test_local_reset_and_stop_send_their_messages() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        peer.push_data(0, b"q")
        stream = await session.accept_stream()
        await stream.reset(5)
        assert (await peer.sent()) == {"type": "webtransport.stream.reset", "stream": 0, "code": 5}
        with pytest.raises(WebTransportError, match="already finished"):
            await stream.send(b"x")
        await stream.stop(6)
        assert (await peer.sent()) == {"type": "webtransport.stream.stop", "stream": 0, "code": 6}
        assert await stream.read() == b""
        # Data the peer still sends on the stopped stream is dropped without blocking the session.
        for _ in range(40):
            peer.push_data(0, b"late")
        peer.push("datagram.receive", data=b"after")
        assert await session.receive_datagram() == b"after"

    run(scenario())


def test_open_stream_sends_open_with_a_tag_and_returns_the_stream_the_server_opened() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        first = asyncio.ensure_future(session.open_stream())
        second = asyncio.ensure_future(session.open_stream(unidirectional=True))
        open_a, open_b = await peer.sent(), await peer.sent()
        assert open_a["type"] == open_b["type"] == "webtransport.stream.open"
        assert (open_a["unidirectional"], open_b["unidirectional"]) == (False, True)
        assert open_a["tag"] != open_b["tag"]
        # The server answers in its own order; the tag pairs answers with requests.
        peer.push("stream.opened", stream=3, unidirectional=True, tag=open_b["tag"])
        peer.push("stream.opened", stream=1, unidirectional=False, tag=open_a["tag"])
        bidi, uni = await first, await second
        assert (bidi.stream_id, bidi.unidirectional, bidi.opened_by_peer) == (1, False, False)
        assert (uni.stream_id, uni.unidirectional) == (3, True)
        await uni.send(b"u", end=True)
        assert (await peer.sent())["stream"] == 3
        with pytest.raises(WebTransportError, match="nothing to read"):
            await uni.read()
        # The peer answers on our bidirectional stream: its data is not a new incoming stream.
        peer.push_data(1, b"answer", end=True, peer=False)
        assert await bidi.read_all() == b"answer"
        peer.push("disconnect", code=0, reason="")
        assert [s async for s in session.incoming_streams()] == []

    run(scenario())


def test_open_stream_waiting_for_credit_fails_when_the_session_ends() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        opening = asyncio.ensure_future(session.open_stream())
        assert (await peer.sent())["type"] == "webtransport.stream.open"
        peer.push("disconnect", code=3, reason="bye")
        with pytest.raises(SessionClosedError) as raised:
            await opening
        assert (raised.value.code, raised.value.reason) == (3, "bye")
        with pytest.raises(SessionClosedError):
            await session.open_stream()

    run(scenario())


def test_datagrams_both_ways() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        await session.send_datagram(b"d1")
        assert (await peer.sent()) == {"type": "webtransport.datagram.send", "data": b"d1"}
        peer.push("datagram.receive", data=b"r1")
        peer.push("datagram.receive", data=b"r2")
        peer.push("disconnect", code=0, reason="")
        assert [d async for d in session.datagrams()] == [b"r1", b"r2"]
        assert session.datagrams_dropped == 0

    run(scenario())


def test_datagrams_over_the_queue_bound_are_dropped_and_counted_without_blocking_streams() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer, datagram_queue_size=2)
        for index in range(5):
            peer.push("datagram.receive", data=bytes([index]))
        peer.push_data(0, b"s", end=True)
        stream = await session.accept_stream()  # reached although nobody took the datagrams
        assert await stream.read_all() == b"s"
        assert session.datagrams_dropped == 3
        assert await session.receive_datagram() == b"\x00"
        assert await session.receive_datagram() == b"\x01"

    run(scenario())


def test_a_full_stream_queue_stops_receive_until_the_application_reads() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer, stream_queue_size=2)
        for index in range(10):
            peer.push_data(0, bytes([index]))
        await peer.settle()
        # connect + 1 new-stream chunk... the reader holds 2 queued chunks and is blocked on the
        # third: it has called receive() 1 (connect) + 3 times and the rest wait in the server.
        assert peer.receive_calls == 4
        assert peer.events.qsize() == 7
        stream = await session.accept_stream()
        assert await stream.read() == b"\x00"
        await peer.settle()
        assert peer.receive_calls == 5  # one slot freed, one more event taken
        got = [await stream.read() for _ in range(9)]
        assert got == [bytes([index]) for index in range(1, 10)]

    run(scenario())


def test_a_full_queue_of_new_streams_stops_receive_too() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer, incoming_queue_size=1)
        for stream_id in (0, 4, 8, 12):
            peer.push_data(stream_id, b"x", end=True)
        await peer.settle()
        assert peer.events.qsize() == 2  # stream 0 queued, stream 4 waiting for room
        ids = []
        for _ in range(4):
            ids.append((await session.accept_stream()).stream_id)
        assert ids == [0, 4, 8, 12]

    run(scenario())


def test_disconnect_sets_code_and_reason_and_fails_streams_that_were_not_finished() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        peer.push_data(0, b"half")
        stream = await session.accept_stream()
        assert await stream.read() == b"half"
        reading = asyncio.ensure_future(stream.read())
        await peer.settle()
        peer.push("disconnect", code=260, reason="done here")
        with pytest.raises(SessionClosedError) as raised:
            await reading
        assert (raised.value.code, raised.value.reason) == (260, "done here")
        await session.wait_closed()
        assert (session.close_code, session.close_reason) == (260, "done here")
        assert not session.is_open
        with pytest.raises(SessionClosedError):
            await session.accept_stream()
        with pytest.raises(SessionClosedError):
            await stream.send(b"x")
        await session.close()  # closing a closed session does nothing
        assert peer.nothing_sent()

    run(scenario())


def test_close_sends_the_capsule_fields_and_waits_for_the_disconnect_even_when_the_reader_was_blocked() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer, stream_queue_size=1)
        for _ in range(5):
            peer.push_data(0, b"unread")  # the reader blocks on the second chunk
        await peer.settle()
        closing = asyncio.ensure_future(session.close(4000, "bye"))
        assert (await peer.sent()) == {"type": "webtransport.close", "code": 4000, "reason": "bye"}
        await peer.settle()
        assert not closing.done()  # waits for the server's disconnect
        peer.push("disconnect", code=4000, reason="bye")
        await closing
        assert (session.close_code, session.close_reason) == (4000, "bye")

    run(scenario())


def test_a_close_reason_over_1024_bytes_raises() -> None:
    async def scenario() -> None:
        session = await accepted(FakePeer())
        with pytest.raises(ValueError, match="1024"):
            await session.close(0, "é" * 513)

    run(scenario())


def test_async_with_closes_an_open_session_on_exit() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        peer.push("disconnect", code=0, reason="")  # what the server answers to the close
        async with session:
            pass
        assert (await peer.sent()) == {"type": "webtransport.close", "code": 0, "reason": ""}
        assert session.closed

    run(scenario())


def test_drain_sets_draining_and_unknown_events_are_ignored() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        peer.push("future.event", anything=1)
        peer.push("drain")
        await asyncio.wait_for(session.draining.wait(), 5)
        assert session.is_open

    run(scenario())


def test_a_failing_receive_ends_the_session_for_every_waiter() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        peer.push_data(0, b"a")
        stream = await session.accept_stream()
        assert await stream.read() == b"a"
        reading = asyncio.ensure_future(stream.read())
        datagram = asyncio.ensure_future(session.receive_datagram())
        await peer.settle()
        peer.events.put_nowait(None)  # type: ignore[arg-type]  # receive() returns garbage: the reader fails
        with pytest.raises(TypeError):
            await reading
        with pytest.raises(TypeError):
            await datagram
        assert session.closed
        assert session.close_code == 0

    run(scenario())


def test_finished_streams_are_forgotten_so_long_sessions_do_not_grow() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        for stream_id in range(0, 400, 4):
            peer.push_data(stream_id, b"x", end=True)  # bidirectional: forgotten once we end our side too
            stream = await session.accept_stream()
            assert await stream.read_all() == b"x"
            await stream.send(b"y", end=True)
        for stream_id in range(2, 400, 4):
            peer.push_data(stream_id, b"u", end=True, uni=True)  # unidirectional: forgotten with its FIN
            assert await (await session.accept_stream()).read_all() == b"u"
        for _ in range(100):
            assert (await peer.sent())["end"]  # the echoes above
        opening = asyncio.ensure_future(session.open_stream(unidirectional=True))
        tag = (await peer.sent())["tag"]
        peer.push("stream.opened", stream=3, unidirectional=True, tag=tag)
        await (await opening).send(b"z", end=True)
        peer.push_data(400, b"", end=False)  # a live stream stays
        await session.accept_stream()
        assert list(session._streams) == [400]

    run(scenario())


def test_peer_data_on_our_stream_before_the_opened_answer_is_kept() -> None:
    async def scenario() -> None:
        peer = FakePeer()
        session = await accepted(peer)
        opening = asyncio.ensure_future(session.open_stream())
        tag = (await peer.sent())["tag"]
        peer.push_data(1, b"early", peer=False)
        peer.push("stream.opened", stream=1, unidirectional=False, tag=tag)
        peer.push_data(1, b" late", end=True, peer=False)
        stream = await opening
        assert await stream.read_all() == b"early late"

    run(scenario())
