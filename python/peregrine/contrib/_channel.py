"""A bounded FIFO whose producer waits when it is full and that can be ended or failed.

`asyncio.Queue` cannot wake its waiters with an outcome ("the session is gone"),
and a reader task blocked in `put()` on a queue nobody reads again would hang the
session's close. A `Channel` ends (readers drain what is queued, then see the end),
or fails (readers get the exception at once, a blocked producer returns and its
item is discarded).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class ChannelEndedError(Exception):
    """`get()` on a channel that was ended and is empty."""


class Channel(Generic[T]):
    """A bounded FIFO for one consumer; `put()` waits while `capacity` items are queued."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("a channel holds at least one item")
        self._capacity = capacity
        self._items: deque[T] = deque()
        self._changed = asyncio.Event()
        self._ended = False
        self._failure: BaseException | None = None

    def __len__(self) -> int:
        return len(self._items)

    @property
    def finished(self) -> bool:
        """True once the channel was ended or failed (nothing more will be put)."""
        return self._ended or self._failure is not None

    def _wake(self) -> None:
        # One event wakes whoever waits (the consumer for an item, the producer for room); each
        # re-checks its own condition after waking, so a spurious wake-up is harmless.
        self._changed.set()
        self._changed = asyncio.Event()

    async def put(self, item: T) -> bool:
        """Queue `item`, waiting for room. False if the channel finished meanwhile (item dropped)."""
        while not self.finished and len(self._items) >= self._capacity:
            await self._changed.wait()
        if self.finished:
            return False
        self._items.append(item)
        self._wake()
        return True

    def put_nowait(self, item: T) -> bool:
        """Queue `item` if there is room now; False (item dropped) if full or finished."""
        if self.finished or len(self._items) >= self._capacity:
            return False
        self._items.append(item)
        self._wake()
        return True

    async def get(self) -> T:
        """The next item; raises the failure, or `ChannelEndedError` once ended and drained."""
        while True:
            if self._failure is not None:
                raise self._failure
            if self._items:
                item = self._items.popleft()
                self._wake()
                return item
            if self._ended:
                raise ChannelEndedError
            await self._changed.wait()

    def end(self) -> None:
        """No more items: the consumer drains what is queued, then sees the end."""
        self._ended = True
        self._wake()

    def fail(self, failure: BaseException) -> None:
        """Drop what is queued; the consumer gets `failure`, a waiting producer returns False."""
        if self._failure is None:
            self._failure = failure
        self._items.clear()
        self._wake()
