"""A module that fails at import time: the CLI must show this traceback and exit 2."""

from __future__ import annotations


def _explode() -> None:
    raise ZeroDivisionError("broken_import explodes at import time")


_explode()
