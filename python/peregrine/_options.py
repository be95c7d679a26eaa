"""The server's command-line options as Python keyword arguments, and their translation.

`peregrine.run(app, **options)` accepts one keyword per option of `peregrine --help`:
the option's name without its dashes, `-` turned into `_` (`--max-body` is
`max_body`), except that a `--no-X` flag is the keyword `X` given `False`
(`--no-http2` is `http2=False`). tests/e2e/test_python_api.py checks that this
table names exactly the options in `--help`; an option added to the server is
one row below.

Values are checked for their type here (wrong type: `TypeError` naming the
keyword); ranges and cross-option rules stay with the server, which refuses a
bad command line with one line and exit status 2.
"""

from __future__ import annotations

import difflib
import enum
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping


class Kind(enum.Enum):
    """How a keyword's value becomes command-line words."""

    #: `True` adds the flag, `False` leaves it out.
    FLAG = "flag"
    #: A `--no-X` flag, keyword `X`: `False` adds `--no-X`, `True` (the server's default) leaves it out.
    NEGATED = "negated flag"
    #: An `int` (never a `bool`): counts, ports, milliseconds.
    INTEGER = "integer"
    #: An `int` of bytes, or a string with a k/m/g suffix (`"16m"`).
    SIZE = "size"
    #: A string.
    TEXT = "text"
    #: A string or an `os.PathLike`.
    PATH = "path"
    #: Permission bits: an `int` (written in octal: `0o660` becomes `660`) or an octal string.
    OCTAL = "octal"
    #: A comma-separated list: a string, or a list of strings joined with commas.
    COMMA_LIST = "comma-separated list"


@dataclass(frozen=True)
class Option:
    """One server option: its command-line name, how its value is written, and whether it repeats."""

    name: str
    kind: Kind
    #: Given once per element of a list (a single value is a list of one).
    repeatable: bool = False
    #: The values the server accepts, when it is a fixed set.
    choices: tuple[str, ...] = ()

    @property
    def keyword(self) -> str:
        """The keyword argument of `peregrine.run()` for this option."""
        bare = self.name.removeprefix("--")
        if self.kind is Kind.NEGATED:
            bare = bare.removeprefix("no-")
        return bare.replace("-", "_")


# In the order of `peregrine --help`.
OPTIONS: tuple[Option, ...] = (
    Option("--config", Kind.PATH),
    Option("--print-config", Kind.FLAG),
    Option("--env-file", Kind.PATH),
    Option("--app-dir", Kind.PATH),
    Option("--host", Kind.TEXT),
    Option("--port", Kind.INTEGER),
    Option("--unix", Kind.PATH),
    Option("--unix-mode", Kind.OCTAL),
    Option("--fd", Kind.INTEGER, repeatable=True),
    Option("--backlog", Kind.INTEGER),
    Option("--protocol", Kind.TEXT, choices=("wsgi", "asgi", "auto")),
    Option("--factory", Kind.FLAG),
    Option("--root-path", Kind.TEXT),
    Option("--max-connections", Kind.INTEGER),
    Option("--max-body", Kind.SIZE),
    Option("--max-header-size", Kind.SIZE),
    Option("--keep-alive", Kind.INTEGER),
    Option("--request-timeout", Kind.INTEGER),
    Option("--min-body-rate", Kind.SIZE),
    Option("--python-path", Kind.PATH, repeatable=True),
    Option("--log-level", Kind.TEXT, choices=("debug", "info", "warning", "error", "silent")),
    Option("--access-log", Kind.FLAG),
    Option("--access-log-format", Kind.TEXT),
    Option("--access-log-file", Kind.PATH),
    Option("--request-id-header", Kind.TEXT),
    Option("--log-format", Kind.TEXT, choices=("text", "json")),
    Option("--workers", Kind.INTEGER),
    Option("--free-threaded", Kind.FLAG),
    Option("--wsgi-threads", Kind.INTEGER),
    Option("--worker-timeout", Kind.INTEGER),
    Option("--graceful-timeout", Kind.INTEGER),
    Option("--max-requests", Kind.INTEGER),
    Option("--max-requests-jitter", Kind.INTEGER),
    Option("--reload", Kind.FLAG),
    Option("--reload-dir", Kind.PATH, repeatable=True),
    Option("--reload-include", Kind.TEXT, repeatable=True),
    Option("--no-http2", Kind.NEGATED),
    Option("--http2-only", Kind.FLAG),
    Option("--http2-max-streams", Kind.INTEGER),
    Option("--no-websockets", Kind.NEGATED),
    Option("--no-webtransport", Kind.NEGATED),
    Option("--ws-max-message", Kind.SIZE),
    Option("--ws-max-queue", Kind.INTEGER),
    Option("--ws-max-queue-bytes", Kind.SIZE),
    Option("--ws-ping-interval", Kind.INTEGER),
    Option("--ws-ping-timeout", Kind.INTEGER),
    Option("--ws-compress", Kind.FLAG),
    Option("--tls-cert", Kind.PATH, repeatable=True),
    Option("--tls-key", Kind.PATH, repeatable=True),
    Option("--tls-ciphers", Kind.TEXT),
    Option("--tls-ca", Kind.PATH),
    Option("--tls-client-cert", Kind.TEXT, choices=("optional", "required")),
    Option("--tls-handshake-timeout", Kind.INTEGER),
    Option("--tls-key-password", Kind.TEXT),
    Option("--tls-key-password-file", Kind.PATH),
    Option("--tls-min-version", Kind.TEXT, choices=("1.2", "1.3")),
    Option("--tls-ocsp", Kind.PATH, repeatable=True),
    Option("--http3", Kind.FLAG),
    Option("--quic-port", Kind.INTEGER),
    Option("--http3-max-streams", Kind.INTEGER),
    Option("--quic-idle-timeout", Kind.INTEGER),
    Option("--quic-stream-window", Kind.SIZE),
    Option("--quic-connection-window", Kind.SIZE),
    Option("--quic-congestion", Kind.TEXT, choices=("cubic", "newreno")),
    Option("--quic-key-update-interval", Kind.INTEGER),
    Option("--quic-log", Kind.PATH),
    Option("--quic-retry", Kind.FLAG),
    Option("--quic-retry-threshold", Kind.INTEGER),
    Option("--quic-max-datagram-size", Kind.INTEGER),
    Option("--quic-no-migration", Kind.FLAG),
    Option("--forwarded-allow-ips", Kind.COMMA_LIST),
    Option("--scheme", Kind.TEXT, choices=("http", "https")),
    Option("--proxy-protocol", Kind.FLAG),
    Option("--proxy-allow-ips", Kind.COMMA_LIST),
    Option("--health-path", Kind.TEXT),
    Option("--drain-delay", Kind.INTEGER),
    Option("--limit-concurrency", Kind.INTEGER),
    Option("--max-connection-age", Kind.INTEGER),
    Option("--header", Kind.TEXT, repeatable=True),
    Option("--server-header", Kind.TEXT),
    Option("--no-date-header", Kind.NEGATED),
    Option("--metrics-port", Kind.INTEGER),
    Option("--metrics-host", Kind.TEXT),
    Option("--no-lifespan", Kind.NEGATED),
    Option("--lifespan-scope", Kind.TEXT, choices=("worker", "process")),
    Option("--no-uvloop", Kind.NEGATED),
    Option("--version", Kind.FLAG),
    Option("--help", Kind.FLAG),
)

BY_KEYWORD: dict[str, Option] = {option.keyword: option for option in OPTIONS}

#: `--tls-key PATH` is the key of the `--tls-cert` just before it, so the two lists are written in pairs.
_PAIRED = ("tls_cert", "tls_key")


def _describe(value: object) -> str:
    return f"{value!r} ({type(value).__name__})"


def _unknown(keyword: str) -> TypeError:
    """The error for a keyword no option has, with the likeliest intended one."""
    message = f"peregrine.run() got an unexpected keyword argument '{keyword}'"
    negated = BY_KEYWORD.get(keyword.removeprefix("no_"))
    if keyword.startswith("no_") and negated is not None and negated.kind is Kind.NEGATED:
        return TypeError(f"{message}: write {negated.keyword}=False for {negated.name}")
    close = difflib.get_close_matches(keyword, BY_KEYWORD, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else " (options of `peregrine --help`: --max-body is max_body)"
    return TypeError(message + hint)


def _word(option: Option, value: object) -> str:
    """One value of `option` as a command-line word, or TypeError/ValueError naming the keyword."""
    kind = option.kind
    expected = {
        Kind.INTEGER: "an int",
        Kind.SIZE: "an int (bytes) or a string such as '16m'",
        Kind.TEXT: "a string",
        Kind.PATH: "a string or a path",
        Kind.OCTAL: "an int such as 0o660 or an octal string such as '660'",
        Kind.COMMA_LIST: "a string or a list of strings",
    }
    word: str | None = None
    if isinstance(value, bool):
        word = None  # a bool is an int to Python, never a number here
    elif kind in (Kind.INTEGER, Kind.SIZE) and isinstance(value, int):
        word = str(value)
    elif kind is Kind.OCTAL and isinstance(value, int):
        word = format(value, "o") if value >= 0 else str(value)
    elif kind in (Kind.SIZE, Kind.TEXT, Kind.OCTAL, Kind.COMMA_LIST) and isinstance(value, str):
        word = value
    elif kind is Kind.PATH and isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        word = path if isinstance(path, str) else None
    elif kind is Kind.COMMA_LIST and isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        word = ",".join(value)
    if word is None:
        raise TypeError(f"peregrine.run(): {option.keyword} must be {expected[kind]}, got {_describe(value)}")
    if option.choices and word.lower() not in option.choices:
        raise ValueError(f"peregrine.run(): {option.keyword} must be one of {', '.join(option.choices)}, got {value!r}")
    return word


def _values(option: Option, value: object) -> list[str]:
    """The words for every value of `option` (a repeatable option takes one value or a list of them)."""
    if option.repeatable and isinstance(value, (list, tuple)):
        return [_word(option, element) for element in value]
    return [_word(option, value)]


def _flag(option: Option, value: object) -> list[str]:
    if not isinstance(value, bool):
        raise TypeError(f"peregrine.run(): {option.keyword} must be True or False, got {_describe(value)}")
    present = value if option.kind is Kind.FLAG else not value
    return [option.name] if present else []


def command_line(options: Mapping[str, object]) -> list[str]:
    """The server's command-line options for `run()`'s keyword arguments (the application not included).

    A value of `None` means "not given": the server's default (or its other
    configuration sources) applies. Options come out in the order of the
    table, `--tls-cert`/`--tls-key` pairs interleaved.
    """
    for keyword in options:
        if keyword not in BY_KEYWORD:
            raise _unknown(keyword)
    given = {keyword: value for keyword, value in options.items() if value is not None}
    words: list[str] = []
    for option in OPTIONS:
        keyword = option.keyword
        if keyword == _PAIRED[0] and (keyword in given or _PAIRED[1] in given):
            words += _tls_pairs(given.get(_PAIRED[0]), given.get(_PAIRED[1]))
        if keyword not in given or keyword in _PAIRED:
            continue
        value = given[keyword]
        if option.kind in (Kind.FLAG, Kind.NEGATED):
            words += _flag(option, value)
        else:
            for word in _values(option, value):
                words += [option.name, word]
    return words


def _tls_pairs(certificates: object | None, keys: object | None) -> list[str]:
    """`--tls-cert C --tls-key K` per pair: the server takes each key as the preceding certificate's."""
    cert_words = [] if certificates is None else _values(BY_KEYWORD[_PAIRED[0]], certificates)
    key_words = [] if keys is None else _values(BY_KEYWORD[_PAIRED[1]], keys)
    if len(cert_words) != len(key_words):
        raise ValueError(
            f"peregrine.run(): tls_cert and tls_key pair up, one key per certificate; got {len(cert_words)} "
            f"certificate(s) and {len(key_words)} key(s)"
        )
    words: list[str] = []
    for certificate, key in zip(cert_words, key_words, strict=True):
        words += ["--tls-cert", certificate, "--tls-key", key]
    return words
