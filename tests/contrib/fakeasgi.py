"""A fake server side of the WebTransport ASGI extension for unit tests of peregrine.contrib.

`FakePeer` owns the two queues behind an application's `receive()` and `send()`:
the test pushes events (`push`) and pops what the application sent (`sent`).
`receive_calls` counts how often the application asked for an event, which is
how the backpressure tests see the reader stop reading.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Coroutine, MutableMapping

T = TypeVar("T")

#: Bound of every wait in these tests: far above what an in-memory exchange takes.
TIMEOUT = 10.0


def webtransport_scope(path: str = "/wt", **extra: object) -> dict[str, Any]:
    scope: dict[str, Any] = {
        "type": "webtransport",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "3",
        "scheme": "https",
        "method": "CONNECT",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"origin", b"https://example.test")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 4433),
        "state": {},
        "subprotocols": ["chat", "echo"],
        "extensions": {
            "webtransport": {
                "draft": "draft02",
                "server_streams": True,
                "stream_end": True,
                "stream_reset": True,
                "close_reason": True,
                "max_datagram_size": 1180,
            }
        },
    }
    scope.update(extra)
    return scope


class FakePeer:
    def __init__(self) -> None:
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.messages: asyncio.Queue[MutableMapping[str, Any]] = asyncio.Queue()
        self.receive_calls = 0

    async def receive(self) -> dict[str, Any]:
        self.receive_calls += 1
        return await self.events.get()

    async def send(self, message: MutableMapping[str, Any]) -> None:
        await self.messages.put(message)

    def push(self, kind: str, **fields: object) -> None:
        self.events.put_nowait({"type": f"webtransport.{kind}", **fields})

    def push_data(self, stream: int, data: bytes, *, end: bool = False, uni: bool = False, peer: bool = True) -> None:
        self.push("stream.receive", stream=stream, data=data, end=end, unidirectional=uni, opened_by_peer=peer)

    async def sent(self) -> MutableMapping[str, Any]:
        return await asyncio.wait_for(self.messages.get(), TIMEOUT)

    def nothing_sent(self) -> bool:
        return self.messages.empty()

    async def settle(self) -> None:
        """Let every runnable task run until none can make progress (no timing involved)."""
        for _ in range(50):
            await asyncio.sleep(0)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, TIMEOUT)

    return asyncio.run(bounded())
