"""A WSGI application that reports what configuration reached it (tests/e2e/test_config_sources.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable


def app(environ: dict[str, object], start_response: Callable[..., object]) -> Iterable[bytes]:
    """`/?var=NAME` reports os.environ[NAME]; always the pid, cwd and sys.path[0]."""
    query = parse_qs(str(environ.get("QUERY_STRING", "")))
    names = query.get("var", [])
    body = json.dumps(
        {
            "pid": os.getpid(),
            "cwd": str(Path.cwd()),
            "path0": sys.path[0],
            "module": __file__,
            "env": {name: os.environ.get(name) for name in names},
        }
    ).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]
