"""JSON Lines in the audit command's schema, one event per line, plus free fields::

    {"session": str, "step": int (optional), "lifeline": str, "timestamp": ISO 8601,
     "input": ..., "output": ..., "data": {...}, "labels": [atom, ...], "event_id": str,
     "message": {"id", "peer", "kind": "send" | "receive"}, ...free fields}

Free top-level fields (``env`` in the shared logs) go into ``data``.

Multi-agent logs put each event on its ``lifeline`` (the agent) and give the message an event
sends or receives either nested, as above, or flat at the top level, as the database stores it::

    {"session": "s", "lifeline": "TestRunner", "message_id": "report-1",
     "message_peer": "Committer", "message_kind": "send", ...}

``peer`` is the intended receiver of a send and the sender of a receive; it may be left out.  A
message needs an id and a kind of ``send`` or ``receive``; a line that gets either wrong, or that
gives the message both ways, is reported with its number.  Whether every receive has its send is
a property of the whole session, checked where the session is read as a message sequence chart.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from studio.monitor.audit import json_kind

from .base import (
    CONTENT_FIELDS,
    NO_EVENT_FIELDS,
    LineError,
    decode_json_line,
    event_from_object,
    read_lines,
    too_long,
)

OPTIONS: frozenset[str] = frozenset()

# The flat spelling of a message, mapped to the key of the nested one.
FLAT_MESSAGE_FIELDS = {"message_id": "id", "message_peer": "peer", "message_kind": "kind"}


def parse_jsonl(file: BinaryIO, options: dict | None = None,
                name: str = "") -> Iterator[dict | LineError]:
    for number, raw in read_lines(file):
        if raw is None:
            yield LineError(number, too_long())
            continue
        if not raw.strip():
            continue
        value, problem = decode_json_line(raw)
        if problem is None:
            value, problem = nest_flat_message(value)
        if problem is None:
            event = event_from_object(value, number)
            if isinstance(event, dict):
                if any(key in value for key in CONTENT_FIELDS):
                    yield event
                    continue
                event = NO_EVENT_FIELDS  # a summary line would become an empty step
            problem = event
        yield LineError(number, problem)


def nest_flat_message(obj: Any) -> tuple[Any, str | None]:
    """``obj`` with top-level ``message_id`` / ``message_peer`` / ``message_kind`` moved into a
    nested ``message`` (which the shared event check validates), or the reason it cannot be.
    Objects without flat message fields are returned as they are."""
    if not isinstance(obj, dict) or not (
            "message_id" in obj or "message_peer" in obj or "message_kind" in obj):
        return obj, None  # the common case, decided without building anything
    flat = {key: obj[key] for key in FLAT_MESSAGE_FIELDS if key in obj}
    if not flat:
        return obj, None
    if obj.get("message") is not None:
        return None, ("the message is given twice: use either 'message' {id, peer, kind} or "
                      "the fields message_id, message_peer and message_kind")
    present = {key: value for key, value in flat.items() if value not in (None, "")}
    for key, value in present.items():
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            return None, f"field {key!r} must be a string, got {json_kind(value)}"
    if not present:  # empty columns of a tabular export: no message
        return {k: v for k, v in obj.items() if k not in FLAT_MESSAGE_FIELDS}, None
    if "message_id" not in present:
        return None, "field 'message_id' is required when the event sends or receives a message"
    if "message_kind" not in present:
        return None, ("field 'message_kind' is required with 'message_id': 'send' or "
                      "'receive'")
    kind = present["message_kind"]
    if kind not in ("send", "receive"):
        return None, f"field 'message_kind' must be 'send' or 'receive', got {kind!r}"[:300]
    nested = {FLAT_MESSAGE_FIELDS[key]: value for key, value in present.items()}
    out = {k: v for k, v in obj.items() if k not in FLAT_MESSAGE_FIELDS}
    out["message"] = nested
    return out, None
