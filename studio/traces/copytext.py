"""The rows of an upload's direct COPY, read back from the COPY text (no Django).

The writer of ``studio.traces.services`` streams each batch of events to Postgres as COPY text
in the columns of ``DIRECT_COLUMNS``.  An audit on arrival running in a child process is sent
that same text once the batch is committed, and reads the rows from it here: the writer, whose
thread the load waits for, then spends nothing on handing the rows over.
"""

from __future__ import annotations

import re
from typing import Any

from .formats.base import fast_loads

# The columns of a directly COPYed event row, in the order the writer writes them.
DIRECT_COLUMNS = ("session_id", "step", "workspace_id", "upload_id", "source", "event_id",
                  "lifeline", "timestamp", "input", "output", "data", "labels", "message_id",
                  "message_peer", "message_kind")
_LIFELINE, _INPUT, _OUTPUT, _DATA, _LABELS = (
    DIRECT_COLUMNS.index(name) for name in ("lifeline", "input", "output", "data", "labels"))

NULL = "\\N"
_ESCAPED = re.compile(r"\\(.)")
_UNESCAPE = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def text_value(field: str) -> str | None:
    """A text column's value (COPY escapes the backslash, tab, newline and carriage return)."""
    if field == NULL:
        return None
    if "\\" not in field:
        return field
    return _ESCAPED.sub(lambda m: _UNESCAPE.get(m.group(1), m.group(1)), field)


def json_value(field: str) -> Any:
    """A JSON column's value: the writer escapes only the backslashes of JSON text (which
    holds no raw control characters), so undoubling them gives the JSON back."""
    if field == NULL:
        return None
    return fast_loads(field.replace("\\\\", "\\") if "\\" in field else field)


def monitor_rows(text: str) -> list[tuple]:
    """``(session_id, step, lifeline, input, output, data, labels)`` of every row of ``text``,
    in order: what an audit on arrival observes."""
    rows = []
    for line in text.split("\n"):
        if not line:
            continue
        fields = line.split("\t")
        rows.append((int(fields[0]), int(fields[1]), text_value(fields[_LIFELINE]) or "",
                     json_value(fields[_INPUT]), json_value(fields[_OUTPUT]),
                     json_value(fields[_DATA]), json_value(fields[_LABELS])))
    return rows
