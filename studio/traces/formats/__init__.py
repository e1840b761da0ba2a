"""Log formats: streaming parsers from a binary file to canonical events.  No Django here.

Every parser is ``parse(file, options=None, name="")``: ``file`` is read incrementally (an
Inspect ``.eval`` archive member by member), ``name`` is the file's name (used by formats whose
records may lack a session).  It yields, in file order, canonical events::

    {"session": str, "step": int | None, "lifeline": str, "timestamp": str | None (ISO 8601),
     "input": ..., "output": ..., "data": {...}, "labels": [str] | None,
     "event_id": str | None, "message": {"id", "peer", "kind"} | None,
     "line": int}            # where the event came from, for error reports

and ``LineError(line, reason, pointer)`` for every record that cannot be imported; a bad record
never stops the ones after it.  Options that cannot work raise ``OptionsError`` before anything
is yielded; ``check_options`` validates them up front (and for CSV, ``check_csv_header`` checks
the mapping against the header).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import BinaryIO

from . import csvlog, inspect_logs, openai_chat, otlp_files
from .base import LineError, OptionsError, binary_reason
from .csvlog import parse_csv
from .inspect_logs import parse_inspect
from .jsonl import parse_jsonl
from .openai_chat import parse_openai
from .otlp_files import parse_otlp

Parser = Callable[..., Iterator[dict | LineError]]

PARSERS: dict[str, Parser] = {
    "jsonl": parse_jsonl,
    "csv": parse_csv,
    "openai": parse_openai,
    "otlp": parse_otlp,
    "inspect": parse_inspect,
}


def _no_options(options: dict | None) -> None:
    if options:
        raise OptionsError("JSONL logs take no options", field=f"options.{min(options)}")


_CHECKS = {"jsonl": _no_options, "csv": csvlog.check_options,
           "openai": openai_chat.check_options, "otlp": otlp_files.check_options,
           "inspect": inspect_logs.check_options}


def check_options(format: str, options: dict | None) -> None:
    """OptionsError unless ``format`` is known and ``options`` suit it."""
    if format not in PARSERS:
        raise OptionsError(f"unknown format {format!r}; formats are {', '.join(PARSERS)}",
                           field="format")
    if options is not None and not isinstance(options, dict):
        raise OptionsError("options must be a JSON object", field="options")
    _CHECKS[format](options)


def check_csv_header(file: BinaryIO, options: dict) -> None:
    """OptionsError naming the first mapped column the file's header lacks."""
    csvlog.check_header(options, csvlog.read_header(file, options))


def parse(format: str, file: BinaryIO, options: dict | None = None,
          name: str = "") -> Iterator[dict | LineError]:
    check_options(format, options)
    return PARSERS[format](file, options or {}, name=name)


__all__ = [
    "PARSERS",
    "LineError",
    "OptionsError",
    "binary_reason",
    "check_csv_header",
    "check_options",
    "parse",
    "parse_csv",
    "parse_inspect",
    "parse_jsonl",
    "parse_openai",
    "parse_otlp",
]
