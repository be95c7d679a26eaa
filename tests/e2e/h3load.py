"""HTTP/3 load for the process-model tests: client connections sending requests while a test signals the server.

`H3Load` runs `clients` connections at a time on an asyncio loop of its own thread. Each client opens a QUIC
connection, sends GET `path` on it one request after another (a random number in `per_connection`), closes it
and opens the next. It behaves as RFC 9114 asks of a client during a graceful shutdown:

- after a GOAWAY (§5.2) it opens no new request on that connection: the one in flight finishes, the next
  request goes on a new connection;
- a request reset with H3_REQUEST_REJECTED was not processed (§4.1.1, §8.1) and is sent again on a new
  connection; the `Outcome` keeps `rejected=True` so a test can count them.

Anything else (a reset, the connection closing under a request, a status other than 200, a body that is not the
worker's pid, a connection that cannot be made) is an `error`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from h3client import H3_REQUEST_REJECTED, ConnectionClosedError, H3Client

if TYPE_CHECKING:
    from collections.abc import Callable

    from h3client import H3ClientConnection


@dataclass
class Outcome:
    """One request sent by an `H3Load` client."""

    client: str
    connection: int  # unique to the QUIC connection the request went on (across every H3Load)
    started: float
    ended: float
    pid: int | None = None
    error: str | None = None
    rejected: bool = False  # reset with H3_REQUEST_REJECTED (then sent again)
    after_goaway: bool = False  # the connection had received a GOAWAY when the response came


class H3Load:
    """`clients` concurrent HTTP/3 clients sending GET `path` until stopped (see the module docstring)."""

    _numbers = itertools.count(1)  # connection numbers, shared so that several loads' outcomes can be merged

    def __init__(
        self,
        client: H3Client,
        *,
        clients: int = 4,
        path: str = "/pid",
        per_connection: tuple[int, int] = (1, 20),
        timeout: float = 15.0,
        parse: Callable[[bytes], int] = int,
    ) -> None:
        self.client = client
        self.clients = clients
        self.path = path
        self.per_connection = per_connection
        self.timeout = timeout
        self.parse = parse
        self.outcomes: list[Outcome] = []
        #: (connection number, when the attempt began, how long the handshake took) for each connection made.
        self.connects: list[tuple[int, float, float]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    def __enter__(self) -> H3Load:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop sending; wait for the requests in flight to end."""
        self._stopping.set()
        self._thread.join(2 * self.timeout + 5)
        assert not self._thread.is_alive(), "HTTP/3 load clients still waiting"

    def count(self) -> int:
        """Requests finished so far."""
        with self._lock:
            return len(self.outcomes)

    def wait_for_count(self, count: int, timeout: float) -> None:
        """Wait until `count` requests finished."""
        deadline = time.monotonic() + timeout
        while self.count() < count and time.monotonic() < deadline:
            time.sleep(0.02)

    def snapshot(self) -> list[Outcome]:
        """The outcomes so far."""
        with self._lock:
            return list(self.outcomes)

    def _add(self, outcome: Outcome) -> None:
        with self._lock:
            self.outcomes.append(outcome)

    async def _main(self) -> None:
        await asyncio.gather(*(self._client(f"h3-{index}", index) for index in range(self.clients)))

    async def _client(self, name: str, index: int) -> None:
        seed = index * 7919 + 17
        while not self._stopping.is_set():
            seed = (seed * 1103515245 + 12345) % 2**31
            low, high = self.per_connection
            await self._connection(name, low + seed % (high - low + 1))

    async def _connection(self, name: str, requests: int) -> None:
        number = next(H3Load._numbers)
        started = time.monotonic()
        async with contextlib.AsyncExitStack() as stack:
            try:
                async with asyncio.timeout(self.timeout):
                    connection: H3ClientConnection = await stack.enter_async_context(self.client.open())
                with self._lock:
                    self.connects.append((number, started, time.monotonic() - started))
            except (OSError, TimeoutError, ConnectionError) as error:
                self._add(Outcome(name, number, started, time.monotonic(), error=f"connect: {error!r}"))
                return
            for _ in range(requests):
                if self._stopping.is_set() or connection.goaways:
                    return
                if not await self._request(name, number, connection):
                    return

    async def _request(self, name: str, number: int, connection: H3ClientConnection) -> bool:
        """One request; False when the connection is not to be used again."""
        started = time.monotonic()
        outcome = Outcome(name, number, started, started)
        authority = f"localhost:{self.client.port}"
        try:
            async with asyncio.timeout(self.timeout):
                response = await connection.request("GET", self.path, authority, [], None)
            if response.reset_code == H3_REQUEST_REJECTED:
                outcome.rejected = True
            elif response.reset_code is not None:
                outcome.error = f"stream reset with 0x{response.reset_code:x}"
            elif response.status != 200:
                outcome.error = f"status {response.status}: {response.body[:200]!r}"
            else:
                try:
                    outcome.pid = self.parse(response.body)
                except ValueError:
                    outcome.error = f"unexpected body {response.body[:200]!r}"
        except (TimeoutError, ConnectionClosedError, ConnectionError) as error:
            outcome.error = f"{type(error).__name__}: {error}"
        outcome.ended = time.monotonic()
        outcome.after_goaway = bool(connection.goaways)
        self._add(outcome)
        return outcome.error is None and not outcome.rejected


def failures(outcomes: list[Outcome]) -> list[Outcome]:
    """The outcomes that are errors (a rejected request is not: it was sent again)."""
    return [outcome for outcome in outcomes if outcome.error is not None]


def per_worker(outcomes: list[Outcome]) -> dict[int, int]:
    """Successful requests per worker pid."""
    counts: dict[int, int] = {}
    for outcome in outcomes:
        if outcome.pid is not None:
            counts[outcome.pid] = counts.get(outcome.pid, 0) + 1
    return counts


def pids_per_connection(outcomes: list[Outcome]) -> dict[int, set[int]]:
    """The worker pids that answered on each connection."""
    seen: dict[int, set[int]] = {}
    for outcome in outcomes:
        if outcome.pid is not None:
            seen.setdefault(outcome.connection, set()).add(outcome.pid)
    return seen


def describe(outcomes: list[Outcome], limit: int = 15) -> str:
    """A few outcomes, one a line, for an assertion message."""
    lines = [
        f"{o.client} conn {o.connection} t={o.started:.3f}..{o.ended:.3f} goaway={o.after_goaway}: "
        f"{o.error or ('rejected' if o.rejected else o.pid)}"
        for o in outcomes[:limit]
    ]
    if len(outcomes) > limit:
        lines.append(f"... {len(outcomes) - limit} more")
    return "\n".join(lines)


def timeline(outcomes: list[Outcome], marks: dict[str, float] | None = None) -> str:
    """When each worker answered (first and last response, count), and the test's `marks`, in time order."""
    spans: dict[int, list[float]] = {}
    for o in outcomes:
        if o.pid is not None:
            span = spans.setdefault(o.pid, [o.ended, o.ended, 0])
            span[0], span[1], span[2] = min(span[0], o.ended), max(span[1], o.ended), span[2] + 1
    events = [
        (first, f"worker {pid}: {int(n)} answers {first:.3f}..{last:.3f}") for pid, (first, last, n) in spans.items()
    ]
    events += [(t, f"{name} at {t:.3f}") for name, t in (marks or {}).items()]
    return "\n".join(text for _, text in sorted(events))
