"""A connection that becomes HTTP/2 after its worker began draining gets a GOAWAY (RFC 9113 §6.8).

Found by the soak run (benchmarks/soak.py): a TLS connection accepted before a SIGHUP whose handshake
finished after it was sent the server's SETTINGS and then closed, with no GOAWAY. Its client could not tell
whether its requests had been processed. Now it gets GOAWAY(NO_ERROR) with a last stream ID that says which
were: the ones above it may be sent again elsewhere.
"""

from __future__ import annotations

import contextlib
import http.client
import signal
import ssl
import time
from typing import TYPE_CHECKING

import h2.config
import h2.connection
import h2.events
import h2.exceptions
from process_support import ASGI, log_after, wait_for_workers

pytest_plugins = ("process_support", "tls_support")

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server


def test_http2_after_the_drain_began_gets_a_goaway(serve: Callable[..., Server], tls_files: TLSFiles) -> None:
    from tls_support import client_context  # noqa: PLC0415 - the plugin module, imported once registered

    server = serve(ASGI, *tls_files.server_options())
    (old,) = wait_for_workers(server, 1)
    # A slow request keeps the old worker draining (a worker with nothing in flight exits at once).
    slow = client_context(tls_files).wrap_socket(server.connect(), server_hostname="localhost")
    slow.sendall(b"GET /pid?ms=4000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
    raw = server.connect()
    raw.settimeout(10)
    # Half the TLS handshake before the SIGHUP (ClientHello out, the server's flight in), the rest after.
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = client_context(tls_files, alpn=["h2"]).wrap_bio(incoming, outgoing, server_hostname="localhost")
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    raw.sendall(outgoing.read())
    incoming.write(raw.recv(65_536))
    server.process.send_signal(signal.SIGHUP)
    assert log_after(server, rf"worker \d+ ready; worker {old} draining"), server.excerpt(20)
    time.sleep(0.3)  # the old worker is draining and still holds the connection
    tls.do_handshake()
    assert tls.selected_alpn_protocol() == "h2"

    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    stream = conn.get_next_available_stream_id()
    conn.send_headers(stream, [(":method", "GET"), (":scheme", "https"), (":authority", "localhost"),
                               (":path", "/pid")], end_stream=True)  # fmt: skip
    tls.write(conn.data_to_send())
    raw.sendall(outgoing.read())
    events: list[h2.events.Event] = []
    while not any(isinstance(e, h2.events.ConnectionTerminated) for e in events):
        data = raw.recv(65_536)
        if not data:
            break
        incoming.write(data)
        with contextlib.suppress(ssl.SSLWantReadError):
            while chunk := tls.read(65_536):
                events += conn.receive_data(chunk)
    # After a GOAWAY, streams up to its last stream ID are still answered: read to the end.
    with contextlib.suppress(OSError):
        while data := raw.recv(65_536):
            incoming.write(data)
            with contextlib.suppress(ssl.SSLWantReadError, ssl.SSLZeroReturnError, h2.exceptions.ProtocolError):
                while chunk := tls.read(65_536):
                    events += conn.receive_data(chunk)
    raw.close()
    # The slow request in flight during the drain is answered, by the old worker.
    slow.settimeout(10)
    response = http.client.HTTPResponse(slow)  # type: ignore[arg-type]
    response.begin()
    assert (response.status, response.read()) == (200, str(old).encode())
    slow.close()
    goaways = [e for e in events if isinstance(e, h2.events.ConnectionTerminated)]
    assert goaways, f"the connection ended without a GOAWAY: {events}\n{server.excerpt(40)}"
    assert goaways[0].error_code == 0  # NO_ERROR
    answered = any(isinstance(e, h2.events.StreamEnded) for e in events)
    # Either the request was taken before the GOAWAY (and answered), or the GOAWAY says it was not.
    assert answered or goaways[0].last_stream_id < stream
