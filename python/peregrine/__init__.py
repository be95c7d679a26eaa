"""peregrine: a WSGI/ASGI application server whose host is a native executable.

The package launches the Swift binary that `pip install` compiled against this
interpreter, telling it which interpreter to embed: `peregrine` (or
`python -m peregrine`) replaces itself with it, and so does
`peregrine.run("module:app", **options)` from Python, or, with `block=False`,
starts it as a child process and returns a `ServerProcess`.
"""

from __future__ import annotations

from ._binary import BinaryNotFoundError, PeregrineError, binary_path, exec_binary
from ._process import ServerProcess, ServerStartError
from ._run import NestedRunError, run
from ._target import ApplicationNotImportableError

__version__ = "0.1.0"

__all__ = [
    "ApplicationNotImportableError",
    "BinaryNotFoundError",
    "NestedRunError",
    "PeregrineError",
    "ServerProcess",
    "ServerStartError",
    "__version__",
    "binary_path",
    "exec_binary",
    "run",
]
