"""`peregrine.run()`: start the server from Python, as `uvicorn.run()` does.

    import peregrine

    if __name__ == "__main__":
        peregrine.run("myproject.web:app", port=8000, workers=4, max_body="16m")

Every option of `peregrine --help` is a keyword argument (see `_options`).
With `block=True` (the default) the process becomes the server, as the
`peregrine` command does; with `block=False` the server runs as a child
process and `run()` returns a `ServerProcess` once it listens.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING, Literal, NoReturn, overload

from ._binary import (
    PYTHON_ENV,
    BinaryNotFoundError,
    PeregrineError,
    checked_binary_path,
    exec_binary,
    server_environment,
)
from ._options import command_line
from ._process import QUIET_LEVELS, ServerProcess
from ._target import resolve

if TYPE_CHECKING:
    from collections.abc import Callable

#: How long `run(block=False)` waits for the server to listen, by default.
READY_TIMEOUT = 30.0
#: The sys.argv the server gives the interpreter it embeds.
_EMBEDDED_ARGV = ["peregrine"]


class NestedRunError(PeregrineError, RuntimeError):
    """`peregrine.run()` was called inside the server, while it imported the application's module."""


def _inside_server() -> bool:
    """Whether this interpreter is the one the server embeds (started by the launcher or by `run()`)."""
    return PYTHON_ENV in os.environ and sys.argv == _EMBEDDED_ARGV


def _with_directory(value: object, directory: str) -> object:
    """`python_path` with `directory` (where the application's module is) appended unless present."""
    if value is None:
        return [directory]
    entries = list(value) if isinstance(value, (list, tuple)) else [value]
    if any(isinstance(entry, (str, os.PathLike)) and os.fspath(entry) == directory for entry in entries):
        return entries
    return [*entries, directory]


def _fallback_url(options: dict[str, object]) -> str:
    """The URL prefix to report when the server's `listening on` line is hidden (see `_process`)."""
    unix = options.get("unix")
    if isinstance(unix, (str, os.PathLike)):
        return f"unix:{os.fspath(unix)}"
    host = options.get("host")
    host = host if isinstance(host, str) else "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    scheme = "https" if options.get("tls_cert") is not None else "http"
    return f"{scheme}://{host}"


def _quiet(options: dict[str, object]) -> bool:
    """Whether the server will not log `listening on` (a log level above info)."""
    level = options.get("log_level") or os.environ.get("PEREGRINE_LOG_LEVEL", "")
    return isinstance(level, str) and level.lower() in QUIET_LEVELS


@overload
def run(
    app: str | Callable[..., object],
    /,
    *,
    block: Literal[True] = True,
    ready_timeout: float = READY_TIMEOUT,
    **options: object,
) -> NoReturn: ...
@overload
def run(
    app: str | Callable[..., object],
    /,
    *,
    block: Literal[False],
    ready_timeout: float = READY_TIMEOUT,
    **options: object,
) -> ServerProcess: ...
@overload
def run(
    app: str | Callable[..., object],
    /,
    *,
    block: bool,
    ready_timeout: float = READY_TIMEOUT,
    **options: object,
) -> ServerProcess: ...
def run(
    app: str | Callable[..., object],
    /,
    *,
    block: bool = True,
    ready_timeout: float = READY_TIMEOUT,
    **options: object,
) -> ServerProcess:
    """Serve `app` with the peregrine server; every keyword but `block` and `ready_timeout` is an option.

    `app` is `"module:attr"` (what the `peregrine` command takes), or the
    application object itself: the server is a separate executable that
    imports the application by name, so an object must be bound to a
    module-level name of an importable module (a script run as
    `python serve.py` counts, as module `serve`); otherwise
    `ApplicationNotImportableError` (a `ValueError`) says how to fix it.

    Options: `max_body="16m"` is `--max-body 16m`; `access_log=True` adds the
    flag (False leaves it out); a `--no-X` flag is `X=False`
    (`http2=False`, `lifespan=False`); a repeatable option takes a list
    (`python_path=["src"]`, `tls_cert=[...]` with `tls_key=[...]`); `None`
    means not given. An unknown keyword or a value of the wrong type raises
    `TypeError` naming it; the server checks ranges and exits with status 2
    and one line for a bad value.

    `block=True`: the process becomes the server and never returns.
    `block=False`: the server starts as a child process; once it listens
    (within `ready_timeout` seconds, else `ServerStartError` with its log)
    `run()` returns a `ServerProcess` with `.url`, `.port`, `.pid`,
    `.stop()` and `.wait()`.

    Call it under `if __name__ == "__main__":` in a module that is also the
    application's: the server imports that module, and a `run()` at its top
    level would run again inside the server (`NestedRunError`).
    """
    if _inside_server():
        raise NestedRunError(
            "peregrine.run() was called inside the server while it imported the application's module: "
            'call it under `if __name__ == "__main__":` so that importing the module does not start a server'
        )
    if not isinstance(block, bool):
        raise TypeError(f"peregrine.run(): block must be True or False, got {block!r}")
    target = resolve(app)
    given = dict(options)
    if target.directory is not None:
        given["python_path"] = _with_directory(given.get("python_path"), target.directory)
    argv = [*command_line(given), target.reference]
    if block:
        exec_binary(argv)
    path = checked_binary_path()
    try:
        process = subprocess.Popen(
            ["peregrine", *argv],
            executable=path,
            env=server_environment(),
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
    except OSError as error:
        raise BinaryNotFoundError(path, f"could not be started: {error.strerror or error}") from error
    server = ServerProcess(process, [str(path), *argv], quiet=_quiet(given), fallback_url=_fallback_url(given))
    try:
        server.wait_ready(ready_timeout)
    except BaseException:  # interrupted while waiting, say: do not leave the server behind
        if server.returncode is None:
            server.stop()
        raise
    return server
