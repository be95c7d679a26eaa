"""WSGI applications for the environ the server reuses (tests/e2e/test_wsgi_environ_reuse.py).

The server keeps an environ the application neither kept nor changed and
fills it in for the next request. These applications are not wrapped in
`wsgiref.validate`: the validator replaces wsgi.input and wsgi.errors in
the environ, which is a change, so under it no environ is ever reused and
the path under test would not run. `mutating` is the reference: it changes
every environ it gets (a key of its own, left out of what it reports), so
the server copies its template for each of its requests.

Each answers with its environ as JSON: strs as they are, other values by
type name, and `pid` and `python` beside them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

Environ = dict[str, Any]
StartResponse = Callable[..., Any]

KEPT: list[tuple[Environ, dict[str, Any]]] = []


def snapshot(environ: Environ) -> dict[str, Any]:
    """The environ's keys and values (strs as they are, the rest by type name)."""
    return {
        key: value if isinstance(value, str) else type(value).__name__
        for key, value in environ.items()
        if key != "x.reference"
    }


def answer(environ: Environ, start_response: StartResponse) -> list[bytes]:
    """The environ as JSON, after what the path asks the application to do with it."""
    path = environ["PATH_INFO"]
    if path == "/kept":
        changed = [i for i, (env, seen) in enumerate(KEPT) if snapshot(env) != seen]
        body = json.dumps({"kept": len(KEPT), "changed": changed}).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]
    seen = snapshot(environ)
    if path.startswith("/keep"):
        KEPT.append((environ, dict(seen)))
    elif path.startswith("/add"):
        environ["x.added"] = path
    elif path.startswith("/delete"):
        environ.pop("HTTP_X_GONE", None)
    elif path.startswith("/rewrite"):
        environ["PATH_INFO"] = "/rewritten"
        environ["QUERY_STRING"] = "rewritten"
        environ["HTTP_USER_AGENT"] = "rewritten"
    elif path.startswith("/same-value"):
        environ["PATH_INFO"] = environ["PATH_INFO"]  # a write of the value it holds: no change
    elif path.startswith("/raise"):
        raise RuntimeError("the application fails on purpose")
    seen["pid"] = str(os.getpid())
    seen["python"] = "{}.{}".format(*sys.version_info[:2])
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps(seen).encode()]


def plain(environ: Environ, start_response: StartResponse) -> list[bytes]:
    """Reads the environ and leaves it as it was (unless the path says otherwise)."""
    return answer(environ, start_response)


def mutating(environ: Environ, start_response: StartResponse) -> list[bytes]:
    """Changes every environ, so none is reused: the reference for `plain`."""
    environ["x.reference"] = True
    return answer(environ, start_response)


def generator(environ: Environ, start_response: StartResponse) -> Iterator[bytes]:
    """Reads the environ lazily, from the response iterator (which holds it until closed)."""
    yield from answer(environ, start_response)


def iterable(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """`plain` or `generator`, by the first path segment's suffix."""
    if environ["PATH_INFO"].endswith("-lazy"):
        return generator(environ, start_response)
    return plain(environ, start_response)
