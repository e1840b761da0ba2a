"""The rows of an upload's direct COPY, read back from the COPY text (no Django).

The writer of ``studio.traces.loading`` streams each batch of events to Postgres as COPY text
in the columns of ``DIRECT_COLUMNS``.  When the events were parsed in a child process
(``studio.traces.parsing``), the loading process holds them only as that text, and an audit on
arrival in the loading process reads the rows back from it here.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from studio.copyformat import NULL, json_text, text_value

from .formats.base import fast_loads

# The columns of a directly COPYed event row, in the order the writer writes them.
DIRECT_COLUMNS = ("session_id", "step", "workspace_id", "upload_id", "source", "event_id",
                  "lifeline", "timestamp", "input", "output", "data", "labels", "message_id",
                  "message_peer", "message_kind")
_LIFELINE, _INPUT, _OUTPUT, _DATA, _LABELS = (
    DIRECT_COLUMNS.index(name) for name in ("lifeline", "input", "output", "data", "labels"))

_LONG_DIGITS = re.compile(r"\d{19}")


def json_value(field: str) -> Any:
    """A JSON column's value."""
    text = json_text(field)
    return None if text is None else fast_loads(text)


def monitor_rows(text: str) -> list[tuple]:
    """``(session_id, step, lifeline, input, output, data, labels)`` of every row of ``text``,
    in order: what an audit on arrival observes."""
    # orjson reads every number of the batch as the json module does unless some run of 19
    # digits could be an integer beyond 64 bits: then each value is read on its own.
    exact = _LONG_DIGITS.search(text) is None
    rows = []
    for line in text.split("\n"):
        if not line:
            continue
        fields = line.split("\t")
        values = _json_values(fields) if exact else None
        if values is None:
            values = [json_value(fields[i]) for i in (_INPUT, _OUTPUT, _DATA, _LABELS)]
        rows.append((int(fields[0]), int(fields[1]), text_value(fields[_LIFELINE]) or "",
                     *values))
    return rows


def _json_values(fields: list[str]) -> list | None:
    """The row's four JSON columns read in one call (SQL NULL reads as JSON null, as in
    ``json_value``); None when orjson refuses them (``json_value`` then says why)."""
    parts = [fields[_INPUT], fields[_OUTPUT], fields[_DATA], fields[_LABELS]]
    joined = "[" + ",".join(["null" if p == NULL else p for p in parts]) + "]"
    if "\\" in joined:
        joined = joined.replace("\\\\", "\\")
    try:
        return orjson.loads(joined)
    except orjson.JSONDecodeError:
        return None
