"""100,000 requests leave the worker's memory flat: WSGI and ASGI, over HTTP/1.1 and h2c.

h2load (nghttp2's load generator, an independent client; scripts/test.sh
installs nghttp2-client) sends the load: a
warm-up first (so pools, caches and the allocator's arenas reach their
working size), then 100,000 requests, half GETs and half POSTs with a 1 KiB
body. The application reports the worker's resident set and the number of
live Python objects after a full collection (`/stats`, tests/apps/leak_apps.py)
before and after the 100,000. A request path that leaked one small Python
object or ~40 bytes per request would exceed the bounds below by far.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server

REQUESTS = 100_000
WARMUP = 20_000
#: Growth allowed across the 100,000 requests after the warm-up.
RSS_BOUND_KIB = 4096
OBJECTS_BOUND = 200

SUCCEEDED = re.compile(r"requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded")


def stats(server: Server) -> dict[str, int]:
    """The worker's RSS (KiB) and live object count, fetched over HTTP/1.1."""
    with urllib.request.urlopen(server.base_url + "/stats", timeout=10) as response:
        result: dict[str, int] = json.loads(response.read())
    return result


def load(server: Server, count: int, protocol: str, body: Path) -> None:
    """`count` requests with h2load, half GET and half POST with `body`; all must succeed."""
    half = count // 2
    common = ["h2load", "-c", "8", "-t", "1"]
    common += ["--h1", "-m", "1"] if protocol == "http/1.1" else ["-m", "10"]
    for extra, n in (([], half), (["-d", str(body)], count - half)):
        done = subprocess.run(
            [*common, *extra, "-n", str(n), server.base_url + "/hello?x=1"],
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        match = SUCCEEDED.search(done.stdout)
        assert match is not None, done.stdout + done.stderr
        assert int(match[1]) == n, done.stdout
        assert int(match[2]) == n, done.stdout


@pytest.mark.timeout(600)
@pytest.mark.parametrize("protocol", ["http/1.1", "h2c"])
@pytest.mark.parametrize("target", ["leak_apps:wsgi_app", "leak_apps:asgi_app"])
def test_memory_is_flat_over_100k_requests(
    start_server: Callable[..., Server], tmp_path: Path, target: str, protocol: str
) -> None:
    body = tmp_path / "body"
    body.write_bytes(bytes(range(256)) * 4)
    server = start_server(target, *(["--no-lifespan"] if "asgi" in target else []))
    load(server, WARMUP, protocol, body)
    before = stats(server)
    load(server, REQUESTS, protocol, body)
    after = stats(server)
    growth_kib = after["rss_kib"] - before["rss_kib"]
    growth_objects = after["objects"] - before["objects"]
    # The figures, for `pytest -s` (issue notes quote them).
    sys.stderr.write(
        f"\n{target} {protocol}: RSS {before['rss_kib']} -> {after['rss_kib']} KiB ({growth_kib:+d}), "
        f"objects {before['objects']} -> {after['objects']} ({growth_objects:+d})\n"
    )
    assert growth_kib <= RSS_BOUND_KIB, (before, after)
    assert growth_objects <= OBJECTS_BOUND, (before, after)
