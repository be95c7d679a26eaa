"""peregrine: a WSGI/ASGI application server whose host is a native executable.

The package is a thin launcher: `peregrine` (or `python -m peregrine`) replaces
itself with the Swift binary that `pip install` compiled against this
interpreter, telling it which interpreter to embed.
"""

from __future__ import annotations

from ._binary import BinaryNotFoundError, PeregrineError, binary_path, exec_binary

__version__ = "0.1.0"

__all__ = ["BinaryNotFoundError", "PeregrineError", "__version__", "binary_path", "exec_binary"]
