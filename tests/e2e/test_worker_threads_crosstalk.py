"""Worker threads of one process never mix up requests (issue #16 point 6: the cross-talk stress test).

REQUESTS requests, IN_FLIGHT at a time, each carrying its own random nonce
in its path, its query string, an `x-nonce` header and its body (random
length, up to several chunks each way; some sent chunked); the application
(tests/apps/crosstalk_apps.py) echoes every one of them back in response
headers and a response body streamed in several chunks. Every response must
match its own request exactly, and both worker threads must have served.

The server runs two worker threads: `--free-threaded --workers 2` on a
free-threaded CPython (the threads in parallel), else the internal
`PEREGRINE_WORKER_CONTEXTS=2` (the same threads taking turns on the GIL).
Each of WSGI and ASGI is driven over HTTP/1.1 keep-alive connections, over
a new HTTP/1.1 connection per request, and over a few h2c connections with
many streams in flight on each (one connection is served by one thread, so
the streams of a connection interleave within a thread, the connections
across both).
"""

from __future__ import annotations

import http.client
import json
import secrets
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from h2client import H2Client

from installed import server_python_facts

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from conftest import Server

pytestmark = pytest.mark.timeout(180)

REQUESTS = 400
IN_FLIGHT = 32
#: h2c: connections, each with IN_FLIGHT // H2_CONNECTIONS streams in flight.
H2_CONNECTIONS = 4
#: Request bodies are 0 to MAX_BODY bytes (the application answers in 4 KiB chunks).
MAX_BODY = 40_000
TARGETS = ["crosstalk_apps:wsgi", "crosstalk_apps:asgi"]
#: Further rounds of new connections, at most, while only one thread has served.
EXTRA_ROUNDS = 8


@dataclass(frozen=True)
class Probe:
    """One request: its nonce and its body (the nonce repeated, so no two bodies are alike)."""

    nonce: str
    body: bytes
    chunked: bool

    @property
    def path(self) -> str:
        return f"/echo/{self.nonce}"

    @property
    def target(self) -> str:
        return f"{self.path}?nonce={self.nonce}"

    @property
    def expected_body(self) -> bytes:
        nonce = self.nonce.encode()
        return b"nonce=" + nonce + b";query=" + nonce + b";path=" + self.path.encode() + b";" + self.body

    def pieces(self) -> Iterator[bytes]:
        """The body in uneven pieces, for a chunked request."""
        start = 0
        step = 1
        while start < len(self.body):
            yield self.body[start : start + step * 997]
            start += step * 997
            step += 1


@dataclass(frozen=True)
class Answer:
    """What came back for one request."""

    status: int
    headers: dict[str, str]
    body: bytes


def make_probes(count: int) -> list[Probe]:
    probes = []
    for index in range(count):
        nonce = secrets.token_hex(16)
        size = secrets.randbelow(MAX_BODY)
        body = (f"{nonce}.{index}|".encode() * (size // 36 + 1))[:size]
        probes.append(Probe(nonce=nonce, body=body, chunked=index % 4 == 0 and size > 0))
    return probes


def mismatch(probe: Probe, answer: Answer, gil: str) -> str:
    """How `answer` differs from what `probe` should get back ("" when it matches exactly)."""
    problems = []
    if answer.status != 200:
        problems.append(f"status {answer.status}")
    for name, expected in (("x-nonce", probe.nonce), ("x-query", probe.nonce), ("x-path", probe.path)):
        if answer.headers.get(name) != expected:
            problems.append(f"{name} {answer.headers.get(name)!r}")
    if answer.headers.get("x-gil") != gil:
        problems.append(f"x-gil {answer.headers.get('x-gil')!r}")
    if answer.body != probe.expected_body:
        problems.append(f"body of {len(answer.body)} bytes starting {answer.body[:80]!r}")
    return f"{probe.nonce}: " + ", ".join(problems) if problems else ""


def in_order(probes: list[Probe], shares: list[list[Probe]], answered: list[list[Answer]]) -> list[Answer]:
    """The answers to `shares` (each answered in order) as a list in the order of `probes`."""
    by_probe = {}
    for share, answers in zip(shares, answered, strict=True):
        by_probe.update(zip(share, answers, strict=True))
    return [by_probe[probe] for probe in probes]


# --- the three ways of sending --------------------------------------------------------------------


def http1_request(connection: http.client.HTTPConnection, probe: Probe) -> Answer:
    headers = {"x-nonce": probe.nonce, "content-type": "application/octet-stream"}
    if probe.chunked:
        # No length given: http.client sends the pieces as chunks (Transfer-Encoding: chunked).
        connection.request("POST", probe.target, body=probe.pieces(), headers=headers)
    else:
        connection.request("POST", probe.target, body=probe.body, headers=headers)
    response = connection.getresponse()
    body = response.read()
    return Answer(response.status, {name.lower(): value for name, value in response.getheaders()}, body)


def http1_keepalive(server: Server, probes: list[Probe]) -> list[Answer]:
    """IN_FLIGHT keep-alive connections at once, each sending its share of `probes` one after another."""

    def client(share: list[Probe]) -> list[Answer]:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        try:
            return [http1_request(connection, probe) for probe in share]
        finally:
            connection.close()

    shares = [probes[index::IN_FLIGHT] for index in range(IN_FLIGHT)]
    with ThreadPoolExecutor(IN_FLIGHT) as pool:
        answered = list(pool.map(client, shares))
    return in_order(probes, shares, answered)


def http1_new_connections(server: Server, probes: list[Probe]) -> list[Answer]:
    """Every probe on a connection of its own, IN_FLIGHT at a time."""

    def client(probe: Probe) -> Answer:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        try:
            return http1_request(connection, probe)
        finally:
            connection.close()

    with ThreadPoolExecutor(IN_FLIGHT) as pool:
        return list(pool.map(client, probes))


def http2_streams(server: Server, probes: list[Probe]) -> list[Answer]:
    """H2_CONNECTIONS h2c connections at once, each with its share of `probes` in flight in batches."""
    per_connection = IN_FLIGHT // H2_CONNECTIONS

    def client(share: list[Probe]) -> list[Answer]:
        answers = []
        with H2Client(server.port, timeout=30) as connection:
            for start in range(0, len(share), per_connection):
                batch = share[start : start + per_connection]
                sids = [
                    connection.send(
                        "POST",
                        probe.target,
                        body=probe.body,
                        headers=[("x-nonce", probe.nonce), ("content-type", "application/octet-stream")],
                    )
                    for probe in batch
                ]
                for response in connection.collect(*sids, timeout=60):
                    headers = {name.decode(): value.decode() for name, value in response.headers}
                    answers.append(Answer(int(headers[":status"]), headers, bytes(response.body)))
        return answers

    shares = [probes[index::H2_CONNECTIONS] for index in range(H2_CONNECTIONS)]
    with ThreadPoolExecutor(H2_CONNECTIONS) as pool:
        answered = list(pool.map(client, shares))
    return in_order(probes, shares, answered)


TRANSPORTS: dict[str, Callable[[Server, list[Probe]], list[Answer]]] = {
    "http1-keepalive": http1_keepalive,
    "http1-new-connections": http1_new_connections,
    "http2": http2_streams,
}


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
@pytest.mark.parametrize("target", TARGETS)
def test_every_response_of_two_worker_threads_matches_its_own_request(
    two_worker_threads: Callable[..., Server], target: str, transport: str
) -> None:
    server = two_worker_threads(target)
    gil = "0" if server_python_facts()["free_threaded"] else "1"
    threads: set[str | None] = set()
    # Which thread accepts a connection is the kernel's choice (the threads share one listener), and a
    # thread may take several at once: a few h2c connections can all land on one. Rounds of new
    # connections, every one checked, go on until both threads have served.
    for _ in range(EXTRA_ROUNDS + 1):
        probes = make_probes(REQUESTS if not threads else REQUESTS // 4)
        answers = TRANSPORTS[transport](server, probes)
        assert len(answers) == len(probes)
        problems = (mismatch(probe, answer, gil) for probe, answer in zip(probes, answers, strict=True))
        mismatches = [problem for problem in problems if problem]
        assert mismatches == [], f"{len(mismatches)} of {len(probes)} responses did not match their request"
        threads |= {answer.headers.get("x-thread") for answer in answers}
        if len(threads) == 2:
            break
    assert len(threads) == 2, f"requests were served by {len(threads)} thread(s), not by both worker threads"


def test_objects_of_an_ended_request_raise_when_another_worker_thread_calls_them(
    two_worker_threads: Callable[..., Server],
) -> None:
    """wsgi.input, start_response and write of an ended request, kept by the application and called from a
    request the other worker thread serves, raise (their request has ended) and touch nothing, while the
    thread they belong to serves other requests meanwhile (its gateway's token changing under the check)."""
    server = two_worker_threads("crosstalk_apps:wsgi")
    stash = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    stash.request("POST", "/stash", body=b"0123456789" * 10)
    response = stash.getresponse()
    assert response.read() == b"stashed"
    owner = response.getheader("x-thread")
    stash.close()

    def use_stash(_: int) -> tuple[str | None, dict[str, str]]:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        try:
            connection.request("POST", "/use-stash", body=b"SECRET-OF-A-LATER-REQUEST")
            answer = connection.getresponse()
            return answer.getheader("x-thread"), json.loads(answer.read())
        finally:
            connection.close()

    probes = make_probes(REQUESTS)
    with ThreadPoolExecutor(IN_FLIGHT) as pool:
        load = pool.submit(http1_keepalive, server, probes)
        uses = list(pool.map(use_stash, range(64)))
        answers = load.result()
    assert {thread for thread, _ in uses} - {owner}, "no later request reached the other worker thread"
    for thread, outcomes in uses:
        assert all(outcome.startswith("raised ") for outcome in outcomes.values()), (thread == owner, outcomes)
        assert "SECRET" not in json.dumps(outcomes)
    gil = "0" if server_python_facts()["free_threaded"] else "1"
    problems = (mismatch(probe, answer, gil) for probe, answer in zip(probes, answers, strict=True))
    assert [problem for problem in problems if problem] == []
