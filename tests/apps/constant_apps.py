"""Reports whether this module's code constants are immortal (issue #16: worker threads in parallel).

The test copies this file to a fresh directory and imports it with
PYTHONDONTWRITEBYTECODE=1, so it is compiled from source, never read from a
.pyc. See `share_code_constants` in Sources/PyBridge/Runtime.swift.
"""

from __future__ import annotations

import json
import sys
from importlib.machinery import SourceFileLoader
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

# Not a small int (those are immortal anyway): a constant a loop would load.
MODULUS = 1_000_003


def _modulus() -> int:
    return 1_000_003


def wsgi(environ: dict[str, Any], start_response: Callable[..., object]) -> Iterable[bytes]:
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    loader = SourceFileLoader.source_to_code
    body = json.dumps(
        {
            "gil": gil,
            "version": list(sys.version_info[:2]),
            # CPython reports an immortal object's count as 2**32 - 1 (3.13) or more.
            "refcount": sys.getrefcount(_modulus()),
            "loader": loader.__qualname__,
        }
    ).encode()
    start_response("200 OK", [("content-type", "application/json"), ("content-length", str(len(body)))])
    return [body]
