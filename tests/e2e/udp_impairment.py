"""A UDP proxy that impairs the path between a QUIC client and the server under test (issue 15 point 6).

The test machine's kernel has no `netem`, so the link is simulated in the test process: `ImpairedLink` listens on
a UDP port of 127.0.0.1; each client address gets a socket of its own towards the server (as if behind a NAT
that keeps the mapping), and every datagram in each direction goes through an `Impairment`:

- `loss`: dropped with this probability;
- `delay` + up to `jitter` (uniform): held this long before it leaves; datagrams leave in the order of their
  departure times, so jitter alone reorders a little;
- `reorder`: with this probability held `reorder_delay` longer still, so that later datagrams overtake it;
- `duplicate`: with this probability sent twice (the copy after its own, independent delay);
- `corrupt`: with this probability 1 to 3 bytes anywhere in it get a random non-zero XOR (RFC 9001 §5.3: the AEAD
  tag fails and the receiver must drop the packet; a flipped header byte may also make it unparseable or
  addressed to an unknown connection, which the receiver must drop as well, RFC 9000 §5.2, §12.2);
- `ce_mark`: with this probability a datagram that arrived ECN-capable (ECT(0) or ECT(1)) leaves marked CE, as a
  congested ECN router marks instead of dropping (RFC 3168 §5); Not-ECT datagrams are never marked;
- `max_size`: datagrams larger than this many bytes are dropped, as a link with a smaller MTU does (a path MTU
  that the sender has to discover, RFC 8899).

Like a router, the link keeps each datagram's ECN field (RFC 3168 §5: read with IP_RECVTOS, set again per datagram
with an IP_TOS control message) unless it marks CE; `stats` counts the codepoints that arrived in each direction.

Decisions are deterministic: each direction of each client (flow) draws from its own `random.Random` seeded
with (seed, flow number, direction), so a given seed drops and corrupts the same datagram numbers on every run
(what arrives when still depends on the machine's timing). `blackout(seconds)` drops everything both ways for a
while, starting now or once the server has sent a given number of bytes (`blackout_after`).

One thread runs a `selectors` loop; `stats` counts what happened in each direction.
"""

from __future__ import annotations

import heapq
import itertools
import random
import selectors
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Self

#: Largest UDP payload read (a QUIC datagram is at most 65,527 bytes, RFC 9000 §18.2 max_udp_payload_size).
MAX_DATAGRAM = 65535
ECN_MASK = 0x3  # the ECN field: the two low bits of the TOS byte (RFC 3168 §5)
ECT0, CE = 2, 3
_TOS_CONTROL = socket.CMSG_SPACE(4)
UPSTREAM, DOWNSTREAM = "up", "down"  # client → server, server → client


@dataclass(frozen=True)
class Impairment:
    """What one direction of the link does to datagrams (probabilities in [0, 1], times in seconds)."""

    loss: float = 0.0
    delay: float = 0.0
    jitter: float = 0.0
    reorder: float = 0.0
    reorder_delay: float = 0.005
    duplicate: float = 0.0
    corrupt: float = 0.0
    ce_mark: float = 0.0
    max_size: int | None = None


@dataclass
class DirectionStats:
    """Counts of one direction, over every flow."""

    received: int = 0
    bytes_received: int = 0
    dropped: int = 0
    blacked_out: int = 0
    reordered: int = 0
    duplicated: int = 0
    corrupted: int = 0
    sent: int = 0
    #: Datagrams received by ECN codepoint: index 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE (RFC 3168 §5).
    ecn: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    ce_marked: int = 0
    too_large: int = 0
    #: The largest datagram received, and the largest forwarded (not dropped for its size or otherwise).
    largest: int = 0
    largest_forwarded: int = 0


@dataclass
class _Flow:
    """One client address: its socket towards the server and the random sources of its two directions."""

    client: tuple[str, int]
    upstream: socket.socket
    rngs: dict[str, random.Random] = field(default_factory=dict)
    #: With `trace`: (monotonic time, direction, size, fate) of every datagram, fate one of "sent", "lost", "too large",
    #: "blackout", "corrupted", "reordered".
    trace: list[tuple[float, str, int, str]] = field(default_factory=list)


class ImpairedLink:
    """The proxy: `with ImpairedLink(server_port, up=..., down=..., seed=N) as link:` then connect to `link.port`."""

    def __init__(
        self,
        server_port: int,
        *,
        up: Impairment | None = None,
        down: Impairment | None = None,
        seed: int = 0,
        server_host: str = "127.0.0.1",
        trace: bool = False,
    ) -> None:
        self.server = (server_host, server_port)
        self.impairments = {UPSTREAM: up or Impairment(), DOWNSTREAM: down or Impairment()}
        self.seed = seed
        self.trace = trace
        self.stats = {UPSTREAM: DirectionStats(), DOWNSTREAM: DirectionStats()}
        self._front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._front.bind(("127.0.0.1", 0))
        self._front.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        self._front.setblocking(False)
        self.port: int = self._front.getsockname()[1]
        self._flows: dict[tuple[str, int], _Flow] = {}
        self._by_socket: dict[socket.socket, _Flow] = {}
        # (departure time, sequence number, socket, datagram, destination or None for a connected socket, ECN)
        self._queue: list[tuple[float, int, socket.socket, bytes, tuple[str, int] | None, int]] = []
        self._sequence = itertools.count()
        self._lock = threading.Lock()
        self._blackout: tuple[float, float] | None = None  # [start, end) in time.monotonic()
        self._pending_blackout: tuple[int, float] | None = None  # (downstream bytes, seconds)
        #: When the last blackout began and ended (monotonic), once it has begun.
        self.blackout_window: tuple[float, float] | None = None
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._front, selectors.EVENT_READ)
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._selector.register(self._wake_read, selectors.EVENT_READ)
        self._running = True
        self._thread = threading.Thread(target=self._run, name=f"impaired-link-{self.port}", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stops the thread and closes every socket."""
        self._running = False
        self._wake_write.send(b"x")
        self._thread.join(5)
        for flow in self._flows.values():
            flow.upstream.close()
        self._selector.close()
        for sock in (self._front, self._wake_read, self._wake_write):
            sock.close()

    @property
    def flows(self) -> int:
        """How many client addresses have sent through the link."""
        return len(self._flows)

    def trace_of(self, client_port: int) -> list[tuple[float, str, int, str]]:
        """With `trace=True`: the datagrams of the client on 127.0.0.1:`client_port` (for failure messages)."""
        flow = self._flows.get(("127.0.0.1", client_port))
        return [] if flow is None else list(flow.trace)

    @staticmethod
    def format_trace(trace: list[tuple[float, str, int, str]]) -> str:
        """One line per datagram: seconds since the first, direction, size, fate."""
        start = trace[0][0] if trace else 0.0
        return "\n".join(f"{when - start:8.3f} {direction:>4} {size:5} {fate}" for when, direction, size, fate in trace)

    def set_impairment(self, direction: str, impairment: Impairment) -> None:
        """Changes one direction's impairment from now on."""
        with self._lock:
            self.impairments[direction] = impairment

    def blackout(self, seconds: float) -> None:
        """Drops every datagram, both ways, for `seconds` from now."""
        now = time.monotonic()
        with self._lock:
            self._blackout = (now, now + seconds)
            self.blackout_window = self._blackout

    def blackout_after(self, downstream_bytes: int, seconds: float) -> None:
        """A `blackout(seconds)` that begins once the server has sent `downstream_bytes` through the link."""
        with self._lock:
            self._pending_blackout = (downstream_bytes, seconds)

    # MARK: - the loop

    def _run(self) -> None:
        while self._running:
            timeout = None
            if self._queue:
                timeout = max(0.0, self._queue[0][0] - time.monotonic())
            for key, _ in self._selector.select(timeout):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self._wake_read:
                    sock.recv(64)
                elif sock is self._front:
                    self._drain_front()
                else:
                    self._drain_upstream(sock)
            self._send_due()

    @staticmethod
    def _receive(sock: socket.socket) -> tuple[bytes, tuple[str, int], int]:
        """One datagram, its sender and its ECN codepoint (IP_TOS control message; 0 when there is none)."""
        data, control, _, sender = sock.recvmsg(MAX_DATAGRAM, _TOS_CONTROL)
        ecn = 0
        for level, kind, value in control:
            if level == socket.IPPROTO_IP and kind == socket.IP_TOS and value:
                ecn = value[0] & ECN_MASK
        return data, sender, ecn

    def _drain_front(self) -> None:
        while True:
            try:
                data, client, ecn = self._receive(self._front)
            except BlockingIOError:
                return
            flow = self._flows.get(client)
            if flow is None:
                flow = self._new_flow(client)
            self._impair(UPSTREAM, flow, data, flow.upstream, None, ecn)

    def _drain_upstream(self, sock: socket.socket) -> None:
        flow = self._by_socket[sock]
        while True:
            try:
                data, _, ecn = self._receive(sock)
            except BlockingIOError:
                return
            except ConnectionRefusedError:
                continue  # an ICMP port unreachable from the server's side (it stopped): nothing to forward
            self._impair(DOWNSTREAM, flow, data, self._front, flow.client, ecn)

    def _new_flow(self, client: tuple[str, int]) -> _Flow:
        number = len(self._flows)
        upstream = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        upstream.bind(("127.0.0.1", 0))
        upstream.connect(self.server)
        upstream.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        upstream.setblocking(False)
        flow = _Flow(client, upstream)
        for direction in (UPSTREAM, DOWNSTREAM):
            flow.rngs[direction] = random.Random(f"{self.seed}/{number}/{direction}")  # noqa: S311 (a simulation)
        self._flows[client] = flow
        self._by_socket[upstream] = flow
        self._selector.register(upstream, selectors.EVENT_READ)
        return flow

    def _impair(
        self,
        direction: str,
        flow: _Flow,
        data: bytes,
        out: socket.socket,
        destination: tuple[str, int] | None,
        ecn: int,
    ) -> None:
        stats = self.stats[direction]
        rng = flow.rngs[direction]
        now = time.monotonic()
        with self._lock:
            impairment = self.impairments[direction]
            stats.received += 1
            stats.bytes_received += len(data)
            stats.ecn[ecn] += 1
            stats.largest = max(stats.largest, len(data))
            if direction == DOWNSTREAM and self._pending_blackout is not None:
                threshold, seconds = self._pending_blackout
                if stats.bytes_received >= threshold:
                    self._pending_blackout = None
                    self._blackout = (now, now + seconds)
                    self.blackout_window = self._blackout
            blackout = self._blackout
        fate, delay, copy_delay, flips = _draw(rng, impairment, len(data))
        # Drawn only when asked for, so the other draws of a seed stay what they were.
        if impairment.ce_mark and ecn in (1, ECT0) and rng.random() < impairment.ce_mark:
            ecn = CE
            stats.ce_marked += 1
        if impairment.max_size is not None and len(data) > impairment.max_size:
            fate = "too large"
        if blackout is not None and blackout[0] <= now < blackout[1]:
            fate = "blackout"
        counters = {
            "blackout": "blacked_out",
            "lost": "dropped",
            "reordered": "reordered",
            "corrupted": "corrupted",
            "too large": "too_large",
        }
        if fate in counters:
            setattr(stats, counters[fate], getattr(stats, counters[fate]) + 1)
        if self.trace:
            flow.trace.append((now, direction, len(data), fate))
        if fate in ("blackout", "lost", "too large"):
            return
        with self._lock:
            stats.largest_forwarded = max(stats.largest_forwarded, len(data))
        if fate == "corrupted":
            damaged = bytearray(data)
            for offset, mask in flips:
                damaged[offset] ^= mask
            data = bytes(damaged)
        self._schedule(now + delay, out, data, destination, ecn)
        if copy_delay is not None:
            stats.duplicated += 1
            self._schedule(now + copy_delay, out, data, destination, ecn)

    def _schedule(
        self, when: float, out: socket.socket, data: bytes, destination: tuple[str, int] | None, ecn: int
    ) -> None:
        heapq.heappush(self._queue, (when, next(self._sequence), out, data, destination, ecn))

    def _send_due(self) -> None:
        now = time.monotonic()
        while self._queue and self._queue[0][0] <= now:
            _, _, out, data, destination, ecn = heapq.heappop(self._queue)
            direction = UPSTREAM if destination is None else DOWNSTREAM
            # The datagram's own ECN field, set again (a Not-ECT one goes as the socket's default, 0).
            control = [(socket.IPPROTO_IP, socket.IP_TOS, struct.pack("i", ecn))] if ecn else []
            try:
                if destination is None:
                    out.sendmsg([data], control)
                else:
                    out.sendmsg([data], control, 0, destination)
            except (BlockingIOError, ConnectionRefusedError):
                continue  # a full socket buffer or a closed peer: the datagram is lost, as on a real path
            self.stats[direction].sent += 1


def _draw(
    rng: random.Random, impairment: Impairment, size: int
) -> tuple[str, float, float | None, list[tuple[int, int]]]:
    """One datagram's fate ("lost", "reordered", "corrupted" or "sent"), its delay, its copy's delay (None: no
    copy) and the corruption's (offset, XOR mask) pairs. Every draw is made whatever the outcome, so that one
    datagram's fate does not shift the next one's. A corrupted datagram may also be held back (counted as
    corrupted only); any datagram that is not lost may be copied."""
    lost = rng.random() < impairment.loss
    delay = impairment.delay + rng.random() * impairment.jitter
    reordered = rng.random() < impairment.reorder
    duplicated = rng.random() < impairment.duplicate
    copy_delay = impairment.delay + rng.random() * impairment.jitter
    corrupted = rng.random() < impairment.corrupt
    flips = [(rng.randrange(size), rng.randrange(1, 256)) for _ in range(rng.randint(1, 3))] if size else []
    if reordered:
        delay += impairment.reorder_delay
    fate = "lost" if lost else "corrupted" if corrupted and flips else "reordered" if reordered else "sent"
    return fate, delay, copy_delay if duplicated else None, flips if fate == "corrupted" else []
