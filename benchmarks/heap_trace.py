"""Where an idle HTTP/3 connection's memory goes in malloc's heap, by allocation site.

Usage: python3 benchmarks/heap_trace.py --peregrine PATH [--connections 1000] [--interface asgi|wsgi]
                                        [--python PATH] [--keep DIR]

RSS per connection (memory.py --h3) says how much; this says what. The worker runs with an LD_PRELOAD tracer
(benchmarks/heap_trace/tracer.c, compiled with gcc into a scratch directory) that writes every malloc, calloc,
realloc, memalign and free with six frames of its call stack. After a warm-up burst of 100 connections,
`h3load --idle N` opens N connections that each complete one request and idle; 5 s after h3load's `ready` (past
the 2 s after which the server gives back an idle connection's spare memory) gdb calls the tracer's
`heap_trace_flush`, and the worker's memory maps are copied. The trace up to that moment is replayed:

- live: the blocks still allocated in the `[heap]` mapping, by allocation site (their chunk sizes, glibc's
  16-byte rounding and 8-byte header), per connection; sites with fewer than 0.9 blocks a connection are left
  out, as they are the process's own (start-up, caches), not the connections';
- holes: blocks freed in pages that still hold a live block (so they stay resident), by the site that had
  allocated them, per connection;
- the peak: the most bytes live in the `[heap]` mapping at any moment of the trace, against the end. glibc's
  heap does not shrink below its highest block still in use, so the heap stays the size the burst made it:
  what a connection costs in RSS is set by the peak (every handshake under way at once holding its transient
  blocks), not by what is live at the end. The blocks live at the peak and not at the end are shown by site.

Since session 19 the worker's own malloc (Sources/CAllocator) puts what a QUIC connection keeps, and what its
handshake frees, in zones of CTLS's handshake heap, outside `[heap]` and outside the trace (it passes everything
else on to the next allocator, this tracer, with a tail call): the trace then shows what is left in glibc's heap
(the endpoint's tables, the process's own, anything a zone hint missed), and memory.py and the zones' RSS in
/proc/PID/smaps (the 1 GiB anonymous range) say the rest.

Frames are named with addr2line and `swift demangle`; a site is shown by its first frames outside the allocators.
The tracer makes the worker slow (a backtrace per allocation), so its RSS is not a figure to quote: memory.py's
is. Needs gcc, gdb, addr2line, and h3load's libraries (as memory.py --h3).
"""

from __future__ import annotations

import argparse
import bisect
import collections
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness
from instructions import free_port, worker_pid

BENCHMARKS = Path(__file__).resolve().parent
TRACER = BENCHMARKS / "heap_trace" / "tracer.c"
HOST = "127.0.0.1"
#: op, pointer, size, old pointer (realloc), six return addresses.
RECORD = struct.Struct("<10Q")
MALLOC, FREE, REALLOC, MARK = 1, 2, 3, 9
WARM_UP = 100
SETTLE_SECONDS = 5.0
PAGE_SHIFT = 12
#: Frames that say nothing of who allocated: the allocators and the runtime's.
GENERIC = (
    "swift_", "CRYPTO_", "X509_", "EVP_", "_ContiguousArrayBuffer", "specialized _", "specialized static",
    "specialized Array", "static _Dictionary", "static Array", "specialized Dictionary", "Array.", "_Native",
    "specialized ContiguousArray", "closure #1 in AEAD", "closure #1 in Header", "ctls_quic_aead_new",
    "ctls_quic_hp_new", "posix_memalign", "_PyObject_Malloc", "?",
)  # fmt: skip

Stack = tuple[int, ...]


def chunk_size(requested: int) -> int:
    """The size of glibc's chunk for a request: its header and 16-byte rounding."""
    return max(32, (requested + 8 + 15) & ~15)


def heap_range(smaps: Path) -> tuple[int, int]:
    """Start and end of the `[heap]` mapping."""
    for line in smaps.read_text().splitlines():
        if line.rstrip().endswith("[heap]"):
            start, end = line.split()[0].split("-")
            return int(start, 16), int(end, 16)
    raise SystemExit("no [heap] mapping in the worker's smaps")


def replay(trace: Path, heap: tuple[int, int]) -> tuple[dict[int, tuple[int, Stack]], dict[int, tuple[int, Stack]]]:
    """The blocks live at the trace's mark, and the heap blocks freed since and not reused, by address."""
    low, high = heap
    live: dict[int, tuple[int, Stack]] = {}
    freed: dict[int, tuple[int, Stack]] = {}
    by_page: dict[int, set[int]] = collections.defaultdict(set)

    def forget_overlapping(start: int, end: int) -> None:
        for page in range(start >> PAGE_SHIFT, ((end - 1) >> PAGE_SHIFT) + 1):
            for address in list(by_page.get(page, ())):
                entry = freed.get(address)
                if entry is None or (address - 16 < end and address - 16 + entry[0] > start):
                    by_page[page].discard(address)
                    freed.pop(address, None)

    def allocated(address: int, size: int, stack: Stack) -> None:
        live[address] = (size, stack)
        if low <= address < high:
            forget_overlapping(address - 16, address - 16 + chunk_size(size))

    def released(address: int) -> None:
        entry = live.pop(address, None)
        if entry is None or not low <= address < high:
            return
        size = chunk_size(entry[0])
        freed[address] = (size, entry[1])
        for page in range((address - 16) >> PAGE_SHIFT, ((address - 16 + size - 1) >> PAGE_SHIFT) + 1):
            by_page[page].add(address)

    with trace.open("rb") as file:
        for op, address, size, old, *frames in RECORD.iter_unpack(file.read()):
            if op == MARK:
                break
            stack = tuple(frames)
            if op == MALLOC:
                allocated(address, size, stack)
            elif op == FREE:
                released(address)
            elif op == REALLOC:
                if old:
                    released(old)
                allocated(address, size, stack)
    return live, freed


def peak(trace: Path, heap: tuple[int, int]) -> tuple[int, int, dict[int, tuple[int, Stack]]]:
    """The peak of the heap's live chunk bytes before the mark, the bytes live at the mark, the peak's blocks."""
    low, high = heap
    records = list(RECORD.iter_unpack(trace.read_bytes()))
    sizes: dict[int, int] = {}
    total = most = at = 0
    for i, (op, address, size, old, *_) in enumerate(records):
        if op == MARK:
            break
        if op == REALLOC and old in sizes:
            total -= sizes.pop(old)
        if op in (MALLOC, REALLOC) and low <= address < high:
            sizes[address] = chunk_size(size)
            total += sizes[address]
        elif op == FREE and address in sizes:
            total -= sizes.pop(address)
        if total > most:
            most, at = total, i
    blocks: dict[int, tuple[int, Stack]] = {}
    for op, address, size, old, *frames in records[: at + 1]:
        if op == REALLOC and old:
            blocks.pop(old, None)
        if op in (MALLOC, REALLOC) and low <= address < high:
            blocks[address] = (size, tuple(frames))
        elif op == FREE:
            blocks.pop(address, None)
    return most, total, blocks


def page_bytes(start: int, end: int, pages: collections.Counter[int]) -> int:
    """Bytes of [start, end) in pages that `pages` counts."""
    total = 0
    for page in range(start >> PAGE_SHIFT, ((end - 1) >> PAGE_SHIFT) + 1):
        if page in pages:
            total += min(end, (page + 1) << PAGE_SHIFT) - max(start, page << PAGE_SHIFT)
    return total


def tally(
    live: dict[int, tuple[int, Stack]], freed: dict[int, tuple[int, Stack]], heap: tuple[int, int]
) -> tuple[dict[Stack, list[int]], dict[Stack, list[int]], int, int]:
    """(bytes, blocks) live and in holes by stack; pages holding a live block; live chunk bytes."""
    low, high = heap
    pages: collections.Counter[int] = collections.Counter()
    in_heap = {a: e for a, e in live.items() if low <= a < high}
    for address, (size, _) in in_heap.items():
        start, end = address - 16, address - 16 + chunk_size(size)
        for page in range(start >> PAGE_SHIFT, ((end - 1) >> PAGE_SHIFT) + 1):
            pages[page] += min(end, (page + 1) << PAGE_SHIFT) - max(start, page << PAGE_SHIFT)
    live_sites: dict[Stack, list[int]] = collections.defaultdict(lambda: [0, 0])
    for size, stack in in_heap.values():
        live_sites[stack][0] += chunk_size(size)
        live_sites[stack][1] += 1
    hole_sites: dict[Stack, list[int]] = collections.defaultdict(lambda: [0, 0])
    for address, (size, stack) in freed.items():
        held = page_bytes(address - 16, address - 16 + size, pages)
        if held:
            hole_sites[stack][0] += held
            hole_sites[stack][1] += 1
    return live_sites, hole_sites, len(pages), sum(pages.values())


class Symbols:
    """Names of return addresses, from the worker's maps (addr2line, then `swift demangle` if present)."""

    def __init__(self, maps: Path, addresses: set[int]) -> None:
        regions: list[tuple[int, int, int, str]] = []
        for line in maps.read_text().splitlines():
            fields = line.split()
            if len(fields) >= 6 and fields[5].startswith("/"):
                start, end = (int(x, 16) for x in fields[0].split("-"))
                regions.append((start, end, int(fields[2], 16), fields[5]))
        regions.sort()
        starts = [r[0] for r in regions]
        wanted: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
        for address in addresses:
            i = bisect.bisect_right(starts, address) - 1
            if i >= 0 and regions[i][0] <= address < regions[i][1]:
                start, _, offset, path = regions[i]
                wanted[path].append((address, address - start + offset - 1))
        mangled: dict[int, str] = {}
        for path, items in wanted.items():
            lines = "\n".join(hex(offset) for _, offset in items)
            addr2line = ["addr2line", "-f", "-e", path]
            found = subprocess.run(addr2line, input=lines, capture_output=True, text=True, check=False)
            names = found.stdout.splitlines()[0::2]
            for (address, _), name in zip(items, names, strict=False):
                mangled[address] = name
        plain = dict(zip(sorted(set(mangled.values())), sorted(set(mangled.values())), strict=True))
        if shutil.which("swift") and plain:
            keys = list(plain)
            demangled = subprocess.run(
                ["swift", "demangle", "--simplified", "--compact"],
                input="\n".join(keys),
                capture_output=True,
                text=True,
                check=False,
            ).stdout.splitlines()
            if len(demangled) == len(keys):
                plain = dict(zip(keys, demangled, strict=True))
        self.names = {address: plain.get(name, name) for address, name in mangled.items()}

    def site(self, stack: Stack) -> str:
        """The first two frames of `stack` that are not an allocator's."""
        shown = [
            self.names.get(address, "?").split("(")[0][:60]
            for address in stack
            if address and not self.names.get(address, "?").startswith(GENERIC)
        ]
        return " <- ".join(shown[:2]) or "(allocator frames only)"


def report(title: str, sites: dict[Stack, list[int]], symbols: Symbols, connections: int, least: float) -> str:
    """Sites with at least `least` blocks a connection, merged by name, largest first."""
    merged: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
    for stack, (size, blocks) in sites.items():
        if blocks >= least * connections:
            entry = merged[symbols.site(stack)]
            entry[0] += size / connections
            entry[1] += blocks / connections
    lines = [f"{title}: {sum(e[0] for e in merged.values()):,.0f} B per connection"]
    lines += [
        f"  {size:7,.0f} B  {blocks:5.2f} blocks  {name}"
        for name, (size, blocks) in sorted(merged.items(), key=lambda kv: -kv[1][0])
    ]
    return "\n".join(lines)


def capture(args: argparse.Namespace, scratch: Path) -> tuple[Path, Path, Path]:
    """Runs the traced worker under the idle load; the trace, smaps and maps at the mark."""
    tracer = scratch / "tracer.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(tracer), str(TRACER)], check=True)
    tls = harness.make_certificate(scratch)
    h3load = harness.build_h3load(scratch)
    port = free_port()
    target = "apps.asgi_apps:hello" if args.interface == "asgi" else "apps.wsgi_apps:hello"
    command = [
        str(Path(args.peregrine).resolve()), "--host", HOST, "--port", str(port), "--log-level", "warning",
        "--protocol", args.interface, "--python-path", str(BENCHMARKS), "--tls-cert", str(tls.cert),
        "--tls-key", str(tls.key), "--http3", target,
    ]  # fmt: skip
    env = dict(os.environ, LD_PRELOAD=str(tracer), HEAP_TRACE_DIR=str(scratch))
    if args.python is not None:
        env["PEREGRINE_PYTHON_EXECUTABLE"] = str(args.python)
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    idle: subprocess.Popen[bytes] | None = None
    try:
        worker = worker_pid(server.pid)
        url = f"https://{HOST}:{port}/"
        deadline = time.monotonic() + 60
        while subprocess.run(["curl", "-skf", "-m", "5", "-o", "/dev/null", url], check=False).returncode != 0:
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("the traced server did not answer")
            time.sleep(0.5)
        subprocess.run([str(h3load), "--idle", str(WARM_UP), "--hold", "1", url], capture_output=True, check=True)
        time.sleep(SETTLE_SECONDS)
        hold = SETTLE_SECONDS + 60
        idle = subprocess.Popen(
            [str(h3load), "--idle", str(args.connections), "--hold", f"{hold:g}", url],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert idle.stderr is not None  # noqa: S101 - started with stderr=PIPE
        if b"ready" not in idle.stderr.readline():
            raise SystemExit(f"h3load --idle {args.connections} did not get ready")
        time.sleep(SETTLE_SECONDS)
        gdb = ["gdb", "-p", str(worker), "-batch", "-ex", "call (void)heap_trace_flush()"]
        subprocess.run(gdb, capture_output=True, check=True)
        smaps, maps = scratch / "smaps", scratch / "maps"
        shutil.copy(f"/proc/{worker}/smaps", smaps)
        shutil.copy(f"/proc/{worker}/maps", maps)
        return scratch / f"trace.{worker}", smaps, maps
    finally:
        if idle is not None:
            idle.kill()
            idle.wait()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def main() -> None:
    """Capture, replay, print."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peregrine", required=True, help="the supervisor executable (peregrine-worker beside it)")
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--interface", choices=["asgi", "wsgi"], default="asgi")
    parser.add_argument("--python", type=Path, help="interpreter whose packages the worker imports")
    parser.add_argument("--keep", type=Path, help="keep the trace, smaps and maps in this directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        scratch = Path(directory)
        trace, smaps, maps = capture(args, scratch)
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            for path in (trace, smaps, maps):
                shutil.copy(path, args.keep / path.name)
        heap = heap_range(smaps)
        live, freed = replay(trace, heap)
        live_sites, hole_sites, pages, live_bytes = tally(live, freed, heap)
        most, final, at_peak = peak(trace, heap)
        transient: dict[Stack, list[int]] = collections.defaultdict(lambda: [0, 0])
        for address, (size, stack) in at_peak.items():
            if live.get(address) != (size, stack):
                transient[stack][0] += chunk_size(size)
                transient[stack][1] += 1
        addresses = {a for sites in (live_sites, hole_sites, transient) for stack in sites for a in stack if a}
        symbols = Symbols(maps, addresses)
    n = args.connections
    sys.stdout.write(
        f"[heap] {(heap[1] - heap[0]) >> 10} KiB; pages holding a live block {pages * 4} KiB, "
        f"live chunks {live_bytes >> 10} KiB, the rest of those pages {(pages * 4096 - live_bytes) >> 10} KiB "
        f"({args.connections} idle connections and the process's own)\n"
    )
    sys.stdout.write(report("live, sites with 0.9 blocks a connection or more", live_sites, symbols, n, 0.9) + "\n")
    sys.stdout.write(report("holes, sites with 0.3 blocks a connection or more", hole_sites, symbols, n, 0.3) + "\n")
    sys.stdout.write(
        f"peak: {most >> 10} KiB live in the heap at once, {final >> 10} KiB at the end: "
        f"{(most - final) / n:,.0f} B a connection more\n"
    )
    title = "live at the peak and not at the end, sites with 0.3 blocks a connection or more"
    sys.stdout.write(report(title, transient, symbols, n, 0.3) + "\n")


if __name__ == "__main__":
    main()
