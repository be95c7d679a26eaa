"""`peregrine.run()` without a server: keyword arguments to options, application objects to MODULE:ATTR.

The end-to-end half (a real server started by `run()`, and the option table
checked against `peregrine --help`) is tests/e2e/test_python_api.py. Here
`exec_binary` is replaced so a `block=True` call records the command line
instead of replacing the test process.
"""

from __future__ import annotations

import keyword
import re
import sys
import textwrap
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
# The package from the source tree (not an installed copy).

import peregrine  # noqa: E402 (after the sys.path entry above)
from peregrine import _options, _run, _target  # noqa: E402
from peregrine._options import OPTIONS, command_line  # noqa: E402


class Executed(Exception):  # noqa: N818 (a signal from the fake exec, not an error)
    """What `exec_binary` was called with."""

    def __init__(self, argv: list[str]) -> None:
        super().__init__(argv)
        self.argv = argv


@pytest.fixture
def fake_exec(monkeypatch: pytest.MonkeyPatch) -> None:
    """`run(block=True)` raises `Executed(argv)` instead of replacing the process."""

    def record(argv: list[str]) -> None:
        raise Executed(list(argv))

    monkeypatch.setattr(_run, "exec_binary", record)


def executed(app: object, **options: object) -> list[str]:
    """The command line `run(app, **options)` would exec (needs `fake_exec`)."""
    with pytest.raises(Executed) as raised:
        peregrine.run(app, **options)  # type: ignore[arg-type]
    return raised.value.argv


def write_module(root: Path, dotted: str, source: str) -> Path:
    """Write module `dotted` (packages made as needed) under `root`; returns its file."""
    parts = dotted.split(".")
    directory = root
    for package in parts[:-1]:
        directory = directory / package
        directory.mkdir(exist_ok=True)
        (directory / "__init__.py").touch()
    path = directory / f"{parts[-1]}.py"
    path.write_text(textwrap.dedent(source))
    return path


WSGI_SOURCE = """
    def app(environ, start_response):
        start_response("200 OK", [])
        return [b"ok"]
"""


# --- keyword arguments to options ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"host": "::"}, ["--host", "::"]),
        ({"port": 8000}, ["--port", "8000"]),
        ({"workers": 4, "max_requests": 0}, ["--workers", "4", "--max-requests", "0"]),
        ({"max_body": "16m"}, ["--max-body", "16m"]),
        ({"max_body": 1024}, ["--max-body", "1024"]),
        ({"unix": Path("/run/app.sock")}, ["--unix", "/run/app.sock"]),
        ({"unix_mode": 0o660}, ["--unix-mode", "660"]),
        ({"unix_mode": "640"}, ["--unix-mode", "640"]),
        ({"access_log": True}, ["--access-log"]),
        ({"access_log": False}, []),
        ({"http2": False}, ["--no-http2"]),
        ({"http2": True}, []),
        (
            {"lifespan": False, "uvloop": False, "websockets": False},
            ["--no-websockets", "--no-lifespan", "--no-uvloop"],
        ),
        ({"python_path": ["src", Path("lib")]}, ["--python-path", "src", "--python-path", "lib"]),
        ({"python_path": "src"}, ["--python-path", "src"]),
        ({"fd": [3, 4]}, ["--fd", "3", "--fd", "4"]),
        ({"reload_include": ("*.py", "*.toml")}, ["--reload-include", "*.py", "--reload-include", "*.toml"]),
        ({"forwarded_allow_ips": ["10.0.0.0/8", "unix"]}, ["--forwarded-allow-ips", "10.0.0.0/8,unix"]),
        ({"forwarded_allow_ips": "*"}, ["--forwarded-allow-ips", "*"]),
        ({"log_level": "WARNING"}, ["--log-level", "WARNING"]),
        ({"root_path": None, "port": None}, []),
    ],
)
def test_each_kind_of_option_becomes_its_command_line_words(options: dict[str, object], words: list[str]) -> None:
    assert command_line(options) == words


def test_options_come_out_in_the_order_of_help_whatever_the_keyword_order() -> None:
    assert command_line({"workers": 2, "access_log": True, "port": 0}) == [
        "--port", "0", "--access-log", "--workers", "2",
    ]  # fmt: skip


def test_certificates_and_keys_are_written_in_pairs_since_each_key_belongs_to_the_preceding_certificate() -> None:
    assert command_line({"tls_key": ["a.key", "b.key"], "tls_cert": ["a.pem", "b.pem"]}) == [
        "--tls-cert", "a.pem", "--tls-key", "a.key", "--tls-cert", "b.pem", "--tls-key", "b.key",
    ]  # fmt: skip
    single = command_line({"tls_cert": "a.pem", "tls_key": Path("a.key")})
    assert single == ["--tls-cert", "a.pem", "--tls-key", "a.key"]


@pytest.mark.parametrize(
    "options",
    [{"tls_cert": ["a.pem", "b.pem"], "tls_key": ["a.key"]}, {"tls_key": "a.key"}, {"tls_cert": "a.pem"}],
)
def test_certificates_without_as_many_keys_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="tls_cert and tls_key pair up"):
        command_line(options)


@pytest.mark.parametrize(
    ("keyword", "hint"),
    [
        ("max_bdy", "did you mean 'max_body'"),
        ("worker", "did you mean 'workers'"),
        ("no_http2", "write http2=False for --no-http2"),
        ("no_lifespan", "write lifespan=False for --no-lifespan"),
        ("zzzzzz", "--max-body is max_body"),
    ],
)
def test_an_unknown_keyword_is_a_type_error_naming_it_with_a_hint(keyword: str, hint: str) -> None:
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{keyword}'") as raised:
        command_line({keyword: 1})
    assert hint in str(raised.value)


@pytest.mark.parametrize(
    ("keyword", "value", "expected"),
    [
        ("port", "8000", "port must be an int"),
        ("port", True, "port must be an int"),
        ("port", 80.0, "port must be an int"),
        ("max_body", 1.5, "max_body must be an int (bytes) or a string"),
        ("max_body", False, "max_body must be an int (bytes) or a string"),
        ("host", 127, "host must be a string"),
        ("unix", b"/run/app.sock", "unix must be a string or a path"),
        ("unix_mode", 6.6, "unix_mode must be an int such as 0o660"),
        ("access_log", "yes", "access_log must be True or False"),
        ("access_log", 1, "access_log must be True or False"),
        ("http2", 0, "http2 must be True or False"),
        ("python_path", [1], "python_path must be a string or a path"),
        ("python_path", {"src"}, "python_path must be a string or a path"),
        ("fd", ["3"], "fd must be an int"),
        ("forwarded_allow_ips", ["10.0.0.1", 2], "forwarded_allow_ips must be a string or a list of strings"),
        ("workers", [1, 2], "workers must be an int"),
    ],
)
def test_a_wrong_type_is_a_type_error_naming_the_keyword(keyword: str, value: object, expected: str) -> None:
    with pytest.raises(TypeError, match=re.escape(expected)) as raised:
        command_line({keyword: value})
    # The value shown is the offending one: the element, for a list of a repeatable option.
    shown = value[-1] if isinstance(value, list) and keyword in ("python_path", "fd") else value
    assert f"got {shown!r} ({type(shown).__name__})" in str(raised.value)


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        ("log_level", "loud"),
        ("protocol", "cgi"),
        ("tls_client_cert", "off"),
        ("scheme", "ftp"),
        ("lifespan_scope", "x"),
    ],
)
def test_a_value_outside_a_fixed_set_is_a_value_error_listing_the_choices(keyword: str, value: str) -> None:
    option = _options.BY_KEYWORD[keyword]
    with pytest.raises(ValueError, match=f"{keyword} must be one of {', '.join(option.choices)}"):
        command_line({keyword: value})


def test_every_option_has_one_keyword_usable_as_a_python_keyword_argument() -> None:
    keywords = [option.keyword for option in OPTIONS]
    assert len(set(keywords)) == len(keywords)
    assert all(word.isidentifier() and not keyword.iskeyword(word) for word in keywords)
    assert len({option.name for option in OPTIONS}) == len(OPTIONS)
    negated = [option for option in OPTIONS if option.kind is _options.Kind.NEGATED]
    assert all(option.name == "--no-" + option.keyword.replace("_", "-") for option in negated)


# --- run(): what it would exec -------------------------------------------------------------------------------


@pytest.mark.usefixtures("fake_exec")
def test_run_with_a_string_execs_the_server_with_the_options_then_the_application() -> None:
    argv = executed("myproject.web:app", port=8080, max_body="16m", http2=False, access_log=True)
    assert argv == ["--port", "8080", "--max-body", "16m", "--access-log", "--no-http2", "myproject.web:app"]


@pytest.mark.usefixtures("fake_exec")
def test_run_with_an_object_execs_its_module_name_with_the_module_directory_on_the_python_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_module(tmp_path, "pyapi_objects", WSGI_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__("pyapi_objects")
    argv = executed(module.app, port=0, python_path=["src"])
    assert argv == ["--port", "0", "--python-path", "src", "--python-path", str(tmp_path), "pyapi_objects:app"]
    assert executed(module.app, python_path=str(tmp_path)) == ["--python-path", str(tmp_path), "pyapi_objects:app"]


@pytest.mark.usefixtures("fake_exec")
def test_run_checks_every_keyword_before_starting_anything() -> None:
    with pytest.raises(TypeError, match="'max_bdy'"):
        peregrine.run("app:app", max_bdy="1m")
    with pytest.raises(TypeError, match="block must be True or False"):
        peregrine.run("app:app", block="yes")  # type: ignore[call-overload]


@pytest.mark.parametrize("target", ["app", "app:", ":app", ""])
def test_a_string_that_is_not_module_colon_attr_is_refused(target: str) -> None:
    with pytest.raises(peregrine.ApplicationNotImportableError, match="'module:attr'"):
        peregrine.run(target)


def test_run_inside_the_server_refuses_to_start_another(monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedded interpreter has sys.argv == ["peregrine"] and the launcher's variable set."""
    monkeypatch.setattr(sys, "argv", ["peregrine"])
    monkeypatch.setenv("PEREGRINE_PYTHON_EXECUTABLE", sys.executable)
    with pytest.raises(peregrine.NestedRunError, match='if __name__ == "__main__"'):
        peregrine.run("app:app")


# --- application objects to MODULE:ATTR ----------------------------------------------------------------------


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory on sys.path for test modules; they leave sys.modules afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path  # type: ignore[misc]
    for name in set(sys.modules) - before:
        del sys.modules[name]


def test_a_function_resolves_to_its_module_and_name(modules: Path) -> None:
    write_module(modules, "pyapi_function", WSGI_SOURCE)
    module = __import__("pyapi_function")
    assert _target.resolve(module.app) == _target.Target("pyapi_function:app", str(modules))


def test_an_instance_resolves_to_the_module_that_binds_it_not_its_class_module(modules: Path) -> None:
    write_module(modules, "pyapi_framework", "class App:\n    def __call__(self, environ, start_response): ...\n")
    write_module(modules, "pyapi_site", "from pyapi_framework import App\n\napplication = App()\n")
    module = __import__("pyapi_site")
    assert _target.resolve(module.application).reference == "pyapi_site:application"


def test_a_module_in_a_package_puts_the_directory_above_the_package_on_the_path(modules: Path) -> None:
    write_module(modules, "pyapi_pkg.web", WSGI_SOURCE)
    (modules / "pyapi_pkg" / "__init__.py").write_text("from pyapi_pkg.web import app\n")
    package = __import__("pyapi_pkg")
    # The declared module (the function's __module__) wins over the package that re-exports it.
    assert _target.resolve(package.app) == _target.Target("pyapi_pkg.web:app", str(modules))


def test_a_public_name_is_preferred_to_a_private_alias(modules: Path) -> None:
    write_module(modules, "pyapi_alias", "class App:\n    def __call__(self, scope, receive, send): ...\n\n"
                 "_hidden = App()\nvisible = _hidden\n")  # fmt: skip
    module = __import__("pyapi_alias")
    assert _target.resolve(module.visible).reference == "pyapi_alias:visible"


def test_an_object_no_module_binds_is_refused_with_how_to_fix_it() -> None:
    def local_app(environ: object, start_response: object) -> list[bytes]:
        return []

    with pytest.raises(peregrine.ApplicationNotImportableError) as raised:
        peregrine.run(local_app)
    message = str(raised.value)
    assert "no loaded module binds to a global name" in message
    assert "imports the application by name" in message
    assert "factory=True" in message
    assert isinstance(raised.value, ValueError)


def test_something_that_is_not_an_application_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="needs a WSGI or ASGI application"):
        peregrine.run(42)  # type: ignore[call-overload]


def fake_main(monkeypatch: pytest.MonkeyPatch, file: Path | None, spec_name: str | None = None) -> types.ModuleType:
    """Install a stand-in `__main__` (a script at `file`, or an interactive session) binding `app`."""
    main = types.ModuleType("__main__")
    if file is not None:
        main.__file__ = str(file)
    main.__spec__ = types.SimpleNamespace(name=spec_name) if spec_name else None  # type: ignore[assignment]
    main.app = lambda environ, start_response: []  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "__main__", main)
    return main


def test_an_application_in_a_script_run_as_a_file_is_imported_from_the_script_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = write_module(tmp_path, "serve_pyapi", "")
    main = fake_main(monkeypatch, script)
    assert _target.resolve(main.app) == _target.Target("serve_pyapi:app", str(tmp_path))


def test_an_application_in_a_module_run_with_dash_m_keeps_its_module_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = write_module(tmp_path, "pyapi_tool.serve", "")
    main = fake_main(monkeypatch, script, spec_name="pyapi_tool.serve")
    assert _target.resolve(main.app) == _target.Target("pyapi_tool.serve:app", str(tmp_path))


def test_a_module_binding_the_application_is_preferred_to_the_main_script(
    modules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = write_module(modules, "main_pyapi", "")
    main = fake_main(monkeypatch, script)
    write_module(modules, "pyapi_binds_main", "app = None\n")
    other = __import__("pyapi_binds_main")
    other.app = main.app
    assert _target.resolve(main.app).reference == "pyapi_binds_main:app"


@pytest.mark.parametrize(
    ("file_name", "problem"),
    [
        ("json.py", "is a module of the standard library"),
        ("my-app.py", "is not an importable module name"),
        ("serve.pyw", "is not an importable module name"),
        ("class.py", "is not an importable module name"),
    ],
)
def test_a_script_whose_name_does_not_import_back_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file_name: str, problem: str
) -> None:
    script = tmp_path / file_name
    script.write_text("")
    main = fake_main(monkeypatch, script)
    with pytest.raises(peregrine.ApplicationNotImportableError, match=problem):
        _target.resolve(main.app)


def test_a_script_shadowed_by_a_package_of_the_same_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = write_module(tmp_path, "pyapi_twin", "")
    (tmp_path / "pyapi_twin").mkdir()
    (tmp_path / "pyapi_twin" / "__init__.py").touch()
    main = fake_main(monkeypatch, script)
    with pytest.raises(peregrine.ApplicationNotImportableError, match="does not import as"):
        _target.resolve(main.app)


def test_an_application_of_an_interactive_session_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    main = fake_main(monkeypatch, None)
    with pytest.raises(peregrine.ApplicationNotImportableError, match="interactive session or `python -c`"):
        _target.resolve(main.app)
