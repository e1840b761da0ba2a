"""What every log format shares: the canonical event, line errors, bounded line reading.

A parser yields, in file order, canonical events (plain dicts, see ``make_event``) and
``LineError``s; a bad line never stops the ones after it.  Nothing here imports Django.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, BinaryIO

import orjson

# The audit command's schema check and messages: an event it refuses is refused here too (the
# importers also check what the database needs: step range, field lengths, timestamps).
from studio.monitor.audit import check_event, json_kind

# The sizes the database keeps (traces models); checked here so a bad line is a line error, not
# a failed batch.
MAX_SESSION_LENGTH = 300
MAX_NAME_LENGTH = 200
MAX_STEP = 2**31 - 1
# A line (or a CSV record, or one Inspect sample) longer than this is refused unread, so memory
# stays bounded whatever the file holds.
MAX_LINE_BYTES = 32 * 1024 * 1024

EVENT_FIELDS = ("session", "step", "lifeline", "timestamp", "input", "output", "data", "labels",
                "event_id", "message")
MESSAGE_KINDS = ("send", "receive")
# What makes a line an event: a line with a session and none of these (a per-session summary,
# a verdict) would otherwise become an empty step of that session.
CONTENT_FIELDS = ("input", "output", "labels", "data", "lifeline", "message")
NO_EVENT_FIELDS = ("no event fields (input, output, labels, data, lifeline or message); is this "
                   "a summary line?")


@dataclass(frozen=True)
class LineError:
    """A record that was not imported: its line number (for whole-document formats the line where
    the record starts; for an Inspect .eval archive the sample's position in it), why, and for
    documents the JSON pointer of the faulty part."""

    line: int
    reason: str
    pointer: str = ""

    def __str__(self) -> str:
        where = f" ({self.pointer})" if self.pointer else ""
        return f"line {self.line}{where}: {self.reason}"


class OptionsError(ValueError):
    """Import options that cannot work with this file (a CSV mapping naming a missing column);
    ``field`` names the option at fault.  Raised before any event is produced."""

    def __init__(self, message: str, field: str = "options"):
        super().__init__(message)
        self.message = message
        self.field = field


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise ValueError(f"the number {text[:40]} is too large")
    return value


# NaN and Infinity (also a number like 1e999, which Python reads as infinity) are accepted by
# Python's json module, but they are not JSON and no database stores them.
DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def loads(text: str) -> Any:
    return DECODER.decode(text)


# orjson reads an integer beyond 64 bits as a float, where Python keeps it exact: text with a
# run of 19 digits or more is read by the json module.  Counting the digits first (in C) spares
# most lines the slower search.
_LONG_DIGITS = re.compile(rb"\d{19}")
_NOT_DIGITS = bytes(b for b in range(256) if not 48 <= b <= 57)


def _may_hold_long_integer(raw: bytes) -> bool:
    return len(raw.translate(None, _NOT_DIGITS)) >= 19 and _LONG_DIGITS.search(raw) is not None


def fast_loads(text: str, fallback=json.loads) -> Any:
    """``fallback(text)``'s value, found faster: orjson where it reads the text exactly as the
    json module does (no integers beyond 64 bits); what orjson refuses (NaN, infinities, lone
    surrogates) goes to ``fallback``, whose errors are the ones raised."""
    raw = text.encode("utf-8", "surrogatepass")
    if not _may_hold_long_integer(raw):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return fallback(text)


def decode_json_line(raw: bytes) -> tuple[Any, str | None]:
    """(value, None) or (None, reason) for one line of bytes; the audit command's messages."""
    if not _may_hold_long_integer(raw):
        try:
            return orjson.loads(raw), None
        except orjson.JSONDecodeError:
            pass  # the json module says why, in the audit command's words
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    try:
        return DECODER.decode(text), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at column {exc.colno})"
    except ValueError as exc:  # NaN, Infinity; integers too long to convert
        return None, f"not valid JSON ({exc})"
    except RecursionError:
        return None, "not valid JSON (nested too deeply)"


def read_lines(file: BinaryIO,
               max_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, bytes)`` for each line, without its end of line; ``bytes`` is None for a
    line longer than ``max_bytes``, which is skipped without being held in memory."""
    number = 0
    while True:
        raw = file.readline(max_bytes + 1)
        if not raw:
            return
        number += 1
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            while True:  # discard the rest of the long line
                rest = file.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
            yield number, None
            continue
        yield number, raw.rstrip(b"\r\n")


def too_long(max_bytes: int = MAX_LINE_BYTES) -> str:
    return f"line is longer than {max_bytes // (1024 * 1024)} MiB; not read"


def parse_timestamp(value: Any) -> tuple[str | None, str | None]:
    """(ISO 8601 in UTC, None) or (None, reason).  Strings in ISO 8601 (a missing offset means
    UTC) and numbers of seconds since 1970 are accepted."""
    if value is None:
        return None, None
    try:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, (int, float)):
            moment = datetime.fromtimestamp(value, tz=UTC)
        elif isinstance(value, str):
            moment = datetime.fromisoformat(value.strip())
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
        else:
            raise TypeError
        return moment.astimezone(UTC).isoformat(), None
    except (TypeError, ValueError, OverflowError, OSError):
        shown = repr(value[:60]) if isinstance(value, str) else json_kind(value)
        return None, ("field 'timestamp' must be an ISO 8601 date and time or seconds since "
                      f"1970, got {shown}")


def _name(value: Any, field: str, limit: int = MAX_NAME_LENGTH) -> tuple[str, str | None]:
    """A short identifier field (string or whole number) as a string, or a reason."""
    if value is None:
        return "", None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return "", f"field '{field}' must be a string, got {json_kind(value)}"
    text = str(value)
    if len(text) > limit:
        return "", f"field '{field}' is longer than {limit} characters"
    return text, None


def event_from_object(obj: Any, line: int) -> dict | str:
    """The canonical event for one JSON object of the audit command's schema, or the reason it is
    refused.  Top-level fields other than the canonical ones go into ``data``."""
    problem = check_event(obj)
    if problem:
        return problem
    session = str(obj["session"])
    if len(session) > MAX_SESSION_LENGTH:
        return f"field 'session' is longer than {MAX_SESSION_LENGTH} characters"
    step = obj.get("step")
    if step is not None and not 0 <= step <= MAX_STEP:
        return f"field 'step' must be between 0 and {MAX_STEP}, got {step}"
    lifeline, problem = _name(obj.get("lifeline"), "lifeline")
    if problem:
        return problem
    event_id, problem = _name(obj.get("event_id"), "event_id")
    if problem:
        return problem
    if event_id == "" and obj.get("event_id") is not None:
        return "field 'event_id' must not be empty"
    timestamp, problem = parse_timestamp(obj.get("timestamp"))
    if problem:
        return problem
    message, problem = _message(obj.get("message"))
    if problem:
        return problem
    data = dict(obj.get("data") or {})
    for key, value in obj.items():
        if key in EVENT_FIELDS:
            continue
        if key in data:
            return f"field {key!r} is given both at the top level and in 'data'"
        data[key] = value
    return make_event(session, step, line, lifeline=lifeline, timestamp=timestamp,
                      input=obj.get("input"), output=obj.get("output"), data=data,
                      labels=obj.get("labels"), event_id=event_id or None, message=message)


def _message(value: Any) -> tuple[dict | None, str | None]:
    if value is None:
        return None, None
    if not isinstance(value, dict):
        return None, f"field 'message' must be an object {{id, peer, kind}}, got {json_kind(value)}"
    unknown = sorted(set(value) - {"id", "peer", "kind"})
    if unknown:
        return None, (f"field 'message' has unknown keys {', '.join(unknown)}; keys are id, "
                      "peer, kind")
    out = {}
    for key in ("id", "peer"):
        out[key], problem = _name(value.get(key), f"message.{key}")
        if problem:
            return None, problem
    if not out["id"]:
        return None, "field 'message.id' is required"
    kind = value.get("kind")
    if kind not in MESSAGE_KINDS:
        return None, f"field 'message.kind' must be 'send' or 'receive', got {kind!r}"
    out["kind"] = kind
    return out, None


def make_event(session: str, step: int | None, line: int, *, lifeline: str = "",
               timestamp: str | None = None, input: Any = None, output: Any = None,
               data: dict | None = None, labels: list[str] | None = None,
               event_id: str | None = None, message: dict | None = None) -> dict:
    """The canonical event of DESIGN.md, plus ``line``: where in the file it came from."""
    return {"session": session, "step": step, "lifeline": lifeline, "timestamp": timestamp,
            "input": input, "output": output, "data": data if data is not None else {},
            "labels": labels, "event_id": event_id, "message": message, "line": line}


# The first bytes of files that are no text log, and what to do with them.
_BINARY_KINDS = (
    (b"PK\x03\x04", "a ZIP archive (an Inspect .eval log uploads with the format inspect)"),
    (b"\x1f\x8b", "gzip-compressed (decompress it, then upload the log inside)"),
    (b"%PDF-", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
)
_WIDE_TEXT = ((b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


def binary_reason(head: bytes) -> str | None:
    """Why a file that starts with ``head`` (its first few KiB) is no text log, or None."""
    for magic, kind in _BINARY_KINDS:
        if head.startswith(magic):
            return f"the file is {kind}, not a text log"
    for bom, encoding in _WIDE_TEXT:
        if head.startswith(bom):
            return f"the file is {encoding} text: save it as UTF-8 and upload it again"
    if b"\x00" in head:
        return ("the file is binary, not a text log (it holds NUL bytes); upload the log as "
                "UTF-8 text: JSON Lines, CSV, chat transcripts or OTLP JSON")
    return None


class Prefixed:
    """A binary reader that first returns ``head`` (bytes already read to sniff the format),
    then the rest of ``file``."""

    def __init__(self, head: bytes, file: BinaryIO):
        self._head = head
        self._file = file

    def read(self, size: int = -1) -> bytes:
        if self._head:
            if size is None or size < 0:
                out, self._head = self._head + self._file.read(), b""
                return out
            out, self._head = self._head[:size], self._head[size:]
            if len(out) < size:
                out += self._file.read(size - len(out))
            return out
        return self._file.read(size)

    def readline(self, size: int = -1) -> bytes:
        if self._head:
            cut = self._head.find(b"\n")
            limit = len(self._head) if cut < 0 else cut + 1
            if size is not None and 0 <= size < limit:
                limit = size
            out, self._head = self._head[:limit], self._head[limit:]
            if not out.endswith(b"\n") and not self._head and (size is None or size < 0
                                                               or len(out) < size):
                out += self._file.readline(-1 if size is None or size < 0 else size - len(out))
            return out
        return self._file.readline(size)

    def tell(self) -> int:
        return self._file.tell() - len(self._head)
