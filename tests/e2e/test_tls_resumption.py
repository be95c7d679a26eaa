"""Session resumption with tickets (TRANSPORT.md "TLS"), within one worker and across workers.

The supervisor makes one secret and every worker derives the same ticket
keys from it, so a ticket a worker issued resumes on any other.
"""

from __future__ import annotations

import json
import select
import ssl
import time
from typing import TYPE_CHECKING

import pytest
from tls_support import TLSFiles, client_context, exchange, tls_connect

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server

pytest_plugins = ("tls_support",)


def first_session(server: Server, context: ssl.SSLContext) -> ssl.SSLSession:
    """A full handshake and one request (TLS 1.3 tickets arrive after the handshake)."""
    sock = tls_connect(server, context)
    assert not sock.session_reused
    assert exchange(sock, "GET", "/info").status == 200
    session = sock.session
    sock.close()
    assert session is not None
    return session


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_ticket_resumes_the_session(
    tls_server: Callable[..., Server], tls_files: TLSFiles, version: ssl.TLSVersion
) -> None:
    server = tls_server("tls_apps:wsgi")
    context = client_context(tls_files, version=version)
    session = first_session(server, context)
    for _ in range(3):
        sock = tls_connect(server, context, session=session)
        response = exchange(sock, "GET", "/info")
        assert sock.session_reused
        assert response.status == 200
        session = sock.session or session
        sock.close()


def test_ticket_resumes_on_another_worker(start_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = start_server("tls_apps:wsgi", *tls_files.server_options("--workers", "2"))
    deadline = time.monotonic() + 15
    while server.stderr.text().count("serving tls_apps:wsgi") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    context = client_context(tls_files, version=ssl.TLSVersion.TLSv1_3)
    session = first_session(server, context)
    # Connections held open spread over both workers (the load board); each
    # resumes the one session.
    held = []
    pids = set()
    for _ in range(12):
        sock = tls_connect(server, context, session=session)
        response = exchange(sock, "GET", "/info")
        assert sock.session_reused
        pids.add(json.loads(response.body)["pid"])  # type: ignore[attr-defined]
        held.append(sock)
        if len(pids) == 2:
            break
    for sock in held:
        sock.close()
    assert len(pids) == 2, "every connection went to one worker"


def test_tickets_from_another_server_are_not_accepted(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    one = tls_server("tls_apps:wsgi")
    two = tls_server("tls_apps:wsgi")
    context = client_context(tls_files, version=ssl.TLSVersion.TLSv1_3)
    session = first_session(one, context)
    sock = tls_connect(two, context, session=session)
    assert exchange(sock, "GET", "/info").status == 200
    assert not sock.session_reused
    sock.close()


def test_the_tls13_ticket_waits_for_the_first_request(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    """RFC 8446 §4.6.1 lets the server send NewSessionTicket at any time after the client's Finished; ours waits
    until the first request has arrived, so it never lands in the moment the client writes that request. A
    client that reads on one thread while it writes on another (the sync client of `websockets` over Python's
    ssl) would otherwise process the ticket in OpenSSL while it writes the request on the same SSL object: under
    CPU load, a few WebSocket handshakes in a thousand lost their request and hung (TRANSPORT.md "TLS")."""
    server = tls_server("tls_apps:wsgi")
    context = client_context(tls_files, version=ssl.TLSVersion.TLSv1_3)
    sock = tls_connect(server, context)
    # Nothing arrives while the client is quiet: not a byte to read on the socket beneath the TLS.
    readable, _, _ = select.select([sock], [], [], 0.3)
    assert readable == [], "the server sent something before the first request"
    assert sock.session is not None
    assert not sock.session.has_ticket
    assert exchange(sock, "GET", "/info").status == 200
    session = sock.session
    assert session is not None
    assert session.has_ticket
    sock.close()
    again = tls_connect(server, context, session=session)
    assert exchange(again, "GET", "/info").status == 200
    assert again.session_reused
    again.close()
