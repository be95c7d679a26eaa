"""A reference server of the WebTransport ASGI extension (TRANSPORT.md) on aioquic, draft-02 only.

It runs an ASGI application's `webtransport` scopes the way the extension
specifies, so peregrine.contrib (the session object and the routers) and the
client harnesses can be exercised end to end over real QUIC before, and
beside, peregrine's own server. Every event and message of the extension is
bridged except flow-control backpressure (its receive queue is unbounded) and
`webtransport.drain`; `max_datagram_size` is aioquic's. Runs in a thread of its
own, like wtserver_aioquic.echo_server.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import pytest

aioquic = pytest.importorskip("aioquic")

from aioquic.asyncio import QuicConnectionProtocol, serve  # noqa: E402
from aioquic.buffer import Buffer, BufferReadError  # noqa: E402
from aioquic.h3.connection import H3_ALPN, FrameType, H3Connection  # noqa: E402
from aioquic.h3.events import (  # noqa: E402
    DatagramReceived,
    DataReceived,
    H3Event,
    HeadersReceived,
    WebTransportStreamDataReceived,
)
from aioquic.quic.configuration import QuicConfiguration  # noqa: E402
from aioquic.quic.events import ProtocolNegotiated, QuicEvent, StopSendingReceived, StreamReset  # noqa: E402
from wtclient_aioquic import (  # noqa: E402
    CLOSE_WEBTRANSPORT_SESSION,
    encode_close_capsule,
    http3_code_to_webtransport,
    webtransport_code_to_http3,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator, MutableMapping
    from pathlib import Path

    from aioquic.quic.connection import QuicConnection

    App = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]


class _Session:
    """One session: the application's task, its event queue, and the server's bookkeeping."""

    def __init__(self, protocol: _BridgeProtocol, stream_id: int, scope: dict[str, Any]) -> None:
        self.protocol = protocol
        self.stream_id = stream_id
        self.scope = scope
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.accepted = False
        self.ended = False  # our side of the CONNECT stream is finished
        self.disconnected: dict[str, Any] | None = None
        self.capsules = bytearray()
        self.paired: dict[int, int] = {}  # client unidirectional stream -> our paired one
        self.events.put_nowait({"type": "webtransport.connect"})

    async def receive(self) -> dict[str, Any]:
        if self.disconnected is not None and self.events.empty():
            return dict(self.disconnected)
        return await self.events.get()

    def disconnect(self, code: int, reason: str) -> None:
        if self.disconnected is None:
            self.disconnected = {"type": "webtransport.disconnect", "code": code, "reason": reason}
            self.events.put_nowait(dict(self.disconnected))

    def finish(self, status: int | None = None, capsule: bytes = b"") -> None:
        http = self.protocol.http
        assert http is not None
        if self.ended:
            return
        self.ended = True
        if status is not None:
            http.send_headers(self.stream_id, [(b":status", str(status).encode())], end_stream=True)
        else:
            http.send_data(self.stream_id, capsule, end_stream=True)
        self.protocol.transmit()

    async def send(self, message: MutableMapping[str, Any]) -> None:  # noqa: PLR0912 (one branch per message)
        http, quic = self.protocol.http, self.protocol._quic
        assert http is not None
        kind = message["type"]
        if self.disconnected is not None and kind != "webtransport.close":
            return  # the session is over: late sends are dropped
        if kind == "webtransport.accept":
            headers = [(b":status", b"200"), (b"sec-webtransport-http3-draft", b"draft02")]
            headers += [(bytes(k), bytes(v)) for k, v in message.get("headers", [])]
            if message.get("subprotocol"):
                headers.append((b"sec-webtransport-protocol", str(message["subprotocol"]).encode()))
            http.send_headers(self.stream_id, headers)
            self.accepted = True
        elif kind == "webtransport.reject":
            if self.accepted:
                raise RuntimeError("webtransport.reject after accept")
            self.finish(int(message["status"]))
            self.disconnect(0, "")
        elif kind == "webtransport.close":
            if not self.accepted:
                self.finish(403)
            else:
                self.finish(capsule=encode_close_capsule(int(message.get("code", 0)), str(message.get("reason", ""))))
            self.disconnect(int(message.get("code", 0)), str(message.get("reason", "")))
        elif not self.accepted:
            raise RuntimeError(f"{kind} before webtransport.accept")
        elif kind == "webtransport.stream.send":
            stream_id = int(message["stream"])
            if stream_id % 4 == 2:  # the client's unidirectional stream: write to the paired one of ours
                if stream_id not in self.paired:
                    self.paired[stream_id] = http.create_webtransport_stream(self.stream_id, is_unidirectional=True)
                stream_id = self.paired[stream_id]
            quic.send_stream_data(stream_id, bytes(message["data"]), end_stream=bool(message.get("end", False)))
        elif kind == "webtransport.stream.open":
            unidirectional = bool(message["unidirectional"])
            stream_id = http.create_webtransport_stream(self.stream_id, is_unidirectional=unidirectional)
            if not unidirectional:
                # The client's side of our stream carries no WEBTRANSPORT_STREAM header (draft-02 §4.2, only the
                # opener sends one), but aioquic would parse it as HTTP/3 frames: mark it as past the header.
                with http._get_or_create_stream(stream_id) as h3_stream:
                    h3_stream.frame_type = FrameType.WEBTRANSPORT_STREAM
                    h3_stream.session_id = self.stream_id
            self.events.put_nowait(
                {"type": "webtransport.stream.opened", "stream": stream_id, "unidirectional": unidirectional,
                 "tag": message.get("tag")}
            )  # fmt: skip
        elif kind == "webtransport.stream.reset":
            quic.reset_stream(int(message["stream"]), webtransport_code_to_http3(int(message["code"])))
        elif kind == "webtransport.stream.stop":
            quic.stop_stream(int(message["stream"]), webtransport_code_to_http3(int(message["code"])))
        elif kind == "webtransport.datagram.send":
            http.send_datagram(self.stream_id, bytes(message["data"]))
        else:
            raise RuntimeError(f"unknown message {kind!r}")
        self.protocol.transmit()

    async def run(self, app: App) -> None:
        try:
            await app(self.scope, self.receive, self.send)
        finally:
            if not self.accepted:
                self.finish(500)
            elif not self.ended:
                self.finish(capsule=encode_close_capsule(0, ""))
            self.disconnect(0, "")

    def session_data(self, data: bytes, ended: bool) -> None:
        # RFC 9297 §3.2: the CONNECT stream's DATA is a sequence of capsules.
        self.capsules += data
        while True:
            buffer = Buffer(data=bytes(self.capsules))
            try:
                kind, value = buffer.pull_uint_var(), buffer.pull_bytes(buffer.pull_uint_var())
            except BufferReadError:
                break
            del self.capsules[: buffer.tell()]
            if kind == CLOSE_WEBTRANSPORT_SESSION:
                self.disconnect(int.from_bytes(value[:4], "big"), value[4:].decode(errors="replace"))
        if ended:
            self.disconnect(0, "")  # draft-02 §5: a FIN alone is close(0, "")
            self.finish(capsule=b"")  # "The recipient MUST close the stream upon receiving a FIN"


class _BridgeProtocol(QuicConnectionProtocol):
    app: App
    tasks: set[asyncio.Task[None]]

    def __init__(self, quic: QuicConnection, stream_handler: Any = None) -> None:  # noqa: ANN401 (aioquic's type)
        super().__init__(quic, stream_handler)
        self.http: H3Connection | None = None
        self.sessions: dict[int, _Session] = {}
        self.stream_session: dict[int, _Session] = {}

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self.http = H3Connection(self._quic, enable_webtransport=True)
        if isinstance(event, StreamReset | StopSendingReceived):
            session = self.sessions.get(event.stream_id)
            if session is not None:
                session.disconnect(0, "")
            else:
                session = self.stream_session.get(event.stream_id)
                if session is not None and session.accepted:
                    kind = "reset" if isinstance(event, StreamReset) else "stop"
                    code = http3_code_to_webtransport(event.error_code)
                    session.events.put_nowait(
                        {"type": f"webtransport.stream.{kind}", "stream": event.stream_id, "code": code or 0}
                    )
        if self.http is not None:
            for h3_event in self.http.handle_event(event):
                self._h3_event(h3_event)
        self.transmit()

    def _h3_event(self, event: H3Event) -> None:
        assert self.http is not None
        if isinstance(event, HeadersReceived) and event.stream_id not in self.sessions:
            self._connect(event)
        elif isinstance(event, DataReceived) and event.stream_id in self.sessions:
            self.sessions[event.stream_id].session_data(event.data, event.stream_ended)
        elif isinstance(event, DatagramReceived) and event.stream_id in self.sessions:
            session = self.sessions[event.stream_id]
            if session.accepted:
                session.events.put_nowait({"type": "webtransport.datagram.receive", "data": event.data})
        elif isinstance(event, WebTransportStreamDataReceived) and event.session_id in self.sessions:
            session = self.sessions[event.session_id]
            self.stream_session[event.stream_id] = session
            session.events.put_nowait(
                {"type": "webtransport.stream.receive", "stream": event.stream_id, "data": event.data,
                 "end": event.stream_ended, "unidirectional": event.stream_id % 4 in (2, 3),
                 "opened_by_peer": event.stream_id % 2 == 0}
            )  # fmt: skip

    def _connect(self, event: HeadersReceived) -> None:
        assert self.http is not None
        fields = dict(event.headers)
        if fields.get(b":method") != b"CONNECT" or fields.get(b":protocol") != b"webtransport":
            self.http.send_headers(event.stream_id, [(b":status", b"501")], end_stream=True)
            return
        raw_path = fields.get(b":path", b"/")
        target = urlsplit(raw_path.decode())
        offered = fields.get(b"sec-webtransport-protocol", b"")
        scope = {
            "type": "webtransport", "asgi": {"version": "3.0", "spec_version": "2.4"}, "http_version": "3",
            "scheme": "https", "method": "CONNECT", "path": unquote(target.path), "raw_path": raw_path,
            "query_string": target.query.encode(), "root_path": "",
            "headers": [(k, v) for k, v in event.headers if not k.startswith(b":")],
            "client": list(self._quic._network_paths[0].addr[:2]), "server": None, "state": {},
            "subprotocols": [p.strip() for p in offered.decode().split(",") if p.strip()],
            "extensions": {"webtransport": {
                "draft": "draft02", "server_streams": True, "stream_end": True, "stream_reset": True,
                "close_reason": True, "max_datagram_size": self._quic._configuration.max_datagram_size - 64,
            }},
        }  # fmt: skip
        session = _Session(self, event.stream_id, scope)
        self.sessions[event.stream_id] = session
        task = asyncio.ensure_future(session.run(self.app))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


@contextlib.contextmanager
def asgi_server(app: App, certificate: Path, key: Path) -> Iterator[int]:
    """Serve `app`'s webtransport scopes on 127.0.0.1 (an ephemeral UDP port) in a thread; yields the port.

    Exceptions the application raises are collected and re-raised when the block ends."""
    errors: list[BaseException] = []

    async def guarded(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:  # noqa: ANN401
        try:
            await app(scope, receive, send)
        except Exception as error:
            errors.append(error)
            raise

    protocol = type("BridgeProtocol", (_BridgeProtocol,), {"app": staticmethod(guarded), "tasks": set()})
    configuration = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN, max_datagram_frame_size=65536)
    configuration.load_cert_chain(str(certificate), str(key))
    loop = asyncio.new_event_loop()
    started: list[Any] = []
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(serve("127.0.0.1", 0, configuration=configuration, create_protocol=protocol))
        started.append(server)
        ready.set()
        loop.run_forever()
        server.close()
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(asyncio.sleep(0.05))
        loop.close()

    thread = threading.Thread(target=run, name="wt-asgi-server", daemon=True)
    thread.start()
    assert ready.wait(10), "the ASGI bridge server did not start"
    try:
        yield int(started[0]._transport.get_extra_info("sockname")[1])
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
    if errors:
        raise errors[0]
