"""Reads a request body in blocks as it arrives and reports its size and hash.

    peregrine --max-body 1g examples.upload:app
    curl --data-binary @some-file localhost:8000
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    digest = hashlib.sha256()
    size = 0
    stream = environ["wsgi.input"]
    while block := stream.read(65536):
        digest.update(block)
        size += len(block)
    body = f"{size} bytes, sha256 {digest.hexdigest()}\n".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
