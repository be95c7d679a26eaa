"""A receive() cancelled after its message was ready but before it took it, made to happen on purpose.

This is the window `asyncio.wait_for` (built on `asyncio.timeout()` since
Python 3.12) and anyio cancel scopes hit by chance when their deadline meets
a message: the future the waiting task awaits is completed, the task's
wake-up is scheduled, and before it runs `Task.cancel()` finds the future
done and throws CancelledError into the task in place of the future's
result. The ASGI spec requires that no message is lost that way: the next
receive() must get it.

`cancel_once_ready` makes that window certain, with no timing: the task it
runs steps once per event-loop iteration (`sleep(0)`), and a task's wake-up
always runs in the iteration after the one in which its future completed,
so this task sees the completed future before the waiting task resumes.
It reads `Task._fut_waiter` (the future a task waits on, in the C and the
Python implementation of asyncio, under asyncio and uvloop alike).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    Receive = Callable[[], Awaitable[dict[str, Any]]]

#: How long to wait for the message that completes the receive() (the test sends it).
DEADLINE = 30.0


async def cancel_once_ready(receive: Receive, waiting: Callable[[], None]) -> dict[str, Any]:
    """Await receive() in a task; cancel that task when its future completes, before it resumes.

    `waiting()` is called once the task waits (the test then sends what
    completes it). Returns {"cancelled": True} when the task ended
    cancelled without its message (the window was hit), {"cancelled":
    False, "message": ...} if it took the message anyway, or {"error": ...}
    if receive() never waited.
    """

    async def take() -> dict[str, Any]:
        return await receive()

    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    taker = asyncio.ensure_future(take())
    while getattr(taker, "_fut_waiter", None) is None:
        if taker.done():
            return {"error": "receive() did not wait", "message": repr(taker.result())}
        await asyncio.sleep(0)
    future = taker._fut_waiter  # the future the task waits on: see the module docstring
    waiting()
    while not future.done():
        if loop.time() > deadline:
            taker.cancel()
            return {"error": "the receive() future was never completed"}
        await asyncio.sleep(0)
    taker.cancel()
    try:
        message = await taker
    except asyncio.CancelledError:
        return {"cancelled": True}
    return {"cancelled": False, "message": repr(message)}
