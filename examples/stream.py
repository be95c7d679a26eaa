"""A streaming WSGI response: each line reaches the client as it is produced.

    peregrine examples.stream:app
    curl -N localhost:8000
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
    for i in range(5):
        yield f"tick {i}\n".encode()
        time.sleep(0.5)
