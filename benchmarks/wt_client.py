"""The WebTransport client of benchmarks/webtransport.py: aioquic (draft-02) through tests/e2e/wtclient_aioquic.py.

One asyncio process. `connected()` opens a QUIC connection with one session and runs a body on it; the load
loops (`stream_echo`, `message_echo`, `datagram_echo`) run on a session until the shared `Window` says stop,
counting into a shared `Tally` only while it says measuring. wtclient_aioquic is imported lazily: the caller
puts tests/e2e on `sys.path` once it has checked that aioquic (and pytest, which that module uses to skip
itself) are installed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import math
import resource
import time
from typing import TYPE_CHECKING, Any, TypeVar, cast

from harness import HOST, ValidationError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from wtclient_aioquic import WTSession

T = TypeVar("T")
MESSAGE_SIZE = 64
#: A datagram window with no echo for this long is written off as lost (datagrams may be: RFC 9221 §5).
DATAGRAM_LOSS_TIMEOUT = 0.05


def payload(tag: str, index: int, size: int) -> bytes:
    """A `size`-byte message naming its sender and number, so a misplaced echo cannot compare equal."""
    return f"{tag} {index:010d} ".encode().ljust(size, b"x")[:size]


@dataclasses.dataclass
class Window:
    """The measured interval, shared by every client task: warm-up, then measured, then stopping."""

    measuring: bool = False
    stopping: bool = False


@dataclasses.dataclass
class Tally:
    """What the client counted during the measured interval."""

    operations: int = 0
    latencies: list[float] = dataclasses.field(default_factory=list)
    mismatches: int = 0
    errors: list[str] = dataclasses.field(default_factory=list)
    sent: int = 0
    received: int = 0
    written_off: int = 0
    #: Datagrams sent and received back over the whole run (warm-up and the final drain included).
    sent_total: int = 0
    received_total: int = 0

    def done(self, window: Window, began: float) -> None:
        """One operation finished now (counted only inside the measured interval)."""
        if window.measuring:
            self.operations += 1
            self.latencies.append(time.perf_counter() - began)


def percentile(values: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile of `values` in µs (None when there are none)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1)] * 1e6


def client_cpu_seconds() -> float:
    """User+system CPU of this process (the client) so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@functools.cache
def session_class() -> type[WTSession]:
    """The aioquic draft-02 client of the e2e tests, with what a load loop needs on top."""
    from wtclient_aioquic import WTSession  # noqa: PLC0415 - tests/e2e is put on the path by main()

    class BenchSession(WTSession):
        """WTSession plus: read one message off a long-lived stream, forget a finished stream, batch datagrams."""

        async def read_message(self, stream_id: int, size: int) -> bytes:
            """The next `size` bytes of the stream (consumed: a ping-pong stream does not grow without bound)."""
            await self.read(stream_id, size=size)
            buffer = self._streams[stream_id].data
            message = bytes(buffer[:size])
            del buffer[:size]
            return message

        def forget(self, stream_id: int) -> None:
            """Drop the client's record of a finished stream."""
            self._streams.pop(stream_id, None)

        def send_datagrams(self, data: list[bytes]) -> None:
            """Queue the datagrams of the session, then send them in one transmit."""
            for datagram in data:
                self.http.send_datagram(self.session_id, datagram)
            self.transmit()

        def datagram_ready(self) -> bytes | None:
            """A received datagram of the session, if one is waiting."""
            return None if self._datagrams.empty() else self._datagrams.get_nowait()

    return BenchSession


async def connected(port: int, body: Callable[[Any], Awaitable[T]]) -> T:
    """Open one QUIC connection with one WebTransport session on it, run `body(session)`, close the connection."""
    from aioquic.asyncio.client import connect  # noqa: PLC0415
    from wtclient_aioquic import WebTransportClient  # noqa: PLC0415

    configuration = WebTransportClient(port).configuration()
    async with connect(HOST, port, configuration=configuration, create_protocol=session_class()) as protocol:
        session = cast("WTSession", protocol)
        await session.open_session(f"localhost:{port}", "/bench", [])
        return await body(session)


# -- the load loops ---------------------------------------------------------------------------------------------


async def stream_echo(session: Any, tag: str, window: Window, tally: Tally) -> None:  # noqa: ANN401 (BenchSession)
    """Streams one after the other: 64 bytes with FIN out, the echo to FIN back."""
    index = 0
    while not window.stopping:
        message = payload(tag, index, MESSAGE_SIZE)
        began = time.perf_counter()
        stream = await session.open_stream()
        session.send(stream, message, end=True)
        echoed = await session.read(stream)
        session.forget(stream)
        if echoed != message:
            tally.mismatches += 1
        tally.done(window, began)
        index += 1


async def message_echo(session: Any, tag: str, window: Window, tally: Tally) -> None:  # noqa: ANN401
    """64-byte messages ping-pong on one stream."""
    stream = await session.open_stream()
    index = 0
    while not window.stopping:
        message = payload(tag, index, MESSAGE_SIZE)
        began = time.perf_counter()
        session.send(stream, message)
        if await session.read_message(stream, MESSAGE_SIZE) != message:
            tally.mismatches += 1
        tally.done(window, began)
        index += 1
    session.send(stream, b"", end=True)


async def datagram_echo(session: Any, tag: str, window: Window, tally: Tally, size: int, limit: int) -> None:  # noqa: ANN401, PLR0913, PLR0917
    """Datagrams out as fast as the echoes allow (`limit` unanswered), each echo checked against what was sent."""
    sent_at: dict[int, float] = {}
    sent = received = written_off = 0
    head = len(tag) + 12  # "TAG NNNNNNNNNN "
    while not window.stopping:
        room = limit - (sent - received - written_off)
        if room > 0:
            batch = [payload(tag, sent + offset, size) for offset in range(min(room, 16))]
            now = time.perf_counter()
            for offset in range(len(batch)):
                sent_at[sent + offset] = now
            session.send_datagrams(batch)
            sent += len(batch)
            tally.sent_total += len(batch)
            if window.measuring:
                tally.sent += len(batch)
            await asyncio.sleep(0)
        else:
            try:
                first = await asyncio.wait_for(session.receive_datagram(), DATAGRAM_LOSS_TIMEOUT)
            except TimeoutError:
                written_off = sent - received
                if window.measuring:
                    tally.written_off += 1
                continue
            _check_datagram(first, tag, head, size, sent_at, window, tally)
            received += 1
        while (echoed := session.datagram_ready()) is not None:
            _check_datagram(echoed, tag, head, size, sent_at, window, tally)
            received += 1
    # Drain: what is still on its way back counts in the run's totals (the rest was lost).
    while sent_at:
        try:
            echoed = await asyncio.wait_for(session.receive_datagram(), DATAGRAM_LOSS_TIMEOUT)
        except TimeoutError:
            return
        _check_datagram(echoed, tag, head, size, sent_at, window, tally)


def _check_datagram(  # noqa: PLR0913, PLR0917
    echoed: bytes, tag: str, head: int, size: int, sent_at: dict[int, float], window: Window, tally: Tally
) -> None:
    try:
        index = int(echoed[len(tag) + 1 : head - 1])
    except ValueError:
        tally.mismatches += 1
        return
    began = sent_at.pop(index, None)
    if began is None or echoed != payload(tag, index, size):
        tally.mismatches += 1
        return
    tally.received_total += 1
    if window.measuring:
        tally.received += 1
    tally.done(window, began)


async def check_echo(session: Any, session_id: int | None = None) -> None:  # noqa: ANN401
    """One stream echoed on the session (raises ValidationError if it differs)."""
    stream = await session.open_stream(session_id=session_id)
    message = payload("check", stream, MESSAGE_SIZE)
    session.send(stream, message, end=True)
    echoed = await session.read(stream)
    session.forget(stream)
    if echoed != message:
        raise ValidationError(f"stream echo {echoed!r} of {message!r}")
