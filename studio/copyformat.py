"""Postgres COPY's text format, written (plain Python, no Django).

One row a line, columns separated by tabs, ``\\N`` for SQL NULL; in a value, the backslash, tab,
newline and carriage return are escaped with a backslash.  The loads that write COPY text
themselves (events, audit results) instead of row by row through the driver use these.
"""

from __future__ import annotations

import re

NULL = "\\N"
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_SPECIAL = re.compile(r"[\\\t\n\r]")


def text_field(value: str | None) -> str:
    """A text value as a COPY field."""
    if value is None:
        return NULL
    return value.translate(_ESCAPES) if _SPECIAL.search(value) else value
