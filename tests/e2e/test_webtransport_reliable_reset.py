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

Served application: tests/apps/wt_apps.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import pytest
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
