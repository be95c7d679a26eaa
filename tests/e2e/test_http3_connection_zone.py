"""Where an idle HTTP/3 connection's memory lives in the worker (TRANSPORT.md, "What an idle HTTP/3 connection
holds"; issue 15 point 7).

The worker's malloc (Sources/CAllocator) puts what a QUIC connection keeps for its life in the connection zone of
CTLS's handshake heap (one reserved 1 GiB range, whose pages count only once touched), and what its handshake,
its first request and its idle release free stays in glibc's heap, whose emptied pages go back after a burst
(malloc_trim). So after a burst of idle connections, glibc's heap has grown by little more than the worker's
shared tables, and the connections' state is in the reserved range. Were a connection's blocks left between
the burst's freed ones, glibc's heap would keep several KiB a connection.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server

pytest_plugins = ("tls_support", "h3load_tool")

CONNECTIONS = 300
#: The reserved range of the handshake heap: 16,384 chunks of 64 KiB (Sources/CTLS/handshake_heap.c).
ZONES_RANGE_KIB = 16384 * 64


def worker_of(server: Server) -> int:
    """The one worker process's pid."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise AssertionError("no worker process")


def resident_kib(pid: int) -> tuple[int, int]:
    """(glibc's [heap], the handshake heap's reserved range): resident KiB of each in `pid`."""
    heap = zones = 0
    kind = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5:
            kind = "heap" if fields[-1] == "[heap]" else "mapping"
        elif fields[0] == "Size:":
            size = int(fields[1])
            if kind == "mapping" and size == ZONES_RANGE_KIB:
                kind = "zones"
        elif fields[0] == "Rss:":
            if kind == "heap":
                heap += int(fields[1])
            elif kind == "zones":
                zones += int(fields[1])
    return heap, zones


def hold_idle(h3load: Path, port: int, count: int, hold: float) -> subprocess.Popen[str]:
    """h3load with `count` connections that each complete one request and idle; returns once all are ready."""
    process = subprocess.Popen(
        [str(h3load), "--idle", str(count), "--hold", str(hold), f"https://127.0.0.1:{port}/hello"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    line = process.stderr.readline()
    assert line.strip() == "ready", line + process.stderr.read()
    return process


def test_idle_connections_keep_their_state_in_the_connection_zone(
    h3load: Path, tls_server: Callable[..., Server]
) -> None:
    server = tls_server("h3load_apps:app", "--http3", "--workers", "1")
    worker = worker_of(server)
    # A first burst, closed: what the first handshakes fault in is nobody's per-connection cost.
    hold_idle(h3load, server.port, 50, 1).wait(timeout=30)
    time.sleep(3.0)
    heap_before, zones_before = resident_kib(worker)
    assert zones_before > 0, "the handshake heap's range is in the worker"
    load = hold_idle(h3load, server.port, CONNECTIONS, 10)
    try:
        # Past the 2 s after which quiet connections give back their spare memory, and the trim after it.
        time.sleep(4.0)
        heap_after, zones_after = resident_kib(worker)
    finally:
        load.wait(timeout=30)
    heap_per = (heap_after - heap_before) * 1024 / CONNECTIONS
    zones_per = (zones_after - zones_before) * 1024 / CONNECTIONS
    # The connections' state (about 7 KiB each, TLS's kept part with it) is in the zones...
    assert zones_per > 4096, (heap_per, zones_per)
    # ...and glibc's heap kept neither their blocks nor the holes the burst's freed ones left.
    assert heap_per < 1024, (heap_per, zones_per)
    server.check_alive()
