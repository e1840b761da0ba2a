"""What a live delivery may carry: an event checked field by field before it is stored.

``clean_event`` turns one posted event into a ``Clean`` (or raises ``ItemError`` naming the field
at fault), so one bad event is refused on its own while the others of its batch are stored;
``checked_session_id`` refuses a session id that could not be stored or would read as another.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from studio.errors import ServiceError
from studio.logic.invisible import describe, find_invisible
from studio.traces.models import Event, TraceSession
from studio.workspaces.models import Workspace

SOURCE_LIVE = "live"
SOURCE_OTLP = "otlp"

SESSION_ID_MAX = 300     # TraceSession.external_id
EVENT_ID_MAX = 200       # Event.event_id
LIFELINE_MAX = 200       # Event.lifeline
MESSAGE_FIELD_MAX = 200  # Event.message_id / message_peer
MAX_EVENTS_PER_BATCH = 10_000
_JSON_DEPTH_MAX = 100

# The canonical event's fields; anything else an event carries is kept under ``data``.
_FIELDS = frozenset({"session", "step", "event_id", "lifeline", "timestamp", "input", "output",
                     "data", "labels", "message"})


class ItemError(ValueError):
    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field


def _json_problem(value: Any, depth: int = 0) -> str | None:
    """Why a JSON value cannot be stored (Postgres refuses NUL characters and unpaired
    surrogates; JSON has no NaN), or None."""
    if depth > _JSON_DEPTH_MAX:
        return f"is nested more than {_JSON_DEPTH_MAX} levels deep"
    if isinstance(value, str):
        if "\x00" in value:
            return "contains a NUL character"
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return "contains an unpaired surrogate (not valid Unicode)"
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "contains a non-finite number"
    if isinstance(value, dict):
        for key, item in value.items():
            problem = _json_problem(key, depth + 1) or _json_problem(item, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, (list, tuple)):
        for item in value:
            problem = _json_problem(item, depth + 1)
            if problem:
                return problem
    return None


def _text(value: Any, field: str, limit: int, *, allow_int: bool = False) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and allow_int:
        value = str(value)
    if not isinstance(value, str):
        raise ItemError(f"{field} must be a string", field)
    if not value or len(value) > limit:
        raise ItemError(f"{field} must be 1 to {limit} characters long", field)
    return value


def _timestamp(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value) or not 0 <= value < 253402300800:  # up to year 9999
            raise ItemError("timestamp must be seconds since 1970 or an ISO 8601 string",
                            "timestamp")
        return datetime.fromtimestamp(value, tz=UTC)
    if isinstance(value, str):
        try:
            moment = parse_datetime(value.replace("Z", "+00:00") if value.endswith("Z")
                                    else value)
        except ValueError:
            moment = None
        if moment is None:
            raise ItemError("timestamp must be an ISO 8601 date and time, e.g. "
                            "2025-01-31T12:00:00Z", "timestamp")
        moment = moment if timezone.is_aware(moment) else moment.replace(tzinfo=UTC)
        # Stored in UTC: databases refuse some offsets ISO 8601 allows (Postgres: +-15:59).
        try:
            return moment.astimezone(UTC)
        except OverflowError:
            raise ItemError("timestamp is out of range (years 1 to 9999 in UTC)",
                            "timestamp") from None
    raise ItemError("timestamp must be an ISO 8601 string or seconds since 1970", "timestamp")


@dataclass
class Clean:
    """A validated event, ready to be stored."""

    event_id: str | None
    lifeline: str
    timestamp: datetime | None
    input: Any
    output: Any
    data: dict
    labels: list[str] | None
    message_id: str = ""
    message_peer: str = ""
    message_kind: str = ""

    def model(self, workspace: Workspace, session: TraceSession, step: int,
              source: str) -> Event:
        return Event(workspace=workspace, session=session, step=step, source=source,
                     event_id=self.event_id, lifeline=self.lifeline, timestamp=self.timestamp,
                     input=self.input, output=self.output, data=self.data, labels=self.labels,
                     message_id=self.message_id, message_peer=self.message_peer,
                     message_kind=self.message_kind)


def clean_event(raw: Any, session_external_id: str, default_id: str | None = None) -> Clean:
    """Validate one posted event; raises ItemError naming the field at fault.

    The step is assigned on arrival (a ``step`` the event carries is not used); fields outside
    the canonical event are kept under ``data`` (without replacing what ``data`` holds).
    """
    if not isinstance(raw, dict):
        raise ItemError("an event must be a JSON object")
    problem = _json_problem(raw)
    if problem:
        raise ItemError(f"the event {problem}")
    session = raw.get("session")
    if session is not None and str(session) != session_external_id:
        raise ItemError(f"session {str(session)[:80]!r} is not this session "
                        f"({session_external_id[:80]!r})", "session")
    event_id = raw.get("event_id")
    event_id = (_text(event_id, "event_id", EVENT_ID_MAX, allow_int=True)
                if event_id is not None else default_id)
    lifeline = raw.get("lifeline")
    lifeline = "" if lifeline is None else _text(lifeline, "lifeline", LIFELINE_MAX)
    data = raw.get("data")
    if data is None:
        data = {}
    elif not isinstance(data, dict):
        raise ItemError("data must be an object", "data")
    extra = {k: v for k, v in raw.items() if k not in _FIELDS and k not in data}
    if extra:
        data = {**data, **extra}
    labels = raw.get("labels")
    if labels is not None and (
            not isinstance(labels, list) or not all(isinstance(a, str) and a for a in labels)):
        raise ItemError("labels must be a list of atom names (non-empty strings)", "labels")
    clean = Clean(event_id, lifeline, _timestamp(raw.get("timestamp")), raw.get("input"),
                  raw.get("output"), data, labels)
    message = raw.get("message")
    if message is not None:
        if not isinstance(message, dict):
            raise ItemError("message must be an object {id, peer, kind}", "message")
        kind = message.get("kind")
        if kind not in ("send", "receive"):
            raise ItemError("message.kind must be send or receive", "message.kind")
        clean.message_id = _text(message.get("id"), "message.id", MESSAGE_FIELD_MAX,
                                 allow_int=True)
        peer = message.get("peer")
        clean.message_peer = "" if peer is None else _text(peer, "message.peer",
                                                           MESSAGE_FIELD_MAX)
        clean.message_kind = kind
    return clean


def checked_session_id(value: Any) -> str:
    """``value`` if it can name a live session, else ``ServiceError`` (422)."""
    if not isinstance(value, str) or not value or len(value) > SESSION_ID_MAX:
        raise ServiceError(f"the session id must be 1 to {SESSION_ID_MAX} characters long",
                           field="session_id", status=422)
    if _json_problem(value):
        raise ServiceError("the session id must be valid text without NUL characters",
                           field="session_id", status=422)
    hidden = find_invisible(value)  # a session listed as one id that is another
    if hidden is not None:
        raise ServiceError(f"the session id contains {describe(value[hidden])} at position "
                           f"{hidden + 1}; a session id is visible text", field="session_id",
                           status=422)
    return value


