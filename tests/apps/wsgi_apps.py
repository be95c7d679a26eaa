"""WSGI applications the end-to-end suite serves: `peregrine wsgi_apps:app`.

`app` routes on the first segment of PATH_INFO to one small application per
behaviour under test. Every route is wrapped in `wsgiref.validate.validator`
unless it is registered with `validated=False` and a reason: those break PEP
3333 on purpose (bad response headers, reading wsgi.input without a size) or
need the server to see the object they return (the validator hides a
`wsgi.file_wrapper` result behind its own iterator, so `sendfile` would never
run).

Every call is recorded as a line `call METHOD PATH_INFO` in
$PEREGRINE_TEST_STATE/events.log (the temporary directory when unset), so a test can prove the application was
(not) called; iterables record `closed NAME` there when closed.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs
from wsgiref.validate import validator

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
WSGIApp = Callable[[Environ, StartResponse], Iterable[bytes]]

STATE = Path(os.environ.get("PEREGRINE_TEST_STATE") or tempfile.gettempdir())
EVENTS = STATE / "events.log"

ROUTES: dict[str, WSGIApp] = {}


def record(event: str) -> None:
    """Append one line to the events file (O_APPEND: lines never interleave)."""
    with EVENTS.open("a", encoding="utf-8") as events:
        events.write(event + "\n")


def route(name: str, *, validated: bool = True, why_not: str = "") -> Callable[[WSGIApp], WSGIApp]:
    """Register an application under /NAME, wrapped in the validator unless `why_not` says why not."""
    assert validated or why_not, "an unvalidated route must say why"

    def register(application: WSGIApp) -> WSGIApp:
        ROUTES[name] = validator(application) if validated else application
        return application

    return register


def query(environ: Environ) -> dict[str, str]:
    """The query string as a dict of last values."""
    return {key: values[-1] for key, values in parse_qs(environ.get("QUERY_STRING", "")).items()}


def text(
    start_response: StartResponse, body: bytes, status: str = "200 OK", extra: list[tuple[str, str]] | None = None
) -> list[bytes]:
    """A complete plain-text response with Content-Length."""
    start_response(status, [("Content-Type", "text/plain"), ("Content-Length", str(len(body))), *(extra or [])])
    return [body]


def as_json(start_response: StartResponse, value: object) -> list[bytes]:
    """A complete JSON response."""
    body = json.dumps(value).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Route /NAME/... to ROUTES[NAME]; record the call first."""
    path = environ.get("PATH_INFO", "")
    record(f"call {environ.get('REQUEST_METHOD')} {path}")
    name = path.lstrip("/").split("/", 1)[0]
    target = ROUTES.get(name)
    if target is None:
        return ROUTES["not-found"](environ, start_response)
    return target(environ, start_response)


# --- plain answers ------------------------------------------------------------------------------


@route("not-found")
def not_found(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    return text(start_response, b"no such route: " + environ["PATH_INFO"].encode("latin-1"), "404 Not Found")


@route("")
@route("hello")
def hello(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    return text(start_response, b"hello")


@route("status")
def status(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """/status/CODE: that status; 204 and 304 with no body and no Content-Type."""
    code = int(environ["PATH_INFO"].split("/")[2])
    if code in (204, 304):
        start_response(f"{code} X", [("X-Code", str(code))])
        return []
    return text(start_response, f"status {code}".encode(), f"{code} X")


@route("sleep")
def sleep(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """/sleep?ms=N: answer after N milliseconds."""
    time.sleep(int(query(environ).get("ms", "0")) / 1000)
    return text(start_response, b"slept")


@route("environ")
def environ_dump(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """The environ as JSON: {key: [type name, value or repr]}."""
    dumped: dict[str, list[Any]] = {}
    for key, value in environ.items():
        if isinstance(value, (str, int, bool)) or value is None:
            dumped[key] = [type(value).__name__, value]
        elif isinstance(value, tuple):
            dumped[key] = [type(value).__name__, list(value)]
        else:
            dumped[key] = [type(value).__name__, repr(value)]
    # Through the validator's wrappers: the server's own objects.
    for key in ("wsgi.input", "wsgi.errors"):
        inner = getattr(environ[key], "input", None) or getattr(environ[key], "errors", None)
        dumped[key + ".server"] = [
            type(inner).__name__,
            [hasattr(inner, m) for m in ("read", "readline", "readlines", "__iter__", "write", "flush", "writelines")],
        ]
    return as_json(start_response, dumped)


@route("errors")
def errors(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """/errors?m=MARKER: write MARKER to wsgi.errors (write, writelines, flush)."""
    marker = query(environ).get("m", "marker")
    environ["wsgi.errors"].write(f"{marker}-write\n")
    environ["wsgi.errors"].writelines([f"{marker}-lines-1\n", f"{marker}-lines-2\n"])
    environ["wsgi.errors"].flush()
    return text(start_response, b"logged")


# --- request bodies -----------------------------------------------------------------------------


@route("echo")
def echo(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Read the body with read(65536) until EOF and send it back."""
    chunks = []
    while True:
        chunk = environ["wsgi.input"].read(65536)
        if not chunk:
            break
        chunks.append(chunk)
    body = b"".join(chunks)
    return text(start_response, body, extra=[("X-Body-Length", str(len(body)))])


@route("ignore-body")
def ignore_body(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Answer without reading the body."""
    return text(start_response, b"ignored")


@route("digest")
def digest(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Hash the body read with read(65536); report size, sha256, largest read, peak RSS (VmHWM kB)."""
    hasher = hashlib.sha256()
    size = largest = reads = 0
    while True:
        chunk = environ["wsgi.input"].read(65536)
        if not chunk:
            break
        reads += 1
        size += len(chunk)
        largest = max(largest, len(chunk))
        hasher.update(chunk)
    return as_json(start_response, {"size": size, "sha256": hasher.hexdigest(), "largest": largest, "reads": reads})


@route("first-read")
def first_read(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Record the first 5 body bytes as soon as they are read, then read the rest; answer the total."""
    first = environ["wsgi.input"].read(5)
    record(f"first-read {first.decode('latin-1')}")
    total = len(first)
    while chunk := environ["wsgi.input"].read(65536):
        total += len(chunk)
    return text(start_response, str(total).encode())


def _server_input(environ: Environ) -> Any:  # noqa: ANN401 (the server's stream type is its own)
    """The server's wsgi.input itself, from under the validator's InputWrapper."""
    stream = environ["wsgi.input"]
    return getattr(stream, "input", stream)


def _read_with(mode: str, stream: Any, argument: int | None) -> list[bytes]:  # noqa: ANN401
    parts: list[bytes] = []
    if mode == "read":
        assert argument is not None
        while chunk := stream.read(argument):
            parts.append(chunk)
    elif mode == "read-all":
        parts.append(stream.read())
        parts.append(stream.read())
    elif mode == "read-minus-one":
        parts.append(stream.read(-1))
    elif mode == "readline":
        while line := (stream.readline(argument) if argument is not None else stream.readline()):
            parts.append(line)
    elif mode == "readlines":
        parts.extend(stream.readlines(argument) if argument is not None else stream.readlines())
        parts.append(b"--rest--")
        parts.append(stream.read(1 << 30))
    elif mode == "iterate":
        parts.extend(stream)
    else:
        raise ValueError(mode)
    return parts


@route("input")
def input_methods(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """/input/MODE?n=N: read the body with MODE through the validator; JSON list of latin-1 parts."""
    mode = environ["PATH_INFO"].split("/")[2]
    n = query(environ).get("n")
    parts = _read_with(mode, environ["wsgi.input"], int(n) if n is not None else None)
    return as_json(start_response, [part.decode("latin-1") for part in parts])


@route(
    "input-raw",
    validated=False,
    why_not="read() and read(-1) without a size break PEP 3333's read(size); iteration uses the "
    "server's own __iter__, which the validator replaces with readline()",
)
def input_methods_raw(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """/input-raw/MODE?n=N: as /input, on the server's stream directly."""
    mode = environ["PATH_INFO"].split("/")[2]
    n = query(environ).get("n")
    parts = _read_with(mode, _server_input(environ), int(n) if n is not None else None)
    return as_json(start_response, [part.decode("latin-1") for part in parts])


@route("input-error")
def input_error(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Read the body; on an error from wsgi.input record it and re-raise (the server owns the answer)."""
    try:
        while environ["wsgi.input"].read(65536):
            pass
    except Exception as error:
        record(f"input-error {type(error).__name__}")
        raise
    record("input-error none")
    return text(start_response, b"read it all")


# --- response bodies ----------------------------------------------------------------------------


@route("stream")
def stream(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Yield b'first', sleep ?delay ms (1000), yield b'second'; no Content-Length."""
    delay = int(query(environ).get("delay", "1000")) / 1000
    start_response("200 OK", [("Content-Type", "text/plain")])

    def body() -> Iterator[bytes]:
        yield b"first"
        time.sleep(delay)
        yield b"second"

    return body()


@route("chunks")
def chunks(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """?n=COUNT blocks of ?size bytes, no Content-Length (chunked on 1.1, close-delimited on 1.0)."""
    params = query(environ)
    count, size = int(params.get("n", "3")), int(params.get("size", "5"))
    start_response("200 OK", [("Content-Type", "application/octet-stream")])
    return (bytes([65 + i % 26]) * size for i in range(count))


@route("empty-blocks")
def empty_blocks(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Empty blocks between data must not end a chunked body early."""
    start_response("200 OK", [("Content-Type", "text/plain")])
    return iter([b"", b"ab", b"", b"cd", b""])


@route(
    "file",
    validated=False,
    why_not="the validator wraps the returned wsgi.file_wrapper in its own iterator, hiding the "
    "file from the server, so the sendfile path would never run",
)
def file(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """/file?path=P&offset=O&length=L: wsgi.file_wrapper over a real file, seeked to O."""
    params = query(environ)
    path = Path(params["path"])
    offset = int(params.get("offset", "0"))
    handle = path.open("rb")
    handle.seek(offset)
    headers = [("Content-Type", "application/octet-stream")]
    if "length" in params:
        headers.append(("Content-Length", params["length"]))
    elif "no-length" not in params:
        headers.append(("Content-Length", str(path.stat().st_size - offset)))
    start_response("200 OK", headers)
    return environ["wsgi.file_wrapper"](handle, 65536)


@route("file-validated")
def file_validated(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """wsgi.file_wrapper over a real file, through the validator (iterated, not sendfile)."""
    path = Path(query(environ)["path"])
    start_response(
        "200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(path.stat().st_size))]
    )
    return environ["wsgi.file_wrapper"](path.open("rb"), 65536)


@route("bytesio")
def bytesio(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """wsgi.file_wrapper over a BytesIO (no file descriptor): served by iteration."""
    data = bytes(range(256)) * 1000
    start_response("200 OK", [("Content-Type", "application/octet-stream")])
    return environ["wsgi.file_wrapper"](io.BytesIO(data), 4096)


@route("bytesio-raw", validated=False, why_not="the validator would hide the file_wrapper object")
def bytesio_raw(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """As /bytesio, with the server seeing its own file_wrapper object."""
    data = bytes(range(256)) * 1000
    start_response("200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(len(data)))])
    return environ["wsgi.file_wrapper"](io.BytesIO(data), 4096)


@route("cl-excess")
def cl_excess(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Declares Content-Length 10, yields 20 bytes."""
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "10")])
    return [b"0123456789", b"ABCDEFGHIJ"]


@route("cl-short")
def cl_short(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Declares Content-Length 100, yields 10 bytes."""
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "100")])
    return [b"0123456789"]


@route("write")
def write(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """The write() callable, then an iterable: body 'write1write2iter1iter2'."""
    writer = start_response("200 OK", [("Content-Type", "text/plain")])
    writer(b"write1")
    writer(b"write2")
    return [b"iter1", b"iter2"]


@route("write-only")
def write_only(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Only write(), with Content-Length; returns an empty list."""
    writer = start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "11")])
    writer(b"hello ")
    writer(b"world")
    return []


@route("start-in-iteration")
def start_in_iteration(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """start_response is called only when the server asks for the first block."""

    def body() -> Iterator[bytes]:
        start_response("201 Created", [("Content-Type", "text/plain"), ("X-Late", "yes")])
        yield b"late "
        yield b"start"

    return body()


class Recorded:
    """An iterable that records its close() in the events file."""

    def __init__(self, name: str, blocks: Iterable[bytes]) -> None:
        self.name = name
        self.blocks = iter(blocks)

    def __iter__(self) -> Iterator[bytes]:
        return self.blocks

    def close(self) -> None:
        record(f"closed {self.name}")


@route("close-recorded")
def close_recorded(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """/close-recorded?id=X&n=N&size=S: N blocks of S bytes; close() records 'closed X'."""
    params = query(environ)
    count, size = int(params.get("n", "2")), int(params.get("size", "3"))
    start_response("200 OK", [("Content-Type", "application/octet-stream")])
    return Recorded(params["id"], (b"x" * size for _ in range(count)))


# --- application errors -------------------------------------------------------------------------


@route("raise-before")
def raise_before(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    raise RuntimeError("raise-before: boom before start_response")


@route("raise-after")
def raise_after(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Head and a first block sent, then the generator raises."""
    start_response("200 OK", [("Content-Type", "text/plain")])

    def body() -> Iterator[bytes]:
        yield b"partial"
        raise RuntimeError("raise-after: boom mid-body")

    return body()


@route("raise-after-cl")
def raise_after_cl(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """As raise-after with a declared Content-Length."""
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "100")])

    def body() -> Iterator[bytes]:
        yield b"partial"
        raise RuntimeError("raise-after-cl: boom mid-body")

    return body()


class RaisesInClose:
    """A complete body whose close() raises."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __iter__(self) -> Iterator[bytes]:
        yield b"body before close"

    def close(self) -> None:
        record(f"closed {self.name}")
        raise RuntimeError("raise-in-close: boom in close()")


@route("raise-in-close")
def raise_in_close(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "17")])
    return RaisesInClose(query(environ).get("id", "raise-in-close"))


@route("start-twice")
def start_twice(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """A second start_response without exc_info must raise; report what it raised."""
    start_response("200 OK", [("Content-Type", "text/plain")])
    try:
        start_response("202 Accepted", [("Content-Type", "text/plain")])
    except Exception as error:  # noqa: BLE001 (any exception is the server refusing)
        outcome = f"second call raised {type(error).__name__}"
    else:
        outcome = "second call accepted"
    return [outcome.encode()]


@route("exc-info-before")
def exc_info_before(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """start_response(200), then an error handler replaces it with exc_info before any output."""
    start_response("200 OK", [("Content-Type", "text/plain"), ("X-First", "yes")])
    try:
        raise ValueError("handled by the application")
    except ValueError:
        start_response("503 Service Unavailable", [("Content-Type", "text/plain"), ("X-Second", "yes")], sys.exc_info())
    return [b"replaced by the error page"]


@route("exc-info-after")
def exc_info_after(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """After output, start_response with exc_info must re-raise: the connection is aborted."""
    start_response("200 OK", [("Content-Type", "text/plain")])

    def body() -> Iterator[bytes]:
        yield b"partial"
        try:
            raise ValueError("exc-info-after: original error")
        except ValueError:
            try:
                start_response("500 Internal Server Error", [("Content-Type", "text/plain")], sys.exc_info())
            except ValueError:
                record("exc-info-after re-raised ValueError")
                raise
            record("exc-info-after not re-raised")
        yield b"should never be sent"

    return body()


@route("no-start-response")
def no_start_response(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Returns an empty body without ever calling start_response: the server must answer 500."""
    return []


@route(
    "bad-header",
    validated=False,
    why_not="the validator itself refuses control characters in header values; here the server must",
)
def bad_header(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """/bad-header/KIND: a response header value (or name) with CR, LF, NUL or CRLF injection."""
    kind = environ["PATH_INFO"].split("/")[2]
    header = {
        "cr": ("X-Bad", "a\rb"),
        "lf": ("X-Bad", "a\nb"),
        "nul": ("X-Bad", "a\x00b"),
        "crlf": ("X-Bad", "a\r\nSet-Cookie: injected=1"),
        "name-crlf": ("X-Bad\r\nInjected", "v"),
        "name-colon": ("X-Bad: yes", "v"),
    }[kind]
    start_response("200 OK", [("Content-Type", "text/plain"), header])
    return [b"must not be sent"]


@route(
    "mutated-headers",
    validated=False,
    why_not="the validator checks the list when start_response is called, as the server does; the change comes after",
)
def mutated_headers(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """/mutated-headers/KIND: valid headers to start_response, then the list is changed before the body."""
    kind = environ["PATH_INFO"].split("/")[2]
    headers = [("Content-Type", "text/plain"), ("X-Checked", "yes")]
    start_response("200 OK", headers)
    if kind == "not-a-tuple":
        headers.append("X-Bad: not a tuple")  # type: ignore[arg-type]
    elif kind == "crlf":
        headers.append(("X-Bad", "a\r\nSet-Cookie: injected=1"))
    elif kind == "not-str":
        headers[1] = ("X-Checked", 42)  # type: ignore[list-item]
    elif kind == "cleared":
        headers.clear()
    else:
        headers.extend(("X-Many", str(i)) for i in range(200))
    return [b"body"]


#: One list for every /shared-headers request, changed in place: the server must check it again each time, however
#: often it sees the same list.
_SHARED_HEADERS = [("Content-Type", "text/plain"), ("X-Round", "0")]


@route(
    "shared-headers",
    validated=False,
    why_not="the crlf case would be refused by the validator first; the server's own check is what is tested",
)
def shared_headers(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """/shared-headers/VALUE: the module-level list with its second pair replaced by (X-Round, VALUE) first.

    VALUE "crlf" puts a value with CR LF there; "grown" appends a pair (and takes it out again after the call).
    """
    value = environ["PATH_INFO"].split("/")[2]
    _SHARED_HEADERS[1] = ("X-Round", "a\r\nSet-Cookie: injected=1" if value == "crlf" else value)
    if value == "grown":
        _SHARED_HEADERS.append(("X-Grown", "yes"))
    try:
        start_response("200 OK", _SHARED_HEADERS)
    finally:
        if value == "grown":
            _SHARED_HEADERS.pop()
    return [b"shared"]


@route("scribble")
def scribble(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Changes its environ (values replaced, keys removed and added): the next request's must not show it."""
    environ["PATH_INFO"] = "/scribbled"
    environ["REQUEST_METHOD"] = "SCRIBBLED"
    environ["X_ADDED"] = "added"
    del environ["QUERY_STRING"]
    del environ["REMOTE_PORT"]
    environ["wsgi.input"] = None
    return text(start_response, b"scribbled")


def factory() -> WSGIApp:
    """For --factory: build the router."""
    record("factory called")
    return app


class CallableInstance:
    """An instance with a two-argument __call__: detected as WSGI."""

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        return app(environ, start_response)


instance = CallableInstance()
not_callable = 42


# --- applications that break PEP 3333 on purpose: the server must answer 500, never crash ----------

_STASH: dict[str, Any] = {}
_WHY_BROKEN = "breaks PEP 3333 on purpose (the validator would raise first); the server must cope"


@route("broken", validated=False, why_not=_WHY_BROKEN)
def broken(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:  # noqa: PLR0911 (one per kind)
    """/broken/KIND: one kind of misbehaviour."""
    kind = environ["PATH_INFO"].split("/")[2]
    if kind == "yield-str":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return ["text, not bytes"]  # type: ignore[list-item]
    if kind == "return-none":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return None  # type: ignore[return-value]
    if kind == "iter-raises":

        class Bad:
            def __iter__(self) -> Iterator[bytes]:
                raise RuntimeError("broken: __iter__ raises")

        start_response("200 OK", [("Content-Type", "text/plain")])
        return Bad()
    if kind == "bad-status":
        start_response("not a status", [("Content-Type", "text/plain")])
        return [b"x"]
    if kind == "int-header":
        start_response("200 OK", [("Content-Length", 5)])
        return [b"hello"]
    if kind == "bytes-status":
        start_response(b"200 OK", [])
        return [b"x"]
    if kind == "headers-not-list":
        start_response("200 OK", None)
        return [b"x"]
    if kind == "write-str":
        writer = start_response("200 OK", [("Content-Type", "text/plain")])
        writer("text")
        return []
    raise ValueError(kind)


@route("stash", validated=False, why_not="keeps the server's own objects past the request on purpose")
def stash(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Keep wsgi.input, start_response and write() for /use-stash to misuse after the request ended."""
    writer = start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "7")])
    _STASH.update(
        input=environ["wsgi.input"], start_response=start_response, write=writer, errors=environ["wsgi.errors"]
    )
    return [b"stashed"]


@route("use-stash")
def use_stash(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Call every stashed object of an earlier request; report what each did."""
    outcomes = {}
    attempts: dict[str, Callable[[], object]] = {
        "input.read": lambda: _STASH["input"].read(10),
        "input.readline": lambda: _STASH["input"].readline(-1),
        "input.iter": lambda: list(_STASH["input"]),
        "start_response": lambda: _STASH["start_response"]("500 Oops", [("Content-Type", "text/plain")]),
        "write": lambda: _STASH["write"](b"late"),
        "errors.write": lambda: _STASH["errors"].write("late errors write\n"),
    }
    for name, attempt in attempts.items():
        try:
            result = attempt()
        except Exception as error:  # noqa: BLE001 (any exception is a refusal)
            outcomes[name] = f"raised {type(error).__name__}"
        else:
            outcomes[name] = f"returned {result!r}"
    return as_json(start_response, outcomes)


@route("read-some")
def read_some(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """/read-some?n=N: read N bytes of the body, leave the rest."""
    data = environ["wsgi.input"].read(int(query(environ)["n"]))
    return text(start_response, data)


@route("bad-input-args", validated=False, why_not="calls wsgi.input methods with wrong arguments on purpose")
def bad_input_args(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """Wrong argument types to the server's wsgi.input; report what each raised, then read the body."""
    stream = environ["wsgi.input"]
    outcomes = {}
    for name, call in {
        "read-str": lambda: stream.read("x"),
        "read-float": lambda: stream.read(1.5),
        "read-two": lambda: stream.read(1, 2),
        "readline-str": lambda: stream.readline("x"),
        "readlines-str": lambda: stream.readlines("x"),
        "read-huge": lambda: stream.read(1 << 62),
    }.items():
        try:
            result = call()
        except Exception as error:  # noqa: BLE001 (any exception is a refusal)
            outcomes[name] = f"raised {type(error).__name__}"
        else:
            outcomes[name] = f"returned {result!r}"
    return as_json(start_response, outcomes)
