"""A WebTransport session object over the WebTransport ASGI extension.

The extension (TRANSPORT.md, "The WebTransport ASGI extension") hands an ASGI
application one `webtransport` scope per session and multiplexes every stream and
datagram of the session through the one `receive()`/`send()` pair. This module
turns that into objects::

    from peregrine.contrib.webtransport import WebTransportSession

    async def app(scope, receive, send):
        if scope["type"] != "webtransport":
            ...  # http, websocket, lifespan: the rest of the application
            return
        session = WebTransportSession(scope, receive, send)
        await session.accept()
        async for stream in session.incoming_streams():
            data = b""
            while chunk := await stream.read():
                data += chunk
            await stream.send(data, end=True)

Theory of operation: after `accept()` one reader task owns `receive()` and
demultiplexes its events into a bounded queue per stream, a bounded queue of
streams the peer opened, and a bounded queue of datagrams. A full stream queue
(or a full queue of new streams) makes the reader wait, so it stops calling
`receive()`; the server then stops reading the QUIC stream and the peer runs
out of flow-control credit (RFC 9000 §4): an application that does not read
slows its peer down instead of buffering without bound. The cost is that one
unread stream holds back the others of its session; read every stream you
accept, or reset it. Datagrams are unreliable (RFC 9221 §5), so a full datagram
queue drops the newest datagram (counted in `datagrams_dropped`) rather than
hold back the streams.

Works on Python 3.10 and later; no dependency outside the standard library.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from typing import TYPE_CHECKING, Any

from ._channel import Channel, ChannelEndedError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping

    Message = MutableMapping[str, Any]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]

__all__ = [
    "SessionClosedError",
    "StreamResetError",
    "StreamStoppedError",
    "WebTransportError",
    "WebTransportSession",
    "WebTransportStream",
]

#: Chunks queued per stream before the reader stops calling receive() (backpressure).
DEFAULT_STREAM_QUEUE = 16
#: Peer-opened streams queued before `incoming_streams()` takes them.
DEFAULT_INCOMING_QUEUE = 16
#: Datagrams queued before `datagrams()` takes them; more are dropped and counted.
DEFAULT_DATAGRAM_QUEUE = 64


class WebTransportError(Exception):
    """Base of the errors this module raises."""


class SessionClosedError(WebTransportError):
    """The session ended (peer close, connection loss, or our own close)."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"WebTransport session closed (code {code}, reason {reason!r})")
        self.code = code
        self.reason = reason


class StreamResetError(WebTransportError):
    """The peer reset its sending side of the stream (RESET_STREAM) with this application code."""

    def __init__(self, stream_id: int, code: int) -> None:
        super().__init__(f"stream {stream_id} reset by the peer (code {code})")
        self.stream_id = stream_id
        self.code = code


class StreamStoppedError(WebTransportError):
    """The peer asked us to stop sending on the stream (STOP_SENDING) with this application code."""

    def __init__(self, stream_id: int, code: int) -> None:
        super().__init__(f"stream {stream_id} stopped by the peer (code {code})")
        self.stream_id = stream_id
        self.code = code


class _End:
    """Queued after the last chunk of a stream (the peer's FIN)."""


_END = _End()


class WebTransportStream:
    """One stream of a session: bidirectional, or unidirectional in one direction.

    Made by the session (`incoming_streams()`, `open_stream()`), not directly.
    """

    def __init__(
        self, session: WebTransportSession, stream_id: int, *, unidirectional: bool, opened_by_peer: bool
    ) -> None:
        self._session = session
        self.stream_id = stream_id
        self.unidirectional = unidirectional
        self.opened_by_peer = opened_by_peer
        #: Code of the peer's STOP_SENDING, once it came.
        self.stop_code: int | None = None
        self._chunks: Channel[bytes | _End | StreamResetError] = Channel(session.stream_queue_size)
        self._read_ended = False
        self._send_ended = False
        # The peer's FIN or reset is queued: the stream outlives the session until it is read.
        self._receive_complete = False

    @property
    def readable(self) -> bool:
        """A unidirectional stream we opened has no receive side."""
        return not (self.unidirectional and not self.opened_by_peer)

    async def read(self) -> bytes:
        """The next chunk the peer sent; b"" once it finished the stream (FIN).

        Raises `StreamResetError` if the peer reset the stream, `SessionClosedError` if the
        session ended before the stream did.
        """
        if not self.readable:
            raise WebTransportError(f"stream {self.stream_id} is unidirectional from us: nothing to read")
        if self._read_ended:
            return b""
        try:
            item = await self._chunks.get()
        except ChannelEndedError:
            item = _END
        if isinstance(item, _End):
            self._read_ended = True
            return b""
        if isinstance(item, StreamResetError):
            self._read_ended = True
            raise item
        return item

    async def read_all(self, limit: int = 1 << 20) -> bytes:
        """Everything until the peer's FIN; `WebTransportError` past `limit` bytes."""
        parts: list[bytes] = []
        size = 0
        while chunk := await self.read():
            size += len(chunk)
            if size > limit:
                raise WebTransportError(f"stream {self.stream_id} sent more than {limit} bytes")
            parts.append(chunk)
        return b"".join(parts)

    async def send(self, data: bytes, *, end: bool = False) -> None:
        """Send `data`, and finish our side (FIN) if `end`; waits under flow control.

        On a unidirectional stream the peer opened, the server writes to one unidirectional
        stream of its own paired with it (the extension's aioquic-compatible rule).
        Raises `StreamStoppedError` after the peer's STOP_SENDING.
        """
        if self._send_ended:
            raise WebTransportError(f"stream {self.stream_id}: sending side already finished")
        if self.stop_code is not None:
            raise StreamStoppedError(self.stream_id, self.stop_code)
        self._session._check_open()
        if end:
            self._send_ended = True
            self._session._forget_if_done(self)
        await self._session._send(
            {"type": "webtransport.stream.send", "stream": self.stream_id, "data": bytes(data), "end": end}
        )

    async def reset(self, code: int = 0) -> None:
        """Abandon our sending side (RESET_STREAM with this WebTransport application code)."""
        self._session._check_open()
        self._send_ended = True
        self._session._forget_if_done(self)
        await self._session._send({"type": "webtransport.stream.reset", "stream": self.stream_id, "code": code})

    async def stop(self, code: int = 0) -> None:
        """Ask the peer to stop sending (STOP_SENDING); reads then end as if the stream finished."""
        self._session._check_open()
        self._read_ended = True
        self._chunks.fail(WebTransportError(f"stream {self.stream_id}: reading stopped"))
        await self._session._send({"type": "webtransport.stream.stop", "stream": self.stream_id, "code": code})

    def __repr__(self) -> str:
        kind = "uni" if self.unidirectional else "bidi"
        who = "peer" if self.opened_by_peer else "local"
        return f"<WebTransportStream {self.stream_id} {kind} {who}>"


class WebTransportSession:
    """A WebTransport session over one `webtransport` ASGI scope.

    `accept()` (or `reject()`/`close()`) first; then streams, datagrams and `close()`.
    `close_code`/`close_reason` are set once the session ended. Usable as
    `async with session:` (closes it on exit if it is still open).
    """

    def __init__(  # noqa: PLR0913 - the three ASGI callables plus three keyword-only queue sizes
        self,
        scope: MutableMapping[str, Any],
        receive: Receive,
        send: Send,
        *,
        stream_queue_size: int = DEFAULT_STREAM_QUEUE,
        incoming_queue_size: int = DEFAULT_INCOMING_QUEUE,
        datagram_queue_size: int = DEFAULT_DATAGRAM_QUEUE,
    ) -> None:
        if scope.get("type") != "webtransport":
            raise ValueError(f"not a webtransport scope: {scope.get('type')!r}")
        self.scope = scope
        self._receive = receive
        self._send_message = send
        self.stream_queue_size = stream_queue_size
        self._streams: dict[int, WebTransportStream] = {}
        self._incoming: Channel[WebTransportStream] = Channel(incoming_queue_size)
        self._datagrams: Channel[bytes] = Channel(datagram_queue_size)
        self._opening: dict[int, asyncio.Future[WebTransportStream]] = {}
        self._tags = itertools.count()
        self._state = "new"  # new → accepted → closing → closed; new → refused
        self._reader: asyncio.Task[None] | None = None
        self._closed = asyncio.Event()
        self.draining = asyncio.Event()
        #: Datagrams dropped because `datagrams()` did not keep up.
        self.datagrams_dropped = 0
        self.close_code: int | None = None
        self.close_reason: str | None = None

    # -- the scope ---------------------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The CONNECT request's path."""
        return str(self.scope.get("path", ""))

    @property
    def path_params(self) -> dict[str, Any]:
        """Parameters a router matched in the path (empty when no router set them)."""
        return dict(self.scope.get("path_params", {}))

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        """The CONNECT request's header fields (lower-case names, no pseudo-headers)."""
        return [(bytes(name), bytes(value)) for name, value in self.scope.get("headers", [])]

    @property
    def subprotocols(self) -> list[str]:
        """Application protocols the client offered (empty if it offered none)."""
        return list(self.scope.get("subprotocols", []))

    @property
    def _extension(self) -> dict[str, Any]:
        return dict(self.scope.get("extensions", {}).get("webtransport", {}))

    @property
    def draft(self) -> str | None:
        """The wire draft of the session: "draft02" or "h3" (the current draft)."""
        value = self._extension.get("draft")
        return None if value is None else str(value)

    @property
    def max_datagram_size(self) -> int | None:
        """Bytes one datagram may carry on this connection (larger ones are dropped)."""
        value = self._extension.get("max_datagram_size")
        return None if value is None else int(value)

    @property
    def is_open(self) -> bool:
        """True between `accept()` and the start of a close (by either side)."""
        return self._state == "accepted" and not self._closed.is_set()

    @property
    def closed(self) -> bool:
        """True once the session ended."""
        return self._closed.is_set()

    # -- opening and closing -----------------------------------------------------------------------

    async def _await_connect(self) -> None:
        if self._state != "new":
            raise WebTransportError(f"the session is already {self._state}")
        event = await self._receive()
        if event["type"] == "webtransport.disconnect":
            self._mark_closed(int(event.get("code", 0)), str(event.get("reason", "")))
            raise SessionClosedError(self.close_code or 0, self.close_reason or "")
        if event["type"] != "webtransport.connect":
            raise WebTransportError(f"expected webtransport.connect first, got {event['type']!r}")

    async def accept(self, *, subprotocol: str | None = None, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        """Accept the session (200), optionally choosing one of `subprotocols` and adding header fields."""
        await self._await_connect()
        message: dict[str, Any] = {"type": "webtransport.accept"}
        if subprotocol is not None:
            message["subprotocol"] = subprotocol
        if headers:
            message["headers"] = [[bytes(name), bytes(value)] for name, value in headers]
        await self._send_message(message)
        self._state = "accepted"
        self._reader = asyncio.get_running_loop().create_task(self._read_events())

    async def reject(self, status: int = 403, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        """Refuse the session with a 4xx or 5xx response."""
        if not 400 <= status <= 599:
            raise ValueError(f"a refusal is a 4xx or 5xx status, not {status}")
        await self._await_connect()
        message: dict[str, Any] = {"type": "webtransport.reject", "status": status}
        message["headers"] = [[bytes(name), bytes(value)] for name, value in headers or []]
        await self._send_message(message)
        self._state = "refused"
        self._mark_closed(0, "")

    async def close(self, code: int = 0, reason: str = "") -> None:
        """Close the session (WT_CLOSE_SESSION with `code` and `reason`) and wait until it ended.

        Before `accept()` this refuses the session (403). Closing a closed session does nothing.
        """
        if len(reason.encode()) > 1024:  # the close capsule carries at most 1024 bytes of reason
            raise ValueError("a close reason is at most 1024 bytes of UTF-8")
        if self._state == "new":
            await self._await_connect()
            await self._send_message({"type": "webtransport.close", "code": code, "reason": reason})
            self._state = "refused"
            self._mark_closed(code, reason)
            return
        if self._state != "accepted":
            return
        self._state = "closing"
        # Nobody reads the queues any more: unblock the reader so it can see the disconnect.
        self._fail_all(SessionClosedError(code, reason))
        await self._send_message({"type": "webtransport.close", "code": code, "reason": reason})
        await self._closed.wait()

    async def wait_closed(self) -> None:
        """Wait until the session ended (by either side)."""
        await self._closed.wait()

    async def __aenter__(self) -> WebTransportSession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._state == "accepted":
            await self.close()
        if self._reader is not None and not self._reader.done():
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader

    # -- streams and datagrams ---------------------------------------------------------------------

    async def incoming_streams(self) -> AsyncIterator[WebTransportStream]:
        """The streams the peer opens, in the order their first data arrived; ends with the session."""
        self._check_accepted()
        while True:
            try:
                yield await self._incoming.get()
            except (ChannelEndedError, SessionClosedError):
                return

    async def accept_stream(self) -> WebTransportStream:
        """The next stream the peer opens; `SessionClosedError` once the session ended."""
        self._check_accepted()
        try:
            return await self._incoming.get()
        except ChannelEndedError:
            raise SessionClosedError(self.close_code or 0, self.close_reason or "") from None

    async def open_stream(self, *, unidirectional: bool = False) -> WebTransportStream:
        """Open a stream of our own; waits until the peer's stream limit lets the server open it."""
        self._check_open()
        tag = next(self._tags)
        future: asyncio.Future[WebTransportStream] = asyncio.get_running_loop().create_future()
        self._opening[tag] = future
        try:
            await self._send({"type": "webtransport.stream.open", "unidirectional": unidirectional, "tag": tag})
            return await future
        finally:
            self._opening.pop(tag, None)

    async def send_datagram(self, data: bytes) -> None:
        """Send one datagram (unreliable: the server drops it if its queue is full or it is too large)."""
        self._check_open()
        await self._send({"type": "webtransport.datagram.send", "data": bytes(data)})

    async def datagrams(self) -> AsyncIterator[bytes]:
        """The datagrams the peer sends; ends with the session."""
        self._check_accepted()
        while True:
            try:
                yield await self._datagrams.get()
            except (ChannelEndedError, SessionClosedError):
                return

    async def receive_datagram(self) -> bytes:
        """The next datagram; `SessionClosedError` once the session ended."""
        self._check_accepted()
        try:
            return await self._datagrams.get()
        except ChannelEndedError:
            raise SessionClosedError(self.close_code or 0, self.close_reason or "") from None

    # -- internals ---------------------------------------------------------------------------------

    def _check_accepted(self) -> None:
        if self._state == "new":
            raise WebTransportError("accept() the session first")

    def _check_open(self) -> None:
        self._check_accepted()
        if self._state != "accepted":
            raise SessionClosedError(self.close_code or 0, self.close_reason or "")

    async def _send(self, message: Message) -> None:
        await self._send_message(message)

    async def _read_events(self) -> None:
        try:
            while not self._closed.is_set():
                await self._dispatch(await self._receive())
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - whatever receive() raised ends the session for every waiter
            self._fail_all(error)
            self._mark_closed(0, f"receive() failed: {error}")

    async def _dispatch(self, event: Message) -> None:
        kind = event["type"]
        if kind == "webtransport.stream.receive":
            await self._on_stream_data(event)
        elif kind == "webtransport.stream.reset":
            stream = self._streams.get(int(event["stream"]))
            if stream is not None and self._state == "accepted" and not stream._receive_complete:
                stream._receive_complete = True
                self._forget_if_done(stream)
                await stream._chunks.put(StreamResetError(stream.stream_id, int(event["code"])))
        elif kind == "webtransport.stream.stop":
            stream = self._streams.get(int(event["stream"]))
            if stream is not None:
                stream.stop_code = int(event["code"])
        elif kind == "webtransport.stream.opened":
            self._on_opened(event)
        elif kind == "webtransport.datagram.receive":
            if not self._datagrams.put_nowait(bytes(event["data"])):
                self.datagrams_dropped += 1
        elif kind == "webtransport.drain":
            self.draining.set()
        elif kind == "webtransport.disconnect":
            code, reason = int(event.get("code", 0)), str(event.get("reason", ""))
            self._fail_all(SessionClosedError(code, reason), ended=True)
            self._mark_closed(code, reason)
        # Other event types: a later version of the extension; ignoring them is forward compatible.

    async def _on_stream_data(self, event: Message) -> None:
        if self._state != "accepted":
            return  # we are closing: nobody will read it, and the reader must reach the disconnect
        stream_id = int(event["stream"])
        stream = self._streams.get(stream_id)
        if stream is None:
            stream = WebTransportStream(
                self,
                stream_id,
                unidirectional=bool(event.get("unidirectional", False)),
                opened_by_peer=bool(event.get("opened_by_peer", True)),
            )
            self._streams[stream_id] = stream
            if stream.opened_by_peer:
                await self._incoming.put(stream)
        data = bytes(event.get("data", b""))
        if data:
            await stream._chunks.put(data)
        if event.get("end", False) and not stream._receive_complete:
            stream._receive_complete = True
            self._forget_if_done(stream)
            await stream._chunks.put(_END)

    def _on_opened(self, event: Message) -> None:
        tag = event.get("tag")
        future = self._opening.get(tag) if isinstance(tag, int) else None
        stream_id = int(event["stream"])
        # Should the peer's first bytes on it have come before the answer, the stream exists already.
        stream = self._streams.get(stream_id)
        if stream is None:
            stream = WebTransportStream(
                self, stream_id, unidirectional=bool(event["unidirectional"]), opened_by_peer=False
            )
            self._streams[stream_id] = stream
        if future is not None and not future.done():
            future.set_result(stream)

    def _forget_if_done(self, stream: WebTransportStream) -> None:
        """Drop the session's reference to a stream no event can concern any more.

        The receive side is done once the peer's FIN or reset was dispatched (the extension sends nothing
        for a stream after those); the send side once we ended or reset it. A unidirectional stream has
        one side; a peer's unidirectional stream is done with its receive side (a paired reply needs no
        entry here). Whoever holds the stream object can still read what is queued in it.
        """
        receive_done = stream._receive_complete or not stream.readable
        send_done = stream._send_ended or (stream.unidirectional and stream.opened_by_peer)
        if receive_done and send_done:
            self._streams.pop(stream.stream_id, None)

    def _fail_all(self, failure: BaseException, *, ended: bool = False) -> None:
        """Wake every waiter: streams still open fail, the new-stream and datagram queues end."""
        for stream in self._streams.values():
            if not stream._receive_complete:
                stream._chunks.fail(failure)
        if ended:
            self._incoming.end()
            self._datagrams.end()
        else:
            self._incoming.fail(failure)
            self._datagrams.fail(failure)
        for future in self._opening.values():
            if not future.done():
                future.set_exception(failure)

    def _mark_closed(self, code: int, reason: str) -> None:
        if self.close_code is None:
            self.close_code, self.close_reason = code, reason
        if self._state != "refused":
            self._state = "closed"
        self._closed.set()
