"""WebTransport session handlers shared by the router test applications (wt_fastapi_app, wt_django_app).

Written against peregrine.contrib.webtransport only, so one handler serves under every router:

- `echo`: accepts (choosing the first subprotocol offered, if any); echoes each bidirectional stream on
  itself and each unidirectional stream on the server stream paired with it (FIN when the peer's FIN came),
  and each datagram; on the peer's close records (code, reason) in the state directory (`wt-closed`);
- `close_with`: accepts, then closes with the code and reason the route carries.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from peregrine.contrib.webtransport import WebTransportSession, WebTransportStream


def record(event: str) -> None:
    """Append a line to the state directory's events file (tests/conftest.py's `Server.events()`)."""
    state = os.environ.get("PEREGRINE_TEST_STATE")
    if state:
        with (Path(state) / "events.log").open("a", encoding="utf-8") as events:
            events.write(event + "\n")


async def _echo_stream(stream: WebTransportStream) -> None:
    while chunk := await stream.read():
        await stream.send(chunk)
    await stream.send(b"", end=True)


async def echo(session: WebTransportSession, **_params: object) -> None:
    """Echo streams and datagrams until the peer closes the session."""
    await session.accept(subprotocol=session.subprotocols[0] if session.subprotocols else None)
    tasks: set[asyncio.Task[None]] = set()

    async def datagrams() -> None:
        async for datagram in session.datagrams():
            await session.send_datagram(datagram)

    tasks.add(asyncio.ensure_future(datagrams()))
    async for stream in session.incoming_streams():
        task = asyncio.ensure_future(_echo_stream(stream))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    await session.wait_closed()
    record(f"wt-closed {session.close_code} {session.close_reason}")
    for task in tasks:
        task.cancel()


async def close_with(session: WebTransportSession, code: int, reason: str) -> None:
    """Accept, then close at once with `code` and `reason`."""
    await session.accept()
    await session.close(int(code), reason)
