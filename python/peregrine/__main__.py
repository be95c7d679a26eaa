"""Console entry point: `peregrine [options] MODULE:ATTR` and `python -m peregrine`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ._binary import PeregrineError, exec_binary

if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server binary with `argv` (default: this process's arguments).

    On success this never returns: the process becomes the server. It returns
    2 with a one-line message when the binary cannot be started.
    """
    arguments = sys.argv[1:] if argv is None else list(argv)
    try:
        exec_binary(arguments)
    except PeregrineError as error:
        sys.stderr.write(f"peregrine: {error}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
