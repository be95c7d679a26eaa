"""Soak: hours of mixed traffic, signals and worker kills, and a count of everything that went wrong.

Usage: python3 benchmarks/soak.py [--duration SECONDS] [--bin PATH] [--users N] [--sighup-every S]
                                  [--kill-every S] [--steady] [--max-rss-growth KIB_PER_MIN] [--output FILE]

Two servers run `apps.soak_app:app` with `--workers 2`: one in cleartext (HTTP/1.1, h2c, WebSocket) and one
with TLS (HTTP/1.1 and HTTP/2 over TLS, WebSocket over TLS). Against each, `--users` clients per kind of
traffic loop until the end: keep-alive and one-shot HTTP/1.1, uploads (sized and chunked), streamed
downloads, HTTP/2 connections with many concurrent streams, WebSocket echo and broadcast, clients that vanish
mid-request (half a head, half a body, a reset), and malformed requests (400, 431). Every `--sighup-every`
seconds both supervisors get SIGHUP (the workers are replaced gracefully); every `--kill-every` seconds one
worker is killed with SIGKILL. With `--steady` a third server (cleartext) gets the same traffic and no
signal, so its workers live the whole run: a slow leak shows there, where the others' workers live a minute.

What counts:
- failures: a request or message that did not get its right answer. There must be none, except on
  connections of a worker killed on purpose (every response says which worker sent it: `x-worker`; a
  failure whose worker is unknown counts as the kill's when it comes within 3 s after one). Those are
  counted apart.
- retried: an idle kept-alive connection the server closed (a graceful replacement does that) just as a
  request was sent on it, before any byte of the answer: HTTP clients resend then (RFC 9112 §9.3.1), and so
  does this one; likewise HTTP/2 streams above a GOAWAY's last stream ID (RFC 9113 §6.8) and WebSockets
  closed with 1001 (going away). Counted, not failures.
- per worker: resident memory and open descriptors every 2 s; the slope after each worker's first 10 s is
  reported (KiB and descriptors per minute), and at the end, after the load stops and idle connections
  time out, every worker's descriptors must be back to what a fresh worker holds.
- long-lived processes (the supervisors, and the steady server's workers): the same slopes after a warm-up
  of a tenth of the run (10 s to 5 min). On runs of 10 minutes or more they are bounded: RSS by
  `--max-rss-growth` KiB/min (default 32, under 2 MiB an hour), descriptors by 0.1 a minute.
- latency percentiles of the HTTP/1.1 keep-alive requests.

Exits 0 when there is no failure, the descriptor check holds, every server has its two workers once the load is
over (not a slot filled twice), and no long-lived process grew past its bound; 1 otherwise. The summary goes to stdout,
the whole report (JSON) to `--output` if given. `tests/test_soak.py` runs it for two minutes in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h2.config
import h2.connection
import h2.events
import websockets
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

HERE = Path(__file__).resolve().parent
HOST = "127.0.0.1"
KILL_WINDOW_SECONDS = 3.0
WARMUP_SECONDS = 10.0
SAMPLE_SECONDS = 2.0
KEEP_ALIVE_MS = 3000
#: Worker processes per server (`--workers`).
WORKERS = 2
#: Growth of the long-lived processes is judged on runs at least this long (shorter ones are mostly warm-up).
BOUNDED_FROM_SECONDS = 600.0
#: Descriptors may come and go with connections, but not pile up: this many per minute at most, on the slope.
MAX_FD_GROWTH_PER_MIN = 0.1
#: Default bound on the RSS slope of a long-lived process after its warm-up (KiB per minute): 1.9 MiB an hour.
MAX_RSS_GROWTH_KIB_PER_MIN = 32.0
IO_TIMEOUT = 30.0


class WrongAnswerError(Exception):
    """A wrong or missing answer."""


class ServerClosedIdleError(Exception):
    """The server closed a reused connection before any byte of the answer: the request may be resent."""


@dataclass
class Tally:
    """What happened, by kind of traffic."""

    ok: Counter[str] = field(default_factory=Counter)
    retried: Counter[str] = field(default_factory=Counter)
    killed: Counter[str] = field(default_factory=Counter)
    deliberate: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    kills: list[tuple[float, int]] = field(default_factory=list)
    hups: list[float] = field(default_factory=list)

    def attributable(self, worker: int | None, when: float) -> bool:
        """Whether a failure at `when` on `worker`'s connection is a deliberate kill's doing."""
        if worker is not None:
            return any(pid == worker for _, pid in self.kills)
        return any(0 <= when - at <= KILL_WINDOW_SECONDS for at, _ in self.kills)

    def fail(self, kind: str, worker: int | None, error: BaseException | str) -> None:
        """Count a failure: the kill's if `attributable`, otherwise a real one."""
        now = time.monotonic()
        if self.attributable(worker, now):
            self.killed[kind] += 1
        else:
            self.failures.append({"kind": kind, "worker": worker, "error": repr(error), "at": now})


@dataclass
class Target:
    """One server under soak."""

    name: str
    port: int
    tls: ssl.SSLContext | None
    process: subprocess.Popen[bytes]

    def workers(self) -> list[int]:
        """PIDs of the supervisor's children: its workers."""
        try:
            text = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text()
        except OSError:
            return []
        return [int(pid) for pid in text.split()]


# MARK: - HTTP/1.1


async def open_h1(target: Target) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection for HTTP/1.1 (TLS with ALPN `http/1.1` on the TLS server)."""
    ctx = target.tls
    if ctx is not None:
        ctx = ssl_context(target, ["http/1.1"])
    return await asyncio.wait_for(
        asyncio.open_connection(HOST, target.port, ssl=ctx, server_hostname="localhost" if ctx else None), IO_TIMEOUT
    )


def ssl_context(target: Target, alpn: list[str]) -> ssl.SSLContext:
    """A client context for the test certificate, offering `alpn`."""
    del target  # every TLS server of the run uses the same kind of test certificate
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(alpn)
    return ctx


async def read_response(reader: asyncio.StreamReader, *, reused: bool) -> tuple[int, dict[bytes, bytes], bytes]:
    """Status, header fields (lower-case names) and body of one HTTP/1.1 response."""
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), IO_TIMEOUT)
    except asyncio.IncompleteReadError as error:
        if reused and not error.partial:
            raise ServerClosedIdleError from error
        raise
    except ConnectionResetError as error:
        if reused:
            raise ServerClosedIdleError from error
        raise
    lines = head[:-4].split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip()
    if b"content-length" in fields:
        body = await asyncio.wait_for(reader.readexactly(int(fields[b"content-length"])), IO_TIMEOUT)
    elif fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        parts = []
        while True:
            size = int((await asyncio.wait_for(reader.readuntil(b"\r\n"), IO_TIMEOUT)).split(b";")[0], 16)
            chunk = await asyncio.wait_for(reader.readexactly(size + 2), IO_TIMEOUT)
            if size == 0:
                break
            parts.append(chunk[:-2])
        body = b"".join(parts)
    else:
        body = await asyncio.wait_for(reader.read(), IO_TIMEOUT)
    return status, fields, body


def worker_of(fields: dict[bytes, bytes]) -> int | None:
    """The PID in a response's `x-worker` field."""
    value = fields.get(b"x-worker")
    return int(value) if value else None


async def h1_keepalive(target: Target, tally: Tally) -> None:
    """20 GETs on one connection; a reused connection closed by the server is reopened and the GET resent."""
    kind = f"{target.name}:h1-keepalive"
    worker = None
    try:
        reader, writer = await open_h1(target)
    except (TimeoutError, OSError, ssl.SSLError) as error:
        tally.fail(kind, worker, error)
        return
    try:
        sent = 0
        while sent < 20:
            start = time.monotonic()
            writer.write(b"GET /hello HTTP/1.1\r\nHost: soak\r\n\r\n")
            try:
                try:
                    await writer.drain()
                except ConnectionResetError as error:
                    # The write met the reset of a connection the server had already closed while idle.
                    if sent == 0:
                        raise
                    raise ServerClosedIdleError from error
                status, fields, body = await read_response(reader, reused=sent > 0)
            except (ServerClosedIdleError, BrokenPipeError):
                tally.retried[kind] += 1
                writer.close()
                reader, writer = await open_h1(target)
                continue
            worker = worker_of(fields)
            if (status, body) != (200, b"hello"):
                raise WrongAnswerError(f"status {status} body {body[:40]!r}")
            tally.latencies.append(time.monotonic() - start)
            tally.ok[kind] += 1
            sent += 1
            if fields.get(b"connection", b"").lower() == b"close":
                writer.close()
                reader, writer = await open_h1(target)
    except (TimeoutError, WrongAnswerError, OSError, asyncio.IncompleteReadError, ssl.SSLError) as error:
        tally.fail(kind, worker, error)
    finally:
        writer.close()


async def h1_oneshot(target: Target, tally: Tally) -> None:
    """One GET with `Connection: close`: the answer, then the end of the connection."""
    kind = f"{target.name}:h1-oneshot"
    worker = None
    try:
        reader, writer = await open_h1(target)
        writer.write(b"GET /hello HTTP/1.1\r\nHost: soak\r\nConnection: close\r\n\r\n")
        await writer.drain()
        status, fields, body = await read_response(reader, reused=False)
        worker = worker_of(fields)
        if (status, body) != (200, b"hello"):
            raise WrongAnswerError(f"status {status} body {body[:40]!r}")
        if await asyncio.wait_for(reader.read(1), IO_TIMEOUT) != b"":
            raise WrongAnswerError("bytes after a Connection: close response")
        writer.close()
        tally.ok[kind] += 1
    except (TimeoutError, WrongAnswerError, OSError, asyncio.IncompleteReadError, ssl.SSLError) as error:
        tally.fail(kind, worker, error)


async def h1_upload(target: Target, tally: Tally, rng: random.Random) -> None:
    """A POST sized or chunked; the answer names its size and SHA-256."""
    kind = f"{target.name}:h1-upload"
    worker = None
    body = rng.randbytes(rng.choice([0, 1, 1000, 65_536, 300_000]))
    chunked = rng.random() < 0.5
    try:
        reader, writer = await open_h1(target)
        if chunked:
            head = b"POST /upload HTTP/1.1\r\nHost: soak\r\nTransfer-Encoding: chunked\r\n\r\n"
            pieces = [body[i : i + 16_384] for i in range(0, len(body), 16_384)]
            payload = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
        else:
            head = b"POST /upload HTTP/1.1\r\nHost: soak\r\nContent-Length: %d\r\n\r\n" % len(body)
            payload = body
        writer.write(head + payload)
        await writer.drain()
        status, fields, answer = await read_response(reader, reused=False)
        worker = worker_of(fields)
        expected = f"{len(body)} {hashlib.sha256(body).hexdigest()}".encode()
        if (status, answer) != (200, expected):
            raise WrongAnswerError(f"status {status} answer {answer[:80]!r}")
        writer.close()
        tally.ok[kind] += 1
    except (TimeoutError, WrongAnswerError, OSError, asyncio.IncompleteReadError, ssl.SSLError) as error:
        tally.fail(kind, worker, error)


_PATTERN = bytes(range(251)) * (1_600_000 // 251 + 1)


def pattern(size: int) -> bytes:
    """Bytes 0 .. size of the app's `i % 251` pattern (sliced from one copy: the client's loop must stay fast)."""
    return _PATTERN[:size]


async def h1_download(target: Target, tally: Tally, rng: random.Random) -> None:
    """A streamed (chunked) download, every byte checked."""
    kind = f"{target.name}:h1-download"
    worker = None
    chunks, size = rng.choice([(1, 10), (16, 4096), (64, 16_384), (8, 200_000)])
    try:
        reader, writer = await open_h1(target)
        writer.write(b"GET /stream?chunks=%d&size=%d HTTP/1.1\r\nHost: soak\r\n\r\n" % (chunks, size))
        await writer.drain()
        status, fields, body = await read_response(reader, reused=False)
        worker = worker_of(fields)
        if status != 200 or body != pattern(chunks * size):
            raise WrongAnswerError(f"status {status}, {len(body)} of {chunks * size} bytes or wrong bytes")
        writer.close()
        tally.ok[kind] += 1
    except (TimeoutError, WrongAnswerError, OSError, asyncio.IncompleteReadError, ssl.SSLError) as error:
        tally.fail(kind, worker, error)


# MARK: - HTTP/2


class _OpenAfterGoaway(h2.connection.H2ConnectionStateMachine):
    """The h2 package's connection state machine, kept open at a GOAWAY.

    RFC 9113 §6.8: streams up to a GOAWAY's last stream ID are still answered, but h2 refuses every frame
    after a GOAWAY. This one stays open at it, so that the answers are read and checked.
    """

    def process_input(self, input_: h2.connection.ConnectionInputs) -> list[h2.events.Event]:
        if input_ is h2.connection.ConnectionInputs.RECV_GOAWAY:
            return []
        return super().process_input(input_)


@dataclass
class H2Burst:
    """The streams of one HTTP/2 connection and what came back on them."""

    expected: dict[int, bytes] = field(default_factory=dict)
    bodies: dict[int, bytearray] = field(default_factory=dict)
    statuses: dict[int, int] = field(default_factory=dict)
    done: set[int] = field(default_factory=set)
    refused: set[int] = field(default_factory=set)
    worker: int | None = None
    server_spoke: bool = False
    goaway: int | None = None

    def open(self, conn: h2.connection.H2Connection, authority: bytes, scheme: bytes, rng: random.Random) -> None:
        """40 GETs and 4 small uploads, all at once."""
        for n in range(44):
            stream = conn.get_next_available_stream_id()
            fields = [(b":scheme", scheme), (b":authority", authority)]
            if n < 40:
                conn.send_headers(stream, [(b":method", b"GET"), (b":path", b"/hello"), *fields], end_stream=True)
                self.expected[stream] = b"hello"
            else:
                body = rng.randbytes(rng.choice([0, 100, 10_000]))
                length = (b"content-length", str(len(body)).encode())
                conn.send_headers(stream, [(b":method", b"POST"), (b":path", b"/upload"), *fields, length])
                conn.send_data(stream, body, end_stream=True)
                self.expected[stream] = f"{len(body)} {hashlib.sha256(body).hexdigest()}".encode()
            self.bodies[stream] = bytearray()

    def take(self, conn: h2.connection.H2Connection, event: h2.events.Event) -> None:
        """Record one event; streams a GOAWAY leaves unprocessed become `refused`."""
        if isinstance(event, h2.events.RemoteSettingsChanged):
            self.server_spoke = True
        elif isinstance(event, h2.events.ResponseReceived):
            fields = dict(event.headers)
            self.statuses[event.stream_id] = int(fields[b":status"])
            if fields.get(b"x-worker"):
                self.worker = int(fields[b"x-worker"])
        elif isinstance(event, h2.events.DataReceived):
            self.bodies[event.stream_id] += event.data
            conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            self.done.add(event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            raise WrongAnswerError(f"stream {event.stream_id} reset with {event.error_code}")
        elif isinstance(event, h2.events.ConnectionTerminated):
            last = event.last_stream_id or 0
            self.goaway = last
            self.refused |= {s for s in self.expected if s > last and s not in self.done}
            self.done |= self.refused

    def check(self) -> int:
        """How many streams got their right answer; raises on a wrong one."""
        right = 0
        for stream, expected in self.expected.items():
            if stream in self.refused:
                continue
            status, body = self.statuses.get(stream), bytes(self.bodies[stream])
            if status != 200 or body != expected:
                raise WrongAnswerError(f"stream {stream}: status {status} body {body[:60]!r}")
            right += 1
        return right


async def h2_burst(target: Target, tally: Tally, rng: random.Random) -> None:
    """One HTTP/2 connection, 40 concurrent GETs and 4 small uploads; streams past a GOAWAY are retried."""
    kind = f"{target.name}:h2"
    burst = H2Burst()
    try:
        ctx = ssl_context(target, ["h2"]) if target.tls is not None else None
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(HOST, target.port, ssl=ctx, server_hostname="localhost" if ctx else None),
            IO_TIMEOUT,
        )
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        conn.state_machine = _OpenAfterGoaway()
        conn.initiate_connection()
        burst.open(conn, f"{HOST}:{target.port}".encode(), b"https" if ctx else b"http", rng)
        writer.write(conn.data_to_send())
        await writer.drain()
        while len(burst.done) < len(burst.expected):
            data = await asyncio.wait_for(reader.read(65_536), IO_TIMEOUT)
            if not data:
                open_streams = len(burst.expected) - len(burst.done)
                raise WrongAnswerError(
                    f"connection closed with {open_streams} streams open (server SETTINGS seen: "
                    f"{burst.server_spoke}, GOAWAY last stream: {burst.goaway}, answered: {sorted(burst.done)[:5]})"
                )
            for event in conn.receive_data(data):
                burst.take(conn, event)
            writer.write(conn.data_to_send())
        tally.ok[kind] += burst.check()
        tally.retried[kind] += len(burst.refused)
        conn.close_connection()
        writer.write(conn.data_to_send())
        writer.close()
    except Exception as error:  # noqa: BLE001 - socket, TLS, timeout, a wrong answer or h2's protocol errors
        tally.fail(kind, burst.worker, error)


# MARK: - WebSocket


async def ws_echo(ws: ClientConnection, rng: random.Random) -> None:
    """One message, text or binary, of 1 byte to 70 KB, echoed unchanged."""
    message: str | bytes = rng.randbytes(rng.choice([1, 125, 126, 70_000]))
    if rng.random() < 0.5:
        message = message.hex()
    await ws.send(message)
    if await asyncio.wait_for(ws.recv(), IO_TIMEOUT) != message:
        raise WrongAnswerError("echo differs")


async def ws_broadcast(ws: ClientConnection) -> None:
    """One message in, 50 numbered messages back (other clients' broadcasts interleave)."""
    await ws.send("go")
    expected = 0
    while expected < 50:
        got = await asyncio.wait_for(ws.recv(), IO_TIMEOUT)
        if got == "peer":
            continue
        if got != str(expected):
            raise WrongAnswerError(f"broadcast message {got!r}, expected {expected}")
        expected += 1


async def websocket(target: Target, tally: Tally, rng: random.Random, path: str) -> None:
    """Ten echo round trips, or ten broadcast bursts of 50; 1001 from a draining worker is not a failure."""
    kind = f"{target.name}:ws-{path.rsplit('/', 1)[1]}"
    scheme = "wss" if target.tls else "ws"
    worker = None
    try:
        ctx = ssl_context(target, ["http/1.1"]) if target.tls else None
        async with ws_connect(f"{scheme}://{HOST}:{target.port}{path}", ssl=ctx, open_timeout=IO_TIMEOUT,
                              max_size=2**22, compression=None) as ws:  # fmt: skip
            if ws.response is not None:
                worker = int(ws.response.headers["x-worker"])
            for _ in range(10):
                await (ws_echo(ws, rng) if path == "/ws/echo" else ws_broadcast(ws))
                tally.ok[kind] += 1
    except websockets.ConnectionClosed as closed:
        if closed.rcvd is not None and closed.rcvd.code == 1001:
            tally.retried[kind] += 1
        else:
            tally.fail(kind, worker, closed)
    except (TimeoutError, WrongAnswerError, OSError, ssl.SSLError, websockets.InvalidHandshake) as error:
        tally.fail(kind, worker, error)


# MARK: - Abuse


async def vanish(target: Target, tally: Tally, rng: random.Random) -> None:
    """A client that goes away mid-request: half a head, half a body, or a reset after the head."""
    kind = f"{target.name}:vanish"
    with contextlib.suppress(OSError, asyncio.TimeoutError, ssl.SSLError):
        _, writer = await open_h1(target)
        how = rng.choice(["head", "body", "reset", "unread"])
        if how == "head":
            writer.write(b"GET /hello HTTP/1.1\r\nHost: so")
        elif how == "body":
            writer.write(b"POST /upload HTTP/1.1\r\nHost: soak\r\nContent-Length: 100000\r\n\r\n" + b"x" * 5000)
        elif how == "reset":
            writer.write(b"POST /upload HTTP/1.1\r\nHost: soak\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123")
        else:
            writer.write(b"GET /stream?chunks=64&size=65536 HTTP/1.1\r\nHost: soak\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(rng.random() * 0.05)
        sock = writer.get_extra_info("socket")
        if how == "reset" and sock is not None and target.tls is None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        writer.transport.abort()
    tally.deliberate[kind] += 1


async def malformed(target: Target, tally: Tally, rng: random.Random) -> None:
    """A malformed request gets 400, an oversized head 431; the connection is then closed."""
    kind = f"{target.name}:malformed"
    worker = None
    bad, expected = rng.choice([
        (b"GET /hello HTTP/1.1\r\nHost: soak\r\nNo colon here\r\n\r\n", 400),
        (b"GET /hello HTTP/1.1\r\nHost: soak\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
        (b"GET /hello HTTP/1.1\r\nHost: soak\r\nX: " + b"a" * 40_000 + b"\r\n\r\n", 431),
    ])  # fmt: skip
    try:
        reader, writer = await open_h1(target)
        writer.write(bad)
        await writer.drain()
        status, fields, _ = await read_response(reader, reused=False)
        worker = worker_of(fields)
        if status != expected:
            raise WrongAnswerError(f"status {status}, expected {expected}")
        writer.close()
        tally.deliberate[kind] += 1
    except (TimeoutError, WrongAnswerError, OSError, asyncio.IncompleteReadError, ssl.SSLError) as error:
        tally.fail(kind, worker, error)


# MARK: - The run


async def user(target: Target, tally: Tally, stop: asyncio.Event, seed: int, kind: str) -> None:
    """One client looping over one kind of traffic until `stop`."""
    rng = random.Random(seed)  # noqa: S311 - load shapes, not secrets
    while not stop.is_set():
        try:
            await one_round(target, tally, rng, kind)
        except Exception as error:  # noqa: BLE001 - a client bug must not cost the run its report
            tally.failures.append({"kind": f"{target.name}:{kind}", "worker": None, "at": time.monotonic(),
                                   "error": f"the soak client itself raised {error!r}"})  # fmt: skip
        await asyncio.sleep(rng.random() * 0.02)


async def one_round(target: Target, tally: Tally, rng: random.Random, kind: str) -> None:
    """One connection's worth of `kind` traffic."""
    if kind == "h1-keepalive":
        await h1_keepalive(target, tally)
    elif kind == "h1-oneshot":
        await h1_oneshot(target, tally)
    elif kind == "upload":
        await h1_upload(target, tally, rng)
    elif kind == "download":
        await h1_download(target, tally, rng)
    elif kind == "h2":
        await h2_burst(target, tally, rng)
    elif kind == "ws-echo":
        await websocket(target, tally, rng, "/ws/echo")
    elif kind == "ws-broadcast":
        await websocket(target, tally, rng, "/ws/broadcast")
    elif kind == "vanish":
        await vanish(target, tally, rng)
    elif kind == "malformed":
        await malformed(target, tally, rng)


KINDS = ["h1-keepalive", "h1-oneshot", "upload", "download", "h2", "ws-echo", "ws-broadcast", "vanish", "malformed"]


def rss_kib(pid: int) -> int | None:
    """Resident set of `pid` in KiB (None once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def fd_count(pid: int) -> int | None:
    """Open descriptors of `pid` (None once it is gone)."""
    try:
        return sum(1 for _ in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return None


def trend(points: list[tuple[float, int, int]], warmup: float) -> dict[str, Any]:
    """One process's samples: first and last, the most descriptors, and the slopes after `warmup` seconds."""
    first = points[0][0]
    settled = [(t - first, rss, fds) for t, rss, fds in points if t - first >= warmup]
    entry: dict[str, Any] = {"samples": len(points), "lifetime_s": round(points[-1][0] - first, 1),
                             "rss_kib_first": points[0][1], "rss_kib_last": points[-1][1],
                             "fds_max": max(p[2] for p in points)}  # fmt: skip
    if len(settled) >= 5:
        entry["rss_kib_after_warmup"] = settled[0][1]
        entry["rss_kib_per_min"] = round(slope_per_minute([(t, r) for t, r, _ in settled]), 1)
        entry["fds_per_min"] = round(slope_per_minute([(t, f) for t, _, f in settled]), 2)
        entry["settled_s"] = round(settled[-1][0] - settled[0][0], 1)
    return entry


def steady_warmup(duration: float) -> float:
    """Warm-up of the processes that live the whole run: a tenth of it, at least WARMUP_SECONDS, at most 5 min."""
    return min(300.0, max(WARMUP_SECONDS, duration / 10))


def too_much_growth(entry: dict[str, Any], args: argparse.Namespace) -> bool:
    """Whether a process that lived the whole run grew past the bound (judged only on runs long enough)."""
    if args.duration < BOUNDED_FROM_SECONDS or "rss_kib_per_min" not in entry:
        return False
    return entry["rss_kib_per_min"] > args.max_rss_growth or entry["fds_per_min"] > MAX_FD_GROWTH_PER_MIN


def slope_per_minute(points: list[tuple[float, int]]) -> float:
    """Least-squares slope of (seconds, value), per minute."""
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return 0.0 if den == 0 else 60 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den


async def monitor(
    targets: list[Target], stop: asyncio.Event, series: dict[int, list[tuple[float, int, int]]], owners: dict[int, str]
) -> None:
    """Sample every supervisor's and worker's RSS and descriptors every SAMPLE_SECONDS; note whose each is."""
    while not stop.is_set():
        now = time.monotonic()
        for target in targets:
            for pid in [target.process.pid, *target.workers()]:
                rss, fds = rss_kib(pid), fd_count(pid)
                if rss is not None and fds is not None:
                    series.setdefault(pid, []).append((now, rss, fds))
                    owners[pid] = target.name
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), SAMPLE_SECONDS)


async def signals(targets: list[Target], tally: Tally, stop: asyncio.Event, args: argparse.Namespace) -> Counter[str]:
    """SIGHUP the supervisors every --sighup-every s; SIGKILL one of their workers every --kill-every s."""
    sent: Counter[str] = Counter()
    begin = time.monotonic()
    next_hup, next_kill = begin + args.sighup_every, begin + args.kill_every
    rng = random.Random(7)  # noqa: S311 - which worker to kill, not a secret
    while not stop.is_set():
        now = time.monotonic()
        if now >= next_hup:
            for target in targets:
                target.process.send_signal(signal.SIGHUP)
            tally.hups.append(time.monotonic())
            sent["SIGHUP"] += 1
            next_hup += args.sighup_every
        if now >= next_kill:
            target = rng.choice(targets)
            workers = target.workers()
            if workers:
                victim = rng.choice(workers)
                tally.kills.append((time.monotonic(), victim))
                with contextlib.suppress(ProcessLookupError):
                    os.kill(victim, signal.SIGKILL)
                sent["SIGKILL"] += 1
            next_kill += args.kill_every
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.5)
    return sent


async def settled_worker_counts(targets: list[Target], timeout: float = 15.0) -> dict[str, int]:
    """Each server's worker count once the load is over, waiting up to `timeout` for WORKERS each.

    Replacements may still be starting or draining; more than WORKERS after that is a slot filled twice.
    """
    deadline = time.monotonic() + timeout
    while True:
        counts = {t.name: len(t.workers()) for t in targets}
        if all(count == WORKERS for count in counts.values()) or time.monotonic() > deadline:
            return counts
        await asyncio.sleep(0.5)


def start_server(binary: str, name: str, tls_files: tuple[Path, Path] | None, log: Path) -> Target:
    """Start one server with `--workers 2` and wait until both workers run and it accepts."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port = probe.getsockname()[1]
    argv = [binary, "--host", HOST, "--port", str(port), "--workers", str(WORKERS), "--app-dir", str(HERE),
            "--keep-alive", str(KEEP_ALIVE_MS), "--graceful-timeout", "5000", "--log-level", "warning",
            "--max-header-size", "32k"]  # fmt: skip
    if tls_files is not None:
        argv += ["--tls-cert", str(tls_files[0]), "--tls-key", str(tls_files[1])]
    argv.append("apps.soak_app:app")
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    ctx = None
    if tls_files is not None:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    target = Target(name, port, ctx, process)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{name} server exited with {process.returncode}: {log.read_text()[-2000:]}")
        if len(target.workers()) == WORKERS:
            with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=1):
                return target
        time.sleep(0.1)
    raise SystemExit(f"{name} server did not start: {log.read_text()[-2000:]}")


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed ECDSA P-256 certificate and key for the TLS server."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-keyout", str(key),
         "-out", str(cert), "-days", "2", "-nodes", "-subj", "/CN=localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


async def run(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    """The whole soak; returns the report."""
    binary = args.bin or shutil.which("peregrine")
    if binary is None:
        raise SystemExit("no peregrine binary: pass --bin or put it on PATH")
    plain = start_server(binary, "plain", None, scratch / "plain.log")
    tls = start_server(binary, "tls", make_certificate(scratch), scratch / "tls.log")
    signalled = [plain, tls]
    # The steady server gets the same traffic and no signal: its workers live the whole run, so their
    # memory and descriptors over time say whether anything accumulates (the others live a minute).
    steady = [start_server(binary, "steady", None, scratch / "steady.log")] if args.steady else []
    targets = signalled + steady
    fresh_fds = {t.name: max(fd_count(pid) or 0 for pid in t.workers()) for t in targets}
    tally = Tally()
    stop = asyncio.Event()
    series: dict[int, list[tuple[float, int, int]]] = {}
    owners: dict[int, str] = {}
    started = time.monotonic()
    try:
        tasks = [
            asyncio.create_task(user(t, tally, stop, hash((t.name, kind, n)) & 0xFFFF, kind))
            for t in targets
            for kind in KINDS
            if not (kind == "malformed" and t.tls is not None)
            for n in range(args.users)
        ]
        watcher = asyncio.create_task(monitor(targets, stop, series, owners))
        signaller = asyncio.create_task(signals(signalled, tally, stop, args))
        await asyncio.sleep(args.duration)
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), IO_TIMEOUT * 2)
        await watcher
        sent = await signaller
        elapsed = time.monotonic() - started
        # Idle keep-alive connections time out, replaced workers finish draining: then every worker
        # should hold what a fresh one holds.
        await asyncio.sleep(KEEP_ALIVE_MS / 1000 + 6)
        worker_counts = await settled_worker_counts(targets)
        quiet_fds = {t.name: {pid: fd_count(pid) for pid in t.workers()} for t in targets}
        alive = {t.name: t.process.poll() is None for t in targets}
    finally:
        for target in targets:
            target.process.send_signal(signal.SIGTERM)
        for target in targets:
            try:
                target.process.wait(20)
            except subprocess.TimeoutExpired:
                target.process.kill()
    supervisors = {t.process.pid: t.name for t in targets}
    steady_workers = [pid for pid, name in owners.items() if name == "steady" and pid not in supervisors]
    workers = {pid: trend(points, WARMUP_SECONDS) for pid, points in series.items() if pid not in supervisors}
    long_warmup = steady_warmup(args.duration)
    long_lived = {f"{supervisors[pid]} supervisor {pid}": trend(points, long_warmup)
                  for pid, points in series.items() if pid in supervisors}  # fmt: skip
    long_lived |= {f"steady worker {pid}": trend(series[pid], long_warmup) for pid in steady_workers}
    growth = {name: entry for name, entry in long_lived.items() if too_much_growth(entry, args)}
    latencies = sorted(tally.latencies)

    def percentile(q: float) -> float:
        return round(1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))], 2) if latencies else 0.0

    fd_leaks = {name: {pid: n for pid, n in fds.items() if n is None or n > fresh_fds[name] + 2}
                for name, fds in quiet_fds.items()}  # fmt: skip
    return {
        "duration_s": round(elapsed, 1),
        "users_per_kind": args.users,
        "signals": dict(sent),
        "ok": dict(tally.ok),
        "ok_total": sum(tally.ok.values()),
        "retried": dict(tally.retried),
        "killed_in_flight": dict(tally.killed),
        "deliberate": dict(tally.deliberate),
        "failures": [{**f, "at": round(f["at"] - started, 2)} for f in tally.failures],
        "kills_at": [(round(at - started, 2), pid) for at, pid in tally.kills],
        "sighups_at": [round(at - started, 2) for at in tally.hups],
        "latency_ms": {q: percentile(v) for q, v in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0))}
        | {"count": len(latencies)},
        "workers": workers,
        "long_lived": long_lived,
        "long_lived_warmup_s": long_warmup,
        "growth_bound": {
            "rss_kib_per_min": args.max_rss_growth,
            "fds_per_min": MAX_FD_GROWTH_PER_MIN,
            "applies_from_s": BOUNDED_FROM_SECONDS,
        },
        "growth": growth,
        "fresh_worker_fds": fresh_fds,
        "quiet_worker_fds": quiet_fds,
        "fd_leaks": {k: v for k, v in fd_leaks.items() if v},
        "worker_counts": worker_counts,
        "servers_alive": alive,
    }


def summary(report: dict[str, Any]) -> str:
    """The report for a person."""
    lines = [
        f"soak: {report['duration_s']} s, {report['ok_total']} requests/messages right, signals {report['signals']}",
        f"  failures: {len(report['failures'])}; in flight on killed workers: {report['killed_in_flight']}",
        f"  SIGKILL at (s, pid): {report['kills_at']}; SIGHUP at (s): {report['sighups_at']}",
        f"  retried after a graceful close: {report['retried']}",
        f"  deliberate abuse: {report['deliberate']}",
        f"  HTTP/1.1 keep-alive latency (ms): {report['latency_ms']}",
        f"  descriptors of fresh workers {report['fresh_worker_fds']}, after the load {report['quiet_worker_fds']}",
        f"  workers per server after the load (want {WORKERS}): {report['worker_counts']}",
    ]
    for pid, entry in report["workers"].items():
        if "rss_kib_per_min" in entry:
            lines.append(f"  worker {pid}: lived {entry['lifetime_s']} s, RSS {entry['rss_kib_first']}→"
                         f"{entry['rss_kib_last']} KiB ({entry['rss_kib_per_min']:+} KiB/min after warm-up), "
                         f"descriptors ≤ {entry['fds_max']} ({entry['fds_per_min']:+}/min)")  # fmt: skip
    for name, entry in report["long_lived"].items():
        if "rss_kib_per_min" in entry:
            lines.append(f"  {name}: RSS {entry['rss_kib_after_warmup']}→{entry['rss_kib_last']} KiB over the "
                         f"{entry['settled_s']} s after {report['long_lived_warmup_s']} s of warm-up "
                         f"({entry['rss_kib_per_min']:+} KiB/min), descriptors ≤ {entry['fds_max']} "
                         f"({entry['fds_per_min']:+}/min)")  # fmt: skip
    for name in report["growth"]:
        lines.append(f"  GREW past the bound ({report['growth_bound']}): {name}")
    for failure in report["failures"][:20]:
        lines.append(f"  FAILED {failure}")
    return "\n".join(lines)


def main() -> int:
    """Run, print the summary, exit 0 only if nothing failed and nothing leaked."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load")
    parser.add_argument("--bin", help="the peregrine executable (default: the one on PATH)")
    parser.add_argument("--users", type=int, default=1, help="concurrent clients per kind of traffic per server")
    parser.add_argument("--sighup-every", type=float, default=60.0)
    parser.add_argument("--kill-every", type=float, default=180.0)
    parser.add_argument("--output", type=Path, help="write the JSON report here")
    parser.add_argument(
        "--steady",
        action="store_true",
        help="also run a third server with the same traffic and no signals, whose workers live the whole run",
    )
    parser.add_argument(
        "--max-rss-growth",
        type=float,
        default=MAX_RSS_GROWTH_KIB_PER_MIN,
        help="KiB/min: bound on the RSS slope of supervisors and steady workers after warm-up, on runs of 10+ min",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="soak-") as scratch:
        report = asyncio.run(run(args, Path(scratch)))
        for name in ("plain", "tls"):
            log = (Path(scratch) / f"{name}.log").read_text(errors="replace")
            report[f"{name}_log_tail"] = log[-4000:]
    if args.output:
        args.output.write_text(json.dumps(report, indent=1, default=str))
    sys.stdout.write(summary(report) + "\n")
    good = (
        not report["failures"]
        and not report["fd_leaks"]
        and all(count == WORKERS for count in report["worker_counts"].values())
        and not report["growth"]
        and all(report["servers_alive"].values())
    )
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
