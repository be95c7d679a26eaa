"""peregrine's TOML reader (`--config`) held to Python's tomllib (issue 18 item 3).

Every document both accept gives the same values (read back from
`--print-config`, which prints a TOML document of what was set); every
document tomllib refuses, peregrine refuses too, with a line number; and
what TOML has but a configuration does not need (floats, dates, inline
tables, ...) is refused with a message that names it.
"""

from __future__ import annotations

import os
import subprocess
import tomllib
from typing import TYPE_CHECKING

import pytest

from installed import peregrine_command

if TYPE_CHECKING:
    from pathlib import Path

APP = "config_apps:app"


def environment() -> dict[str, str]:
    """The test's environment without variables that would configure the server."""
    return {
        name: value
        for name, value in os.environ.items()
        if name not in {"WEB_CONCURRENCY", "FORWARDED_ALLOW_IPS"}
        and not (name.startswith("PEREGRINE_") and name != "PEREGRINE_BIN")
    }


def peregrine_reads(tmp_path: Path, document: bytes) -> subprocess.CompletedProcess[str]:
    """`peregrine --print-config --config p.toml` on `document`."""
    (tmp_path / "p.toml").write_bytes(document)
    return subprocess.run(
        [*peregrine_command(), "--print-config", "--config", "p.toml", APP],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
        check=False,
    )


def normalised(values: dict[str, object]) -> dict[str, object]:
    """Option names with dashes; integers as the text the option receives."""
    table = values.get("peregrine", values)
    assert isinstance(table, dict)

    def text(value: object) -> object:
        if isinstance(value, list):
            return [text(item) for item in value]
        return value if isinstance(value, bool) else str(value)

    return {key.replace("_", "-"): text(value) for key, value in table.items()}


# Documents both readers accept. Keys are options whose values peregrine
# checks loosely (any host, any python-path), so the comparison is about
# reading, not validation.
BOTH_ACCEPT: list[tuple[str, bytes]] = [
    ("bare keys and comments", b'# comment\nhost = "h"  # after\n\n\naccess-log = true\nno-uvloop = false\n'),
    ("no final newline", b'host = "h"'),
    ("tabs and no spaces", b'host\t=\t"h"\nport=80\n'),
    ("quoted keys", b'"host" = "q"\n\'port\' = 81\n'),
    ("underscores for dashes", b'python_path = ["a"]\nreload_include = ["*.py"]\n'),
    ("basic string escapes", b'host = "a\\tb\\n\\"q\\" \\\\ \\b\\f\\r"\n'),
    ("unicode escapes", b'host = "\\u00e9\\U0001F600\\u0000"\n'),
    ("raw unicode", 'host = "caf\u00e9 \u2603"\n# \u00e9 in a comment\n'.encode()),
    ("literal strings", b"host = 'C:\\dir\\n \"q\"'\n"),
    ("empty strings", b"python-path = [\"\", '']\n"),
    ("decimal integers", b"port = +8_0_8_0\nmax-requests = 0\nmax-requests-jitter = -0\n"),
    ("hex octal binary", b"port = 0xFF\nbacklog = 0o17\nmax-connections = 0b1010\n"),
    ("negative integer as a string value", b"python-path = [-5, 7]\n"),
    ("largest integers", b"python-path = [9223372036854775807, -9223372036854775808]\n"),
    ("multi-line array", b"python-path = [\n  \"a\",  # one\n  # between\n  'b',\n]\n"),
    ("empty arrays", b"python-path = []\nreload-dir = [ ]\n"),
    ("array trailing comma", b'reload-include = ["*.py",]\n'),
    ("peregrine table", b'# top\n[peregrine]\nhost = "t"\n'),
    ("spaced table header", b'[ peregrine ]\nhost = "t"\n'),
    ("quoted table header", b'["peregrine"]\nhost = "t"\n'),
    ("crlf line endings", b'host = "c"\r\nport = 1\r\n'),
    ("crlf in an array", b'python-path = [\r\n "a",\r\n]\r\n'),
    ("flags false", b"access-log = false\nhttp3 = false\n"),
]


@pytest.mark.parametrize(("name", "document"), BOTH_ACCEPT, ids=[case[0] for case in BOTH_ACCEPT])
def test_documents_both_accept_give_the_same_values(tmp_path: Path, name: str, document: bytes) -> None:
    expected = normalised(tomllib.loads(document.decode()))
    result = peregrine_reads(tmp_path, document)
    assert result.returncode == 0, f"{name}: {result.stderr}"
    printed = tomllib.loads(result.stdout)
    assert printed.pop("app") == APP
    assert normalised(printed) == expected


# Documents tomllib refuses, and the line peregrine names.
BOTH_REFUSE: list[tuple[str, bytes, int]] = [
    ("duplicate key", b"port = 1\nhost = 'h'\nport = 2\n", 3),
    ("duplicate quoted key", b'port = 1\n"port" = 2\n', 2),
    ("unterminated string", b'host = "abc\n', 1),
    ("newline in a literal string", b"ok = 1\nhost = 'a\nb'\n", 2),
    ("invalid escape", b'host = "\\q"\n', 1),
    ("surrogate escape", b'host = "\\uD800"\n', 1),
    ("short unicode escape", b'host = "\\u12"\n', 1),
    ("control character in a string", b'host = "a\x01b"\n', 1),
    ("delete character in a string", b'host = "a\x7fb"\n', 1),
    ("control character in a comment", b"# \x07\n", 1),
    ("invalid utf-8 in a string", b'host = "\xc3"\n', 1),
    ("invalid utf-8 in a comment", b"port = 1 # a # \xc3 # b\n", 1),
    ("leading zero", b"\nport = 01\n", 2),
    ("double underscore", b"port = 1__0\n", 1),
    ("trailing underscore", b"port = 1_\n", 1),
    ("leading underscore", b"port = _1\n", 1),
    ("signed hex", b"port = +0x1\n", 1),
    ("empty hex", b"port = 0x\n", 1),
    ("bad hex digit", b"port = 0xG\n", 1),
    ("bare word", b"host = localhost\n", 1),
    ("missing value", b"host =\n", 1),
    ("missing equals", b"host 'h'\n", 1),
    ("missing key", b"= 1\n", 1),
    ("two pairs on a line", b"port = 1 backlog = 2\n", 1),
    ("unterminated array", b'python-path = ["a"\n', 2),
    ("array without comma", b'python-path = ["a" "b"]\n', 1),
    ("array with only a comma", b"python-path = [,]\n", 1),
    ("lone carriage return", b"port = 1\rbacklog = 2\n", 1),
    ("table twice", b"[peregrine]\nport = 1\n[peregrine]\n", 3),
    ("unclosed table header", b"[peregrine\nport = 1\n", 1),
    ("byte order mark", b"\xef\xbb\xbfport = 1\n", 1),
    ("capitalised boolean", b"access-log = True\n", 1),
]


@pytest.mark.parametrize(("name", "document", "line"), BOTH_REFUSE, ids=[case[0] for case in BOTH_REFUSE])
def test_documents_tomllib_refuses_are_refused_with_their_line(
    tmp_path: Path, name: str, document: bytes, line: int
) -> None:
    with pytest.raises((tomllib.TOMLDecodeError, UnicodeDecodeError)):
        tomllib.loads(document.decode("utf-8"))
    result = peregrine_reads(tmp_path, document)
    assert result.returncode == 2, f"{name}: peregrine accepted it:\n{result.stdout}"
    errors = [text for text in result.stderr.splitlines() if text.startswith("peregrine: error:")]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(f"peregrine: error: p.toml:{line}: "), errors[0]


# Valid TOML a configuration does not need: refused, each with its name.
PEREGRINE_REFUSES: list[tuple[str, bytes, str]] = [
    ("float", b"port = 1.5\n", "floats are not supported"),
    ("exponent", b"port = 1e3\n", "floats are not supported"),
    ("infinity", b"port = inf\n", "floats are not supported"),
    ("nan", b"port = nan\n", "floats are not supported"),
    ("date", b"host = 1979-05-27\n", "dates and times are not supported"),
    ("date-time", b"host = 1979-05-27T07:32:00Z\n", "dates and times are not supported"),
    ("date-time with a space", b"host = 1979-05-27 07:32:00\n", "dates and times are not supported"),
    ("time", b"host = 07:32:00\n", "dates and times are not supported"),
    ("inline table", b"host = { a = 1 }\n", "inline tables are not supported"),
    ("dotted key", b"peregrine.host = 'h'\n", "dotted keys are not supported"),
    ("other table", b"[server]\nport = 1\n", "unknown table [server]"),
    ("sub-table", b"[peregrine.tls]\ncert = 'a'\n", "only the [peregrine] table is supported"),
    ("array of tables", b"[[peregrine]]\nport = 1\n", "arrays of tables ([[...]]) are not supported"),
    ("multi-line basic string", b'host = """h"""\n', "multi-line strings are not supported"),
    ("multi-line literal string", b"host = '''h'''\n", "multi-line strings are not supported"),
    ("nested array", b"python-path = [['a']]\n", "nested arrays are not supported"),
    ("integer beyond 64 bits", b"port = 9223372036854775808\n", "invalid integer"),
    ("keys before the table", b"port = 1\n[peregrine]\nhost = 'h'\n", "put every key under [peregrine] or none"),
]


@pytest.mark.parametrize(("name", "document", "message"), PEREGRINE_REFUSES, ids=[c[0] for c in PEREGRINE_REFUSES])
def test_toml_a_configuration_does_not_need_is_refused_by_name(
    tmp_path: Path, name: str, document: bytes, message: str
) -> None:
    tomllib.loads(document.decode())  # valid TOML
    result = peregrine_reads(tmp_path, document)
    assert result.returncode == 2, f"{name}: accepted"
    assert message in result.stderr, result.stderr
