"""Reliable resets of WebTransport streams (draft-ietf-webtrans-http3, "Resetting Data Streams": "MUST use the
RESET_STREAM_AT frame ... with a Reliable Size set to at least the size of the WebTransport header"), seen by an
aioquic client taught the extension (draft-ietf-quic-reliable-stream-reset): it sends the empty reset_stream_at
transport parameter (0x17f7586d2cb571) and records every RESET_STREAM_AT frame (type 0x24) before handling it as
the RESET_STREAM it ends as (aioquic keeps no reliable bytes of its own; the header came in the STREAM frames
before it here). No client on this machine speaks the extension natively: aioquic 1.7.2 does not, and
pywebtransport 0.21 (quinn-proto 0.11.19) neither sends the parameter nor knows the frame.

The server's side: /control's `open N` opens a unidirectional stream (header 0x54 + session ID 0: three bytes) and
sends N bytes; the client's STOP_SENDING on it is answered with a reset of the same code (RFC 9000 §3.5) — a
RESET_STREAM_AT with Reliable Size 3 for this client, a RESET_STREAM for stock aioquic (which has no handler for
0x24 and would close the connection with FRAME_ENCODING_ERROR on one).

The client's side: the same client resets its bidirectional stream with RESET_STREAM_AT (its Reliable Size the
whole stream, acknowledged before it is sent: aioquic stops sending data once a stream is reset); /control records
the data, then webtransport.stream.reset with the WebTransport code — the server took the frame because it sent
the parameter (without it, a PROTOCOL_VIOLATION).

Served application: tests/apps/wt_apps.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import TYPE_CHECKING, Any

import pytest
from h3client import H3Client
from wtclient_aioquic import WebTransportClient, WTSession, webtransport_code_to_http3

if TYPE_CHECKING:
    from collections.abc import Iterator

    from aioquic.quic.connection import QuicConnection
    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support",)

qconnection = pytest.importorskip("aioquic.quic.connection")
qpacket = pytest.importorskip("aioquic.quic.packet")
from aioquic.buffer import Buffer, encode_uint_var  # noqa: E402

RESET_STREAM_AT = 0x24
RESET_STREAM_AT_PARAMETER = 0x17F7586D2CB571
#: The server's unidirectional stream header on session 0 (draft-02 §4.2): type 0x54 (a two-byte varint, 40 54),
#: session ID 0 (one byte).
UNI_HEADER = 3
#: Bytes the application sends on its stream: far more than can leave before the STOP_SENDING arrives.
SIZE = 20_000_000


@contextlib.contextmanager
def reset_stream_at_parameter() -> Iterator[None]:
    """aioquic sends the empty reset_stream_at transport parameter while this is entered."""
    push = qconnection.push_quic_transport_parameters

    def push_with_parameter(buf: Buffer, params: Any) -> None:  # noqa: ANN401 (aioquic's type)
        params.reset_stream_at = True
        push(buf, params)

    qpacket.PARAMS[RESET_STREAM_AT_PARAMETER] = ("reset_stream_at", bool)  # bool: empty value
    qpacket.QuicTransportParameters.reset_stream_at = None
    qconnection.push_quic_transport_parameters = push_with_parameter
    try:
        yield
    finally:
        qconnection.push_quic_transport_parameters = push
        del qpacket.PARAMS[RESET_STREAM_AT_PARAMETER]
        del qpacket.QuicTransportParameters.reset_stream_at


class ReliableResetSession(WTSession):
    """A WTSession whose QUIC connection records RESET_STREAM_AT frames, then acts on them as RESET_STREAM."""

    def __init__(self, quic: QuicConnection, stream_handler: Any = None) -> None:  # noqa: ANN401 (aioquic's type)
        super().__init__(quic, stream_handler)
        #: (stream ID, error code, final size, reliable size) of every RESET_STREAM_AT received.
        self.resets_at: list[tuple[int, int, int, int]] = []
        handlers = quic._QuicConnection__frame_handlers  # type: ignore[attr-defined]
        reset_stream, epochs = handlers[0x04]

        def handle(context: Any, frame_type: int, buf: Buffer) -> None:  # noqa: ANN401 (aioquic's type)
            stream_id, code, final_size, reliable_size = (buf.pull_uint_var() for _ in range(4))
            self.resets_at.append((stream_id, code, final_size, reliable_size))
            fields = encode_uint_var(stream_id) + encode_uint_var(code) + encode_uint_var(final_size)
            reset_stream(context, 0x04, Buffer(data=fields))

        handlers[RESET_STREAM_AT] = (handle, epochs)

    def send_reset_stream_at(self, stream_id: int, code: int) -> None:
        """Reset our side of `stream_id` with RESET_STREAM_AT, Reliable Size = everything sent (its Final Size)."""

        def write(builder: Any, stream: Any) -> None:  # noqa: ANN401 (aioquic's types)
            buf = builder.start_frame(
                frame_type=RESET_STREAM_AT, capacity=1 + 4 * 8, handler=stream.sender.on_reset_delivery
            )
            frame = stream.sender.get_reset_frame()
            for field in (frame.stream_id, frame.error_code, frame.final_size, frame.final_size):
                buf.push_uint_var(field)

        self._quic._write_reset_stream_frame = write  # type: ignore[method-assign]
        self.reset(stream_id, code)

    def acknowledged(self, stream_id: int) -> bool:
        """Whether everything sent on `stream_id` was acknowledged."""
        sender = self._quic._streams[stream_id].sender
        return bool(sender._buffer_start == sender.highest_offset)


async def stop_a_server_stream(session: WTSession) -> tuple[int, int | None]:
    command = await session.open_stream()
    session.send(command, b"open %d" % SIZE, end=True)
    stream, unidirectional = await asyncio.wait_for(session.accept_stream(), 20)
    assert unidirectional
    session.stop(stream, 7)
    while session.reset_code(stream) is None:
        assert session.terminated is None, session.terminated
        await asyncio.sleep(0.01)
    return stream, session.reset_code(stream)


def test_reset_keeps_the_stream_header_with_reset_stream_at(server_pool: Any, tls_files: TLSFiles) -> None:  # noqa: ANN401
    server: Server = server_pool.get("wt_apps:app", *tls_files.server_options("--http3"))

    async def scenario(session: WTSession) -> tuple[int, int | None, list[tuple[int, int, int, int]]]:
        assert isinstance(session, ReliableResetSession)
        stream, code = await stop_a_server_stream(session)
        return stream, code, session.resets_at

    with reset_stream_at_parameter():
        stream, code, resets_at = WebTransportClient(server.port).run(
            "/control?id=rsa", scenario, timeout=60, protocol_class=ReliableResetSession
        )
    assert code == 7, "the STOP_SENDING's code, mapped back (draft-02 §4.3)"
    assert len(resets_at) >= 1  # resent if lost: the same frame
    assert all(r == resets_at[0] for r in resets_at)
    reset_stream, error_code, final_size, reliable_size = resets_at[0]
    assert reset_stream == stream
    assert error_code == webtransport_code_to_http3(7)
    assert reliable_size == UNI_HEADER, "the header, reliably: the session it belongs to stays known"
    assert UNI_HEADER <= final_size < UNI_HEADER + SIZE


def test_a_client_without_the_parameter_gets_reset_stream(server_pool: Any, tls_files: TLSFiles) -> None:  # noqa: ANN401
    server: Server = server_pool.get("wt_apps:app", *tls_files.server_options("--http3"))
    # Stock aioquic: a RESET_STREAM_AT would end the connection (an unknown frame type); the reset arrives.
    _, code = WebTransportClient(server.port).run("/control?id=rs", stop_a_server_stream, timeout=60)
    assert code == 7


def test_a_clients_reset_stream_at_reaches_the_application_after_its_data(
    server_pool: Any,  # noqa: ANN401 (conftest's pool)
    tls_files: TLSFiles,
) -> None:
    server: Server = server_pool.get("wt_apps:app", *tls_files.server_options("--http3"))

    async def scenario(session: WTSession) -> int:
        assert isinstance(session, ReliableResetSession)
        stream = await session.open_stream()
        session.send(stream, b"hello")
        assert await session.read(stream, size=5) == b"hello"  # /control echoes an unknown first chunk
        session.send(stream, b"world")
        while not session.acknowledged(stream):
            await asyncio.sleep(0.01)
        session.send_reset_stream_at(stream, 7)
        for _ in range(500):  # the reset goes out and is acknowledged; the connection must stay up
            await asyncio.sleep(0.01)
            if session._quic._streams.get(stream) is None or session._quic._streams[stream].sender.is_finished:
                break
        assert session.terminated is None, session.terminated
        return stream

    with reset_stream_at_parameter():
        stream = WebTransportClient(server.port).run(
            "/control?id=rsa-in", scenario, timeout=60, protocol_class=ReliableResetSession
        )
    deadline = time.monotonic() + 15
    while True:
        found = H3Client(port=server.port, ca=tls_files.ca).request("GET", "/records?id=rsa-in")
        events = json.loads(found.body).get("events", [])
        if ["webtransport.stream.reset", stream, 7] in events:
            break
        assert time.monotonic() < deadline, events
        time.sleep(0.05)
    assert events.index(["data", stream, "world", False, True]) < events.index(["webtransport.stream.reset", stream, 7])
