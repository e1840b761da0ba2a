"""CSV with a column mapping: which column holds the session, the step, the input, ...

Options (only ``session`` is required)::

    {"session": "col", "step": "col", "input": "col", "output": "col", "lifeline": "col",
     "timestamp": "col", "event_id": "col", "labels": "col", "data": ["col", ...],
     "delimiter": ","}

The first row is the header.  Labels are separated by ``;`` or ``|``.  An input or output cell
holding a JSON object (``{"tool": ..., "args": ...}``) is read as that object, any other cell as
text; data cells that are JSON numbers, ``true`` or ``false`` are read as such.  Empty cells are
null; a record without a step is numbered after the session's earlier steps.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from .base import (
    MAX_NAME_LENGTH,
    MAX_SESSION_LENGTH,
    MAX_STEP,
    LineError,
    OptionsError,
    loads,
    make_event,
    parse_timestamp,
)

COLUMN_OPTIONS = ("session", "step", "input", "output", "lifeline", "timestamp", "event_id",
                  "labels")
OPTIONS = frozenset(COLUMN_OPTIONS + ("data", "delimiter"))
LABEL_SEPARATORS = re.compile(r"[;|]")
NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def check_options(options: dict | None) -> None:
    """The mapping's shape, before any file is read."""
    options = options or {}
    unknown = sorted(set(options) - OPTIONS)
    if unknown:
        raise OptionsError(f"unknown CSV options {', '.join(unknown)}; options are "
                           f"{', '.join(sorted(OPTIONS))}", field=f"options.{unknown[0]}")
    if not options.get("session"):
        raise OptionsError("a CSV upload needs the column that holds the session: "
                           'options {"session": "column name", ...}', field="options.session")
    for key in COLUMN_OPTIONS:
        if key in options and not isinstance(options[key], str):
            raise OptionsError("must be the name of a column", field=f"options.{key}")
    data = options.get("data", [])
    if not isinstance(data, list) or not all(isinstance(c, str) for c in data):
        raise OptionsError("must be a list of column names", field="options.data")
    delimiter = options.get("delimiter", ",")
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\"\r\n":
        raise OptionsError("must be one character (not a quote or a line break)",
                           field="options.delimiter")


def check_header(options: dict, header: list[str]) -> dict[str, int]:
    """Column positions for the mapping; a column the header lacks is a field error naming it."""
    positions = {name: i for i, name in reversed(list(enumerate(header)))}
    shown = ", ".join(repr(h) for h in header[:30]) + (", ..." if len(header) > 30 else "")
    wanted = [(key, options[key]) for key in COLUMN_OPTIONS if options.get(key)]
    wanted += [("data", column) for column in options.get("data", [])]
    for key, column in wanted:
        if column not in positions:
            raise OptionsError(f"column {column!r} is not in the file's header; the header has "
                               f"{shown or 'no columns'}", field=f"options.{key}")
    return positions


def _text_reader(file: BinaryIO) -> io.TextIOWrapper:
    # Undecodable bytes become lone surrogates and are reported per record, not per file.
    return io.TextIOWrapper(file, encoding="utf-8-sig", errors="surrogateescape", newline="")


def read_header(file: BinaryIO, options: dict | None = None) -> list[str]:
    """The header row of a CSV file (reads ahead: the file position afterwards is undefined)."""
    text = _text_reader(file)
    try:
        row = next(csv.reader(text, delimiter=(options or {}).get("delimiter", ",")), [])
    except csv.Error as exc:
        raise OptionsError(f"the header row cannot be read: {exc}") from None
    finally:
        text.detach()
    return [cell.strip() for cell in row]


def _typed(cell: str) -> Any:
    if NUMBER.fullmatch(cell) and len(cell) < 400:
        try:
            return loads(cell)
        except ValueError:  # too large for a float
            return cell
    return {"true": True, "false": False}.get(cell, cell)


def _json_or_text(cell: str) -> Any:
    if cell.startswith("{"):
        try:
            value = loads(cell)
        except (ValueError, RecursionError):
            return cell
        if isinstance(value, dict):
            return value
    return cell


def parse_csv(file: BinaryIO, options: dict | None = None,
              name: str = "") -> Iterator[dict | LineError]:
    options = dict(options or {})
    check_options(options)
    text = _text_reader(file)
    reader = csv.reader(text, delimiter=options.get("delimiter", ","))
    try:
        try:
            header = [cell.strip() for cell in next(reader, [])]
        except csv.Error as exc:
            raise OptionsError(f"the header row cannot be read: {exc}") from None
        positions = check_header(options, header)
        columns = {key: positions[options[key]] for key in COLUMN_OPTIONS if options.get(key)}
        data_columns = [(column, positions[column]) for column in options.get("data", [])]
        width = len(header)
        previous_end = reader.line_num
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                line, previous_end = previous_end + 1, reader.line_num
                yield LineError(line, f"not a valid CSV record ({exc})")
                continue
            line, previous_end = previous_end + 1, reader.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) != width:
                yield LineError(line, f"the record has {len(row)} fields; the header has {width}")
                continue
            item = _event(row, columns, data_columns, line, options)
            yield item
    finally:
        text.detach()


def _event(row, columns, data_columns, line, options) -> dict | LineError:
    def cell(key: str) -> str | None:
        if key not in columns:
            return None
        value = row[columns[key]]
        return value if value != "" else None

    try:
        for value in row:
            value.encode("utf-8")
    except UnicodeEncodeError:
        return LineError(line, "not UTF-8 text")
    session = (cell("session") or "").strip()
    if not session:
        return LineError(line, f"column {options['session']!r} (the session) is empty")
    if len(session) > MAX_SESSION_LENGTH:
        return LineError(line, f"the session is longer than {MAX_SESSION_LENGTH} characters")
    step = None
    raw_step = cell("step")
    if raw_step is not None:
        try:
            step = int(raw_step.strip())
        except ValueError:
            return LineError(line, f"column {options['step']!r} (the step) must be a whole "
                                   f"number, got {raw_step[:40]!r}")
        if not 0 <= step <= MAX_STEP:
            return LineError(line, f"the step must be between 0 and {MAX_STEP}, got {step}")
    timestamp, problem = parse_timestamp(cell("timestamp"))
    if problem:
        return LineError(line, f"column {options['timestamp']!r}: {problem}")
    names = {}
    for key in ("lifeline", "event_id"):
        value = cell(key) or ""
        if len(value) > MAX_NAME_LENGTH:
            return LineError(line, f"column {options[key]!r} ({key}) is longer than "
                                   f"{MAX_NAME_LENGTH} characters")
        names[key] = value
    labels = None
    raw_labels = cell("labels")
    if raw_labels is not None:
        labels = [label.strip() for label in LABEL_SEPARATORS.split(raw_labels) if label.strip()]
    input_, output = cell("input"), cell("output")
    data = {column: (_typed(row[i]) if row[i] != "" else None) for column, i in data_columns}
    return make_event(session, step, line, lifeline=names["lifeline"], timestamp=timestamp,
                      input=_json_or_text(input_) if input_ is not None else None,
                      output=_json_or_text(output) if output is not None else None,
                      data=data, labels=labels, event_id=names["event_id"] or None)


