"""Start bjoern on MODULE:ATTR HOST PORT (bjoern has no command line of its own)."""

from __future__ import annotations

import importlib
import sys

import bjoern  # type: ignore[import-untyped]


def main() -> None:
    """Import the application named on the command line and serve it until killed."""
    target, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    module_name, _, attribute = target.partition(":")
    application = getattr(importlib.import_module(module_name), attribute)
    bjoern.run(application, host, port)


if __name__ == "__main__":
    main()
