"""Raw ASGI 3 applications the ASGI end-to-end suite serves: `peregrine asgi_raw:app`.

`app` speaks lifespan (it fills the lifespan `state`) and routes HTTP requests
on the first path segment to one coroutine per behaviour under test. Tests
that need to watch an application while it runs use two in-memory helpers,
reachable over other connections of the same (single-process) server:

- `/records?id=ID` answers the JSON list of what request ID recorded so far
  (sends completed, exceptions caught, messages received);
- `/release?id=ID` sets the `Release` that request ID waits on, so a test
  decides exactly when an application goes on (no sleeps).

Both work across the worker threads of one process (`--free-threaded
--workers N`, or PEREGRINE_WORKER_CONTEXTS): the application is imported
once, so the helpers see every thread's requests; a `Release` wakes its
waiters on their own event loops, whichever thread sets it.

Lifespan events and request completions that must outlive the process (the
SIGTERM test) are appended to $PEREGRINE_TEST_STATE/events.log.

The other callables exercise lifespan corner cases: `failing_startup`
(lifespan.startup.failed), `raising_startup` (raises after receiving
lifespan.startup), `no_lifespan` (raises at once on the lifespan scope) and
`strict_http` (records any lifespan scope it is ever given).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from receive_race import cancel_once_ready
from thread_kind import thread_kind

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    Scope = dict[str, Any]
    Message = dict[str, Any]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]
    Handler = Callable[[Scope, Receive, Send], Awaitable[None]]

STATE = Path(os.environ.get("PEREGRINE_TEST_STATE", "."))
EVENTS = STATE / "events.log"
RELEASE_TIMEOUT = 50.0

ROUTES: dict[str, Handler] = {}
RECORDS: dict[str, list[Any]] = {}
RELEASES: dict[str, Release] = {}
RELEASES_LOCK = threading.Lock()
#: receive/send of an earlier request, kept to be misused by a later one.
LEAKED: dict[str, Any] = {}


def log_event(event: str) -> None:
    """Append one line to the events file (O_APPEND: lines never interleave)."""
    with EVENTS.open("a", encoding="utf-8") as events:
        events.write(event + "\n")


def record(ident: str, item: object) -> None:
    """Remember `item` for /records?id=IDENT."""
    RECORDS.setdefault(ident, []).append(item)


class Release:
    """A one-shot flag that coroutines on any thread's event loop can await.

    An asyncio.Event belongs to one loop: set from a request served by
    another worker thread, it would not wake the waiter's loop. A waiter here
    parks a future of its own loop, and `set` resolves each through
    `call_soon_threadsafe`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = False
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def set(self) -> None:
        """Wake every waiter, now and later."""
        with self._lock:
            self._set = True
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            loop.call_soon_threadsafe(_resolve, future)

    async def wait(self) -> None:
        """Return once `set` was called (at once if it was already)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._set:
                return
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, future))
        await future


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def release_event(ident: str) -> Release:
    """The release /release?id=IDENT sets."""
    with RELEASES_LOCK:
        event = RELEASES.get(ident)
        if event is None:
            event = RELEASES[ident] = Release()
        return event


async def wait_released(ident: str) -> None:
    """Wait until a test calls /release?id=IDENT."""
    await asyncio.wait_for(release_event(ident).wait(), RELEASE_TIMEOUT)


def route(name: str) -> Callable[[Handler], Handler]:
    """Register a handler for /NAME and /NAME/..."""

    def register(handler: Handler) -> Handler:
        ROUTES[name] = handler
        return handler

    return register


def query(scope: Scope) -> dict[str, str]:
    """The query string as a dict of last values."""
    raw = scope["query_string"].decode("latin-1")
    return {key: values[-1] for key, values in parse_qs(raw, keep_blank_values=True).items()}


def exception_record(exc: BaseException) -> dict[str, Any]:
    """What a test needs to know about an exception the application caught."""
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "oserror": isinstance(exc, OSError),
        "mro": [cls.__name__ for cls in type(exc).__mro__],
    }


async def respond(send: Send, body: bytes, status: int = 200, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """A whole response with Content-Length."""
    fields = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": fields + (headers or [])})
    await send({"type": "http.response.body", "body": body})


async def respond_json(send: Send, value: object, status: int = 200) -> None:
    """A whole JSON response."""
    await respond(send, json.dumps(value).encode(), status, [(b"x-json", b"1")])


async def read_body(receive: Receive) -> tuple[bytes, list[dict[str, Any]]]:
    """The whole request body and a summary of each message that carried it."""
    parts = []
    messages = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            messages.append({"type": message["type"]})
            break
        body = message.get("body", b"")
        parts.append(body)
        messages.append({"type": message["type"], "size": len(body), "more_body": message.get("more_body", False)})
        if not message.get("more_body", False):
            break
    return b"".join(parts), messages


def describe(value: object) -> object:  # noqa: PLR0911 (one return per type)
    """A JSON-able picture of a scope value that keeps its Python types visible."""
    if isinstance(value, bytes):
        return {"bytes": value.decode("latin-1")}
    if isinstance(value, tuple):
        return {"tuple": [describe(item) for item in value]}
    if isinstance(value, list):
        return [describe(item) for item in value]
    if isinstance(value, dict):
        return {"dict": {str(key): describe(item) for key, item in value.items()}}
    if isinstance(value, set | frozenset):
        return {"set": sorted(str(item) for item in value)}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return {"repr": type(value).__name__}


# --- lifespan -------------------------------------------------------------------------------------


async def lifespan(scope: Scope, receive: Receive, send: Send) -> None:
    """Fill the state at startup; write a marker at shutdown."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            log_event("lifespan.startup")
            state = scope["state"]
            state["name"] = "asgi_raw"
            state["shared_list"] = []
            state["started_pid"] = os.getpid()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            log_event("lifespan.shutdown")
            (STATE / "shutdown-marker").write_text("shutdown ran\n", encoding="utf-8")
            await send({"type": "lifespan.shutdown.complete"})
            return


async def slow_shutdown(scope: Scope, receive: Receive, send: Send) -> None:
    """A lifespan shutdown that takes 2.5 s (longer than the worker's own timers' period), then `hello`."""
    if scope["type"] == "lifespan":
        assert (await receive())["type"] == "lifespan.startup"
        await send({"type": "lifespan.startup.complete"})
        assert (await receive())["type"] == "lifespan.shutdown"
        log_event("slow shutdown started")
        await asyncio.sleep(2.5)
        log_event("slow shutdown done")
        await send({"type": "lifespan.shutdown.complete"})
        return
    await respond(send, b"up")


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """Lifespan, then one handler per first path segment."""
    if scope["type"] == "lifespan":
        await lifespan(scope, receive, send)
        return
    assert scope["type"] == "http", scope["type"]
    name = scope["path"].lstrip("/").split("/", 1)[0]
    handler = ROUTES.get(name)
    if handler is None:
        await respond(send, b"no route " + name.encode(), 404)
        return
    await handler(scope, receive, send)


async def failing_startup(scope: Scope, receive: Receive, send: Send) -> None:
    """Report lifespan.startup.failed with a message."""
    if scope["type"] == "lifespan":
        message = await receive()
        assert message["type"] == "lifespan.startup"
        await send({"type": "lifespan.startup.failed", "message": "database unreachable: cannot start"})
        return
    await respond(send, b"should never serve")


async def raising_startup(scope: Scope, receive: Receive, send: Send) -> None:
    """Receive lifespan.startup, then raise."""
    if scope["type"] == "lifespan":
        await receive()
        raise RuntimeError("startup exploded while connecting")
    await respond(send, b"should never serve")


async def no_lifespan(scope: Scope, receive: Receive, send: Send) -> None:
    """An application that only speaks HTTP: raises at once on any other scope."""
    if scope["type"] != "http":
        raise ValueError(f"only http is supported, not {scope['type']}")
    await respond(send, b"served without lifespan")


async def strict_http(scope: Scope, receive: Receive, send: Send) -> None:
    """Record any lifespan scope (there must be none under --no-lifespan), then behave like `app`."""
    if scope["type"] == "lifespan":
        log_event("lifespan scope seen")
    await app(scope, receive, send)


# --- helpers for tests ----------------------------------------------------------------------------


@route("records")
async def records(scope: Scope, receive: Receive, send: Send) -> None:
    """What request `id` recorded."""
    await respond_json(send, RECORDS.get(query(scope)["id"], []))


@route("release")
async def release(scope: Scope, receive: Receive, send: Send) -> None:
    """Let request `id` go on."""
    release_event(query(scope)["id"]).set()
    await respond(send, b"released")


@route("hello")
async def hello(scope: Scope, receive: Receive, send: Send) -> None:
    """Answer 'hello'."""
    await respond(send, b"hello")


# --- scope ----------------------------------------------------------------------------------------


@route("scope")
async def scope_dump(scope: Scope, receive: Receive, send: Send) -> None:
    """The scope as JSON (`describe`d), plus the Python types of a few values."""
    dumped = {key: describe(value) for key, value in scope.items()}
    dumped["_types"] = {key: type(value).__name__ for key, value in scope.items()}
    dumped["_header_types"] = sorted(
        {f"{type(pair).__name__}({type(pair[0]).__name__},{type(pair[1]).__name__})" for pair in scope["headers"]}
    )
    dumped["_thread"] = thread_kind()
    await respond_json(send, dumped)


@route("state")
async def state_route(scope: Scope, receive: Receive, send: Send) -> None:
    """Show the state, then mutate this request's copy (a new key, a changed key, a nested append)."""
    state = scope["state"]
    seen = {
        "keys": sorted(state),
        "name": state.get("name"),
        "added": state.get("added"),
        "shared_list": list(state.get("shared_list", [])),
    }
    state["added"] = query(scope).get("tag", "x")
    state["name"] = "changed"
    state["shared_list"].append(query(scope).get("tag", "x"))
    await respond_json(send, seen)


# --- receive() ------------------------------------------------------------------------------------


@route("echo")
async def echo(scope: Scope, receive: Receive, send: Send) -> None:
    """Read the whole body; answer its length, digest and how it arrived."""
    body, messages = await read_body(receive)
    await respond_json(
        send,
        {"size": len(body), "sha256": hashlib.sha256(body).hexdigest(), "messages": messages, "head": body[:64].hex()},
    )


@route("echo-stream")
async def echo_stream(scope: Scope, receive: Receive, send: Send) -> None:
    """Send every request body part back as it arrives (chunked response)."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/x-echo")]})
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return
        body = message.get("body", b"")
        more = message.get("more_body", False)
        if body or not more:
            await send({"type": "http.response.body", "body": body, "more_body": more})
        if not more:
            return


@route("expect")
async def expect(scope: Scope, receive: Receive, send: Send) -> None:
    """Wait for /release?id=ID (unless no id) before the first receive(), then echo the size."""
    ident = query(scope).get("id")
    if ident:
        record(ident, "waiting")
        await wait_released(ident)
    body, _ = await read_body(receive)
    await respond(send, b"got %d" % len(body))


@route("no-read")
async def no_read(scope: Scope, receive: Receive, send: Send) -> None:
    """Answer without ever calling receive()."""
    await respond(send, b"did not read", 200)


@route("read-slowly")
async def read_slowly(scope: Scope, receive: Receive, send: Send) -> None:
    """Read one message, wait for /release, then read the rest; answer the total and its digest.

    The body is hashed as it comes, never held whole: the server's memory is what the test measures."""
    ident = query(scope)["id"]
    message = await receive()
    record(ident, {"first": len(message.get("body", b""))})
    await wait_released(ident)
    digest = hashlib.sha256()
    total = 0
    count = 0
    largest = 0
    while True:
        body = message.get("body", b"")
        digest.update(body)
        total += len(body)
        count += 1
        largest = max(largest, len(body))
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
        message = await receive()
    await respond_json(send, {"size": total, "sha256": digest.hexdigest(), "messages": count, "largest": largest})


@route("disconnect-wait")
async def disconnect_wait(scope: Scope, receive: Receive, send: Send) -> None:
    """Receive until something other than http.request comes; record every message type, send nothing."""
    ident = query(scope)["id"]
    total = 0
    while True:
        message = await receive()
        if message["type"] == "http.request":
            total += len(message.get("body", b""))
            if not message.get("more_body", False):
                record(ident, {"body-complete": total})
            continue
        record(ident, {"type": message["type"], "received": total})
        log_event(f"disconnect {ident}")
        return


@route("receive-after")
async def receive_after(scope: Scope, receive: Receive, send: Send) -> None:
    """Complete the response, then call receive() (must be http.disconnect at once)."""
    ident = query(scope)["id"]
    await read_body(receive)
    await respond(send, b"done")
    try:
        message = await asyncio.wait_for(receive(), 5)
        record(ident, {"type": message["type"]})
        message = await asyncio.wait_for(receive(), 5)
        record(ident, {"type": message["type"]})
    except Exception as exc:  # noqa: BLE001 (recorded for the test)
        record(ident, {"exception": exception_record(exc)})


# --- send() ---------------------------------------------------------------------------------------


@route("stream")
async def stream(scope: Scope, receive: Receive, send: Send) -> None:
    """Send 'first', wait for /release?id=ID, then 'second', 'third' (chunked)."""
    ident = query(scope)["id"]
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"first;", "more_body": True})
    record(ident, "sent first")
    await wait_released(ident)
    await send({"type": "http.response.body", "body": b"second;", "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": True})
    await send({"type": "http.response.body", "body": b"third", "more_body": False})
    record(ident, "finished")


@route("header-forms")
async def header_forms(scope: Scope, receive: Receive, send: Send) -> None:
    """Headers as a tuple of pairs mixing bytes, bytearray, str, lists and tuples."""
    headers = (
        (b"x-bytes", b"b"),
        [bytearray(b"x-bytearray"), bytearray(b"ba")],
        ("X-Str", "s"),
        (b"x-mixed", "m"),
        (b"x-repeat", b"1"),
        (b"x-repeat", b"2"),
    )
    await send({"type": "http.response.start", "status": 201, "headers": headers})
    await send({"type": "http.response.body", "body": bytearray(b"bytearray body")})


@route("status")
async def status(scope: Scope, receive: Receive, send: Send) -> None:
    """Answer with the status in ?code= and a body unless 204/304."""
    code = int(query(scope)["code"])
    await send({"type": "http.response.start", "status": code, "headers": []})
    await send({"type": "http.response.body", "body": b"" if code in (204, 304) else b"status body"})


@route("no-body-message")
async def no_body_message(scope: Scope, receive: Receive, send: Send) -> None:
    """http.response.body without 'body' and without 'more_body': an empty, complete response."""
    await send({"type": "http.response.start", "status": 200})
    await send({"type": "http.response.body"})


@route("trailers")
async def trailers(scope: Scope, receive: Receive, send: Send) -> None:
    """A chunked body followed by trailers, in one or two trailer messages (?split=1)."""
    split = query(scope).get("split") == "1"
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/plain"), (b"trailer", b"x-checksum, x-count")],
            "trailers": True,
        }
    )
    await send({"type": "http.response.body", "body": b"part one,", "more_body": True})
    await send({"type": "http.response.body", "body": b"part two", "more_body": False})
    if split:
        await send({"type": "http.response.trailers", "headers": [(b"x-checksum", b"abc123")], "more_trailers": True})
        await send({"type": "http.response.trailers", "headers": [(b"x-count", b"2")], "more_trailers": False})
    else:
        await send(
            {
                "type": "http.response.trailers",
                "headers": [(b"x-checksum", b"abc123"), (b"x-count", b"2")],
                "more_trailers": False,
            }
        )


@route("pathsend")
async def pathsend(scope: Scope, receive: Receive, send: Send) -> None:
    """Send the file at ?path= with http.response.pathsend."""
    path = query(scope)["path"]
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/x-file")]})
    await send({"type": "http.response.pathsend", "path": path})


@route("pathsend-trailers")
async def pathsend_trailers(scope: Scope, receive: Receive, send: Send) -> None:
    """The file at ?path= with http.response.pathsend, then trailers (announced in the start)."""
    path = query(scope)["path"]
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/x-file"), (b"trailer", b"x-file-end")],
            "trailers": True,
        }
    )
    await send({"type": "http.response.pathsend", "path": path})
    await send({"type": "http.response.trailers", "headers": [(b"x-file-end", b"yes")], "more_trailers": False})


@route("early-hint")
async def early_hint(scope: Scope, receive: Receive, send: Send) -> None:
    """Two 103 Early Hints, then the final response."""
    await send(
        {
            "type": "http.response.early_hint",
            "links": [b"</style.css>; rel=preload; as=style", b"</app.js>; rel=preload; as=script"],
        }
    )
    await send({"type": "http.response.early_hint", "links": [b"</font.woff2>; rel=preload; as=font"]})
    await respond(send, b"final")


@route("content-length-excess")
async def content_length_excess(scope: Scope, receive: Receive, send: Send) -> None:
    """Declare 5 bytes, send 11 in two messages."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"5")]})
    await send({"type": "http.response.body", "body": b"hel", "more_body": True})
    await send({"type": "http.response.body", "body": b"lo world", "more_body": False})


@route("content-length-short")
async def content_length_short(scope: Scope, receive: Receive, send: Send) -> None:
    """Declare 100 bytes, send 10, finish."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"100")]})
    await send({"type": "http.response.body", "body": b"ten bytes!", "more_body": False})


@route("head-stream")
async def head_stream(scope: Scope, receive: Receive, send: Send) -> None:
    """A streamed (chunked for GET) response; for HEAD the server must send no body."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"x-method", scope["method"].encode())]})
    await send({"type": "http.response.body", "body": b"streamed ", "more_body": True})
    await send({"type": "http.response.body", "body": b"body", "more_body": False})


@route("flood")
async def flood(scope: Scope, receive: Receive, send: Send) -> None:
    """Try to stream ?total= bytes (default 1 GiB) in 64 KiB chunks; record sends and what they raise."""
    ident = query(scope)["id"]
    total = int(query(scope).get("total", str(1 << 30)))
    chunk = b"\xab" * 65536
    counter = {"sent": 0}
    RECORDS[ident] = [counter]
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(total).encode())]})
    try:
        while counter["sent"] * len(chunk) < total:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            counter["sent"] += 1
        await send({"type": "http.response.body", "body": b""})
        record(ident, "completed")
    except Exception as exc:
        record(ident, {"first": exception_record(exc)})
        try:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            record(ident, {"later": None})
        except Exception as later:  # noqa: BLE001 (recorded for the test)
            record(ident, {"later": exception_record(later)})
        raise


# --- misuse ---------------------------------------------------------------------------------------


async def _misuse(kind: str, send: Send) -> bool:  # noqa: PLR0912, PLR0915 (one branch per kind)
    """Do the wrong thing named `kind`; return whether http.response.start went through."""
    started = False
    start = {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
    if kind == "body-before-start":
        await send({"type": "http.response.body", "body": b"too early"})
    elif kind == "start-twice":
        await send(start)
        started = True
        await send({"type": "http.response.start", "status": 201, "headers": []})
    elif kind == "unknown-type":
        await send({"type": "http.response.teapot", "body": b""})
    elif kind == "not-a-dict":
        await send([("type", "http.response.start")])  # type: ignore[arg-type]
    elif kind == "no-type":
        await send({"status": 200})
    elif kind == "status-str":
        await send({"type": "http.response.start", "status": "200", "headers": []})
    elif kind == "status-103":
        await send({"type": "http.response.start", "status": 103, "headers": []})
    elif kind == "headers-not-pairs":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x-a", b"1", b"extra")]})
    elif kind == "headers-single-bytes":
        await send({"type": "http.response.start", "status": 200, "headers": [b"x-a: 1"]})
    elif kind == "headers-int-value":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x-a", 1)]})
    elif kind == "headers-not-iterable":
        await send({"type": "http.response.start", "status": 200, "headers": 5})
    elif kind == "header-crlf":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x-a", b"1\r\nx-injected: yes")]})
    elif kind == "header-lf":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x-a", b"1\nx-injected: yes")]})
    elif kind == "header-not-latin1":
        await send({"type": "http.response.start", "status": 200, "headers": [("x-a", "\u65e5\u672c")]})
    elif kind == "header-name-space":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"x a", b"1")]})
    elif kind == "body-str":
        await send(start)
        started = True
        await send({"type": "http.response.body", "body": "text, not bytes"})
    elif kind == "trailers-without-flag":
        await send(start)
        started = True
        await send({"type": "http.response.body", "body": b"", "more_body": True})
        await send({"type": "http.response.trailers", "headers": [(b"x-t", b"1")]})
    elif kind == "pathsend-missing":
        await send(start)
        started = True
        await send({"type": "http.response.pathsend", "path": "/nonexistent/peregrine/file"})
    elif kind == "receive-args":
        raise AssertionError("handled by the caller")
    else:
        raise AssertionError(f"unknown misuse {kind}")
    return started


@route("misuse")
async def misuse(scope: Scope, receive: Receive, send: Send) -> None:
    """Do the wrong thing in ?kind=, catch what send() raises, then answer with it as JSON."""
    kind = query(scope)["kind"]
    started = False
    caught: dict[str, Any] | None = None
    try:
        started = await _misuse(kind, send)
    except Exception as exc:  # noqa: BLE001 (reported to the test)
        caught = exception_record(exc)
        started = started or kind in ("start-twice", "body-str", "trailers-without-flag", "pathsend-missing")
    body = json.dumps({"kind": kind, "caught": caught}).encode()
    if not started:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


@route("misuse-propagate")
async def misuse_propagate(scope: Scope, receive: Receive, send: Send) -> None:
    """Do the wrong thing in ?kind= and let the exception escape."""
    await _misuse(query(scope)["kind"], send)


@route("body-after-complete")
async def body_after_complete(scope: Scope, receive: Receive, send: Send) -> None:
    """Finish the response, then send more body; record the exception."""
    ident = query(scope)["id"]
    await respond(send, b"complete")
    try:
        await send({"type": "http.response.body", "body": b"extra"})
        record(ident, {"caught": None})
    except Exception as exc:  # noqa: BLE001 (recorded for the test)
        record(ident, {"caught": exception_record(exc)})


# --- errors ---------------------------------------------------------------------------------------


@route("raise-before")
async def raise_before(scope: Scope, receive: Receive, send: Send) -> None:
    """Raise before http.response.start."""
    raise RuntimeError("raise-before: boom before start")


@route("raise-after")
async def raise_after(scope: Scope, receive: Receive, send: Send) -> None:
    """Start a chunked response, send part of it, raise."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"partial", "more_body": True})
    await asyncio.sleep(0.05)
    raise RuntimeError("raise-after: boom mid-body")


@route("raise-after-start")
async def raise_after_start(scope: Scope, receive: Receive, send: Send) -> None:
    """Send http.response.start only, then raise."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    raise RuntimeError("raise-after-start: boom after the head")


@route("return-nothing")
async def return_nothing(scope: Scope, receive: Receive, send: Send) -> None:
    """Return without sending anything."""
    return


@route("return-after-start")
async def return_after_start(scope: Scope, receive: Receive, send: Send) -> None:
    """Send the head and some body with more_body, then return."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"unfinished", "more_body": True})


@route("leak")
async def leak(scope: Scope, receive: Receive, send: Send) -> None:
    """Keep this request's receive and send for /use-leaked."""
    LEAKED["receive"] = receive
    LEAKED["send"] = send
    await respond(send, b"leaked")


@route("use-leaked")
async def use_leaked(scope: Scope, receive: Receive, send: Send) -> None:
    """Call an earlier request's send and receive; answer what they did, with our own send."""
    result: dict[str, Any] = {}
    try:
        await LEAKED["send"]({"type": "http.response.start", "status": 418, "headers": [(b"x-leaked", b"yes")]})
        await LEAKED["send"]({"type": "http.response.body", "body": b"LEAKED BODY"})
        result["send"] = None
    except Exception as exc:  # noqa: BLE001 (reported to the test)
        result["send"] = exception_record(exc)
    try:
        message = await asyncio.wait_for(LEAKED["receive"](), 2)
        result["receive"] = {"message": message.get("type")}
    except Exception as exc:  # noqa: BLE001 (reported to the test)
        result["receive"] = exception_record(exc)
    await respond_json(send, result)


@route("slow")
async def slow(scope: Scope, receive: Receive, send: Send) -> None:
    """Log the start, sleep ?seconds=, answer; log completion to the events file."""
    ident = query(scope)["id"]
    log_event(f"slow started {ident}")
    await asyncio.sleep(float(query(scope)["seconds"]))
    await respond(send, b"slow done")
    log_event(f"slow finished {ident}")


@route("barrier")
async def barrier(scope: Scope, receive: Receive, send: Send) -> None:
    """Wait until ?n= requests with the same ?id= are all inside the application, then answer."""
    ident = query(scope)["id"]
    count = int(query(scope)["n"])
    record(ident, "arrived")
    if len(RECORDS[ident]) >= count:
        release_event(ident).set()
    await wait_released(ident)
    body, _ = await read_body(receive)
    await respond(send, b"through %d" % len(body))


@route("double-receive")
async def double_receive(scope: Scope, receive: Receive, send: Send) -> None:
    """Call receive() while an earlier receive() is still waiting for the body; answer what that raised."""
    first = asyncio.ensure_future(receive())
    await asyncio.sleep(0.05)
    caught: dict[str, Any] | None = None
    try:
        second = receive()
        await second
    except Exception as exc:  # noqa: BLE001 (reported to the test)
        caught = exception_record(exc)
    message = await first
    await respond_json(send, {"caught": caught, "first": message["type"], "body": message.get("body", b"").decode()})


@route("hint-after-start")
async def hint_after_start(scope: Scope, receive: Receive, send: Send) -> None:
    """http.response.early_hint after http.response.start: answer what it raised in the body."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    caught: dict[str, Any] | None = None
    try:
        await send({"type": "http.response.early_hint", "links": [b"</late.css>; rel=preload; as=style"]})
    except Exception as exc:  # noqa: BLE001 (reported to the test)
        caught = exception_record(exc)
    await send({"type": "http.response.body", "body": json.dumps({"caught": caught}).encode()})


@route("app-connection-close")
async def app_connection_close(scope: Scope, receive: Receive, send: Send) -> None:
    """A response whose application asks for the connection to close."""
    await respond(send, b"closing", headers=[(b"connection", b"close")])


@route("big-send")
async def big_send(scope: Scope, receive: Receive, send: Send) -> None:
    """One http.response.body of ?size= bytes (a repeating 0..250 pattern), chunked."""
    size = int(query(scope)["size"])
    pattern = bytes(range(251))
    body = (pattern * (size // len(pattern) + 1))[:size]
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


@route("sized")
async def sized(scope: Scope, receive: Receive, send: Send) -> None:
    """One whole response of ?size= bytes (the 0..250 pattern, starting at ?n= mod 251), Content-Length set."""
    params = query(scope)
    size = int(params["size"])
    start = int(params.get("n", "0")) % 251
    pattern = bytes(range(251))
    body = ((pattern[start:] + pattern[:start]) * (size // len(pattern) + 1))[:size]
    await respond(send, body)


@route("drip")
async def drip(scope: Scope, receive: Receive, send: Send) -> None:
    """Send a small part every 20 ms until a send fails; record how it failed."""
    ident = query(scope)["id"]
    await send({"type": "http.response.start", "status": 200, "headers": []})
    sent = 0
    try:
        while sent < 2000:
            await send({"type": "http.response.body", "body": b"drop;", "more_body": True})
            sent += 1
            await asyncio.sleep(0.02)
        record(ident, {"completed": sent})
    except Exception as exc:  # noqa: BLE001 (recorded for the test)
        record(ident, {"failed": exception_record(exc)})


@route("hint-after-body")
async def hint_after_body(scope: Scope, receive: Receive, send: Send) -> None:
    """http.response.early_hint after part of the body went out: answer what it raised in the body."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"first part;", "more_body": True})
    await asyncio.sleep(0.05)
    caught: dict[str, Any] | None = None
    try:
        await send({"type": "http.response.early_hint", "links": [b"</late.css>; rel=preload; as=style"]})
    except Exception as exc:  # noqa: BLE001 (reported to the test)
        caught = exception_record(exc)
    await send({"type": "http.response.body", "body": json.dumps({"caught": caught}).encode()})


@route("receive-cancelled")
async def receive_cancelled(scope: Scope, receive: Receive, send: Send) -> None:
    """Cancel a receive() that waits for the body, then receive() again; answer what happened."""
    result: dict[str, Any] = {}
    pending = asyncio.ensure_future(receive())
    await asyncio.sleep(0.05)
    result["done_before_cancel"] = pending.done()
    pending.cancel()
    try:
        await pending
        result["cancelled"] = False
    except asyncio.CancelledError:
        result["cancelled"] = True
    try:
        body, messages = await read_body(receive)
        result["body"] = body.decode()
        result["messages"] = messages
    except Exception as exc:  # noqa: BLE001 (reported to the test)
        result["error"] = exception_record(exc)
    await respond_json(send, result)


@route("receive-timeout")
async def receive_timeout(scope: Scope, receive: Receive, send: Send) -> None:
    """Poll receive() with asyncio.wait_for(..., 0.05) until the body is complete; answer what happened."""
    timeouts = 0
    parts = []
    try:
        while True:
            try:
                message = await asyncio.wait_for(receive(), 0.05)
            except TimeoutError:
                timeouts += 1
                continue
            parts.append(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        result: dict[str, Any] = {"body": b"".join(parts).decode(), "timeouts": timeouts}
    except Exception as exc:  # noqa: BLE001 (reported to the test)
        result = {"error": exception_record(exc), "timeouts": timeouts}
    await respond_json(send, result)


@route("receive-move-on-after")
async def receive_move_on_after(scope: Scope, receive: Receive, send: Send) -> None:
    """Poll receive() in anyio cancel scopes (move_on_after 0.05) until the body is complete; answer what happened."""
    import anyio  # noqa: PLC0415 (only this route needs it; installed with starlette)

    timeouts = 0
    parts = []
    try:
        while True:
            message = None
            with anyio.move_on_after(0.05):
                message = await receive()
            if message is None:
                timeouts += 1
                continue
            parts.append(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        result: dict[str, Any] = {"body": b"".join(parts).decode(), "timeouts": timeouts}
    except Exception as exc:  # noqa: BLE001 (reported to the test)
        result = {"error": exception_record(exc), "timeouts": timeouts}
    await respond_json(send, result)


@route("receive-race")
async def receive_race(scope: Scope, receive: Receive, send: Send) -> None:
    """A receive() cancelled once its body message was ready (receive_race.py), then the body read; answer both.

    Records "waiting" for /records?id=ID once the receive() waits: the test sends the body then."""
    ident = query(scope)["id"]
    result = await cancel_once_ready(receive, lambda: record(ident, "waiting"))
    try:
        body, messages = await read_body(receive)
        result["body"] = body.decode()
        result["messages"] = messages
    except Exception as exc:  # noqa: BLE001 (reported to the test)
        result["error"] = exception_record(exc)
    await respond_json(send, result)


@route("receive-race-disconnect")
async def receive_race_disconnect(scope: Scope, receive: Receive, send: Send) -> None:
    """Read the body, then cancel a receive() once http.disconnect is ready (receive_race.py); record what follows.

    Records "waiting" once that receive() waits (the test closes the connection then), then
    {"cancelled": ..., "next": the type of the next receive()'s message}."""
    ident = query(scope)["id"]
    await read_body(receive)
    result = await cancel_once_ready(receive, lambda: record(ident, "waiting"))
    message = await receive()
    record(ident, {**result, "next": message["type"]})


@route("send-cancelled")
async def send_cancelled(scope: Scope, receive: Receive, send: Send) -> None:
    """Stream 64 KiB parts until one send() waits longer than 0.2 s (cancelled by wait_for), then go on.

    After the timeout, wait for /release?id=ID, send ?after= more parts and finish the (chunked) body."""
    ident = query(scope)["id"]
    after = int(query(scope).get("after", "8"))
    chunk = b"\xcd" * 65536
    await send({"type": "http.response.start", "status": 200, "headers": []})
    sent = 0
    try:
        while sent < 16384:
            try:
                await asyncio.wait_for(send({"type": "http.response.body", "body": chunk, "more_body": True}), 0.2)
            except TimeoutError:
                record(ident, {"timed_out_after": sent})
                break
            sent += 1
        await wait_released(ident)
        for _ in range(after):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        record(ident, "completed")
    except Exception as exc:
        record(ident, {"error": exception_record(exc)})
        raise


@route("head-declared")
async def head_declared(scope: Scope, receive: Receive, send: Send) -> None:
    """Declare Content-Length 1000; send the body for GET, nothing for HEAD (as frameworks do)."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"1000")]})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else b"d" * 1000})


async def failing_shutdown(scope: Scope, receive: Receive, send: Send) -> None:
    """Start normally; answer lifespan.shutdown with lifespan.shutdown.failed."""
    if scope["type"] == "lifespan":
        await receive()
        await send({"type": "lifespan.startup.complete"})
        await receive()
        log_event("shutdown asked")
        await send({"type": "lifespan.shutdown.failed", "message": "could not flush the cache"})
        return
    await respond(send, b"up")


async def raising_shutdown(scope: Scope, receive: Receive, send: Send) -> None:
    """Start normally; raise when asked to shut down."""
    if scope["type"] == "lifespan":
        await receive()
        await send({"type": "lifespan.startup.complete"})
        await receive()
        log_event("shutdown asked")
        raise RuntimeError("shutdown exploded")
    await respond(send, b"up")


@route("fastpath")
async def fastpath(scope: Scope, receive: Receive, send: Send) -> None:
    """Facts about receive/send and the loop (issue 3 items 1 and 7), answered as JSON."""
    import inspect  # noqa: PLC0415 (only this route needs it)

    facts: dict[str, Any] = {
        "loop": type(asyncio.get_running_loop()).__module__ + "." + type(asyncio.get_running_loop()).__name__,
        "thread": thread_kind(),
        "send_is_python": inspect.isfunction(send) or inspect.ismethod(send) or hasattr(send, "__code__"),
        "receive_is_python": inspect.isfunction(receive) or inspect.ismethod(receive) or hasattr(receive, "__code__"),
        "send_type": type(send).__name__,
    }
    ready = receive()
    facts["receive_is_coroutine"] = inspect.iscoroutine(ready)
    message = await ready
    facts["received"] = message["type"]
    start = send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    facts["start_is_coroutine"] = inspect.iscoroutine(start)
    # A send that completes synchronously is an already-completed awaitable: no suspension.
    iterator = start.__await__()
    try:
        next(iterator)
        facts["start_suspended"] = True
    except StopIteration:
        facts["start_suspended"] = False
    await send({"type": "http.response.body", "body": json.dumps(facts).encode()})


# --- the request task ------------------------------------------------------------------------------

#: Tasks the factory `task_factory_app` installs has made.
FACTORY_TASKS: list[str] = []


async def task_factory_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Installs a task factory at lifespan startup (`loop.set_task_factory`); each request answers what
    it sees of its task: whether it runs in one (asyncio.current_task), its name, and how many tasks
    the factory made so far. `/raise` raises after its response (logged, the server serves on)."""
    if scope["type"] == "lifespan":
        loop = asyncio.get_running_loop()

        def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:  # noqa: ANN401
            task = asyncio.Task(coro, loop=loop, **kwargs)
            FACTORY_TASKS.append(task.get_name())
            return task

        assert (await receive())["type"] == "lifespan.startup"
        loop.set_task_factory(factory)
        await send({"type": "lifespan.startup.complete"})
        assert (await receive())["type"] == "lifespan.shutdown"
        await send({"type": "lifespan.shutdown.complete"})
        return
    await request_task_report(scope, send)


async def task_app(scope: Scope, receive: Receive, send: Send) -> None:
    """`task_factory_app` without the factory."""
    if scope["type"] == "lifespan":
        assert (await receive())["type"] == "lifespan.startup"
        await send({"type": "lifespan.startup.complete"})
        assert (await receive())["type"] == "lifespan.shutdown"
        await send({"type": "lifespan.shutdown.complete"})
        return
    await request_task_report(scope, send)


async def request_task_report(scope: Scope, send: Send) -> None:
    """Answer what the request's task is; `/raise` raises after the response."""
    task = asyncio.current_task()
    await respond_json(
        send,
        {
            "in_task": task is not None,
            "name": task.get_name() if task is not None else None,
            "factory_tasks": len(FACTORY_TASKS),
        },
    )
    if scope["path"] == "/raise":
        raise ValueError("raised after the response, on purpose")
