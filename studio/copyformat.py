"""Postgres COPY's text format, both ways (plain Python, no Django).

One row a line, columns separated by tabs, ``\\N`` for SQL NULL; in a value, the backslash, tab,
newline and carriage return are escaped with a backslash.  The loads that write COPY text
themselves (events, audit results) instead of row by row through the driver write it with
these, and the audit on arrival reads the events' text back with them.
"""

from __future__ import annotations

import re

NULL = "\\N"
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_SPECIAL = re.compile(r"[\\\t\n\r]")
_ESCAPED = re.compile(r"\\(.)")
_UNESCAPE = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def needs_escaping(text: str) -> bool:
    """Whether ``text`` holds a character COPY escapes (one check over several values joined
    is cheaper than one per value)."""
    return _SPECIAL.search(text) is not None


def text_field(value: str | None) -> str:
    """A text value as a COPY field."""
    if value is None:
        return NULL
    return value.translate(_ESCAPES) if _SPECIAL.search(value) else value


def json_field(text: str | None) -> str:
    """JSON text as a COPY field.  JSON text holds no raw control characters (every encoder
    escapes them), so only its backslashes need escaping."""
    if text is None:
        return NULL
    return text.replace("\\", "\\\\") if "\\" in text else text


def text_value(field: str) -> str | None:
    """A text field's value (``text_field`` read back)."""
    if field == NULL:
        return None
    if "\\" not in field:
        return field
    return _ESCAPED.sub(lambda m: _UNESCAPE.get(m.group(1), m.group(1)), field)


def json_text(field: str) -> str | None:
    """A JSON field's text (``json_field`` read back)."""
    if field == NULL:
        return None
    return field.replace("\\\\", "\\") if "\\" in field else field
