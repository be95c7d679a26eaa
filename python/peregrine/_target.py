"""Turn the application given to `peregrine.run()` into the `MODULE:ATTR` the server imports.

The server is a separate executable with its own embedded interpreter: it
cannot receive a Python object, only the name of one. An application object is
therefore looked up as a module-level global: first in the module it says it
comes from (`__module__`, right for functions and classes), then in every
loaded module (an instance's `__module__` names its class's module, such as
`flask.app`), the `__main__` script last, since importing a script again runs
its top level again. A script run as `python serve.py` is imported by the
server as `serve` from its directory, which joins `--python-path`.
"""

from __future__ import annotations

import keyword
import sys
import sysconfig
from dataclasses import dataclass
from importlib.machinery import PathFinder
from pathlib import Path
from types import ModuleType

from ._binary import PeregrineError

_FIX = (
    "The server imports the application by name, as 'module:attr' (it is a separate executable and cannot be "
    "handed a Python object): bind the application to a module-level name (app = ...) in an importable module, "
    "or pass that name as a string, e.g. peregrine.run('myproject.web:app'); for an application built by a "
    "function, pass 'module:function' with factory=True."
)


class ApplicationNotImportableError(PeregrineError, ValueError):
    """`peregrine.run()` was given an object (or string) the server could not import by name."""


@dataclass(frozen=True)
class Target:
    """What the server imports: `MODULE:ATTR`, and a directory it must find the module in (if any)."""

    reference: str
    directory: str | None = None


def _module_directory(module: ModuleType, name: str) -> str | None:
    """The sys.path entry `module` (imported as `name`) was found under, unless the server has it anyway."""
    file = getattr(module, "__file__", None)
    if not isinstance(file, str):
        return None
    root = Path(file).resolve().parent
    if Path(file).name == "__init__.py":
        root = root.parent
    for _ in range(name.count(".")):
        root = root.parent
    standard = {str(Path(path).resolve()) for path in sysconfig.get_paths().values()}
    return None if str(root) in standard else str(root)


def _file_of(module: ModuleType) -> Path | None:
    file = getattr(module, "__file__", None)
    return Path(file).resolve() if isinstance(file, str) else None


def _script_name(module: ModuleType) -> tuple[str, str | None]:
    """The name under which the server can import the `__main__` module, and its directory; or refuse."""
    spec = getattr(module, "__spec__", None)
    if spec is not None and spec.name not in ("__main__", ""):  # python -m package.module
        return spec.name, _module_directory(module, spec.name)
    file = getattr(module, "__file__", None)
    if not isinstance(file, str):
        raise ApplicationNotImportableError(
            "peregrine.run() got an application defined in __main__ of an interactive session or `python -c`, "
            "which the server cannot import. " + _FIX
        )
    path = Path(file).resolve()
    name = path.stem
    problem = None
    if path.suffix != ".py" or not name.isidentifier() or keyword.iskeyword(name):
        problem = f"its file name {path.name} is not an importable module name"
    elif name in sys.builtin_module_names or name in sys.stdlib_module_names:
        problem = f"its name '{name}' is a module of the standard library"
    elif name in sys.modules and _file_of(sys.modules[name]) != path:
        problem = f"its name '{name}' is already another imported module"
    else:
        found = PathFinder.find_spec(name, [str(path.parent)])
        if found is None or found.origin is None or Path(found.origin).resolve() != path:
            problem = f"'{name}' does not import as {path} from {path.parent}"
    if problem is not None:
        raise ApplicationNotImportableError(
            f"peregrine.run() got an application defined in the script {path}, but {problem}. " + _FIX
        )
    return name, str(path.parent)


def _global_name(module: ModuleType, application: object) -> str | None:
    """A module-level name of `module` bound to `application` (a public one if there is one)."""
    namespace = getattr(module, "__dict__", None)
    if not isinstance(namespace, dict):
        return None
    names = [name for name, value in list(namespace.items()) if value is application and isinstance(name, str)]
    names = [name for name in names if name.isidentifier()]
    public = [name for name in names if not name.startswith("_")]
    chosen = public or names
    return chosen[0] if chosen else None


def _candidate_modules(application: object) -> list[ModuleType]:
    """Modules to search, best first: the declared module, every other loaded one, `__main__` last."""
    declared = sys.modules.get(str(getattr(application, "__module__", "")))
    main = sys.modules.get("__main__")
    others = [module for module in list(sys.modules.values()) if isinstance(module, ModuleType)]
    ordered = [declared] if declared is not None and declared is not main else []
    ordered += [module for module in others if module is not declared and module is not main]
    if main is not None:
        ordered.append(main)
    return ordered


def resolve(application: object) -> Target:
    """The `MODULE:ATTR` (and directory) for `application`: a string given as is, or an object's global name."""
    if isinstance(application, str):
        module_name, _, attribute = application.partition(":")
        if not module_name or not attribute:
            raise ApplicationNotImportableError(
                f"peregrine.run() needs the application as 'module:attr' (e.g. 'myproject.web:app'), "
                f"got {application!r}"
            )
        return Target(application)
    if not callable(application):
        raise TypeError(
            f"peregrine.run() needs a WSGI or ASGI application (a callable) or its 'module:attr' name, "
            f"got {application!r} ({type(application).__name__})"
        )
    for module in _candidate_modules(application):
        name = _global_name(module, application)
        if name is None:
            continue
        if module.__name__ == "__main__":
            module_name, directory = _script_name(module)
        else:
            module_name, directory = module.__name__, _module_directory(module, module.__name__)
        return Target(f"{module_name}:{name}", directory)
    raise ApplicationNotImportableError(
        f"peregrine.run() got the application {application!r}, which no loaded module binds to a global name. " + _FIX
    )
