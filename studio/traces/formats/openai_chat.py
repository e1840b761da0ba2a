"""OpenAI-style chat transcripts.

Either JSON Lines, one transcript per line::

    {"session": "conv-1" (or "id"), "messages": [{"role": ..., "content": ..., "tool_calls": ...}],
     ...free fields, kept in each event's data}

or one JSON document ``{"messages": [...], ...}`` (its session is its ``session`` or ``id``, else
the ``session`` option, else the file's name).  See ``chat`` for how messages become events.  A
document is read one message at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from .base import (
    MAX_SESSION_LENGTH,
    LineError,
    OptionsError,
    Prefixed,
    decode_json_line,
    json_kind,
    read_lines,
    too_long,
)
from .chat import Transcript
from .jsonstream import DocumentError, JsonStream

OPTIONS = frozenset({"session"})
SESSION_KEYS = ("session", "id")


def check_options(options: dict | None) -> None:
    options = options or {}
    unknown = sorted(set(options) - OPTIONS)
    if unknown:
        raise OptionsError(f"unknown options {', '.join(unknown)} for chat transcripts; the only "
                           "option is session (the name of a transcript that has none)",
                           field=f"options.{unknown[0]}")
    session = options.get("session")
    if session is not None and (not isinstance(session, str) or not session.strip()):
        raise OptionsError("must be a non-empty string", field="options.session")


def sniff_lines(file: BinaryIO) -> tuple[bool, BinaryIO]:
    """Whether the file is JSON Lines (its first non-blank line is a whole JSON object), and a
    reader that starts again at the beginning."""
    seen = b""
    for _, raw in read_lines(file):
        if raw is None:
            break
        seen += raw + b"\n"
        if raw.strip():
            value, problem = decode_json_line(raw)
            return problem is None and isinstance(value, dict), Prefixed(seen, file)
    return False, Prefixed(seen, file)


def _session(value: Any) -> tuple[str | None, str | None]:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        return None, "field 'session' (or 'id') must be a non-empty string"
    text = str(value)
    if len(text) > MAX_SESSION_LENGTH:
        return None, f"field 'session' is longer than {MAX_SESSION_LENGTH} characters"
    return text, None


def _free_fields(document: dict) -> dict:
    return {k: v for k, v in document.items() if k not in SESSION_KEYS and k != "messages"}


def parse_openai(file: BinaryIO, options: dict | None = None,
                 name: str = "") -> Iterator[dict | LineError]:
    check_options(options)
    default = (options or {}).get("session") or name or "transcript"
    is_lines, file = sniff_lines(file)
    if is_lines:
        yield from _lines(file, default)
    else:
        yield from _document(file, default)


def _lines(file: BinaryIO, default: str) -> Iterator[dict | LineError]:
    for number, raw in read_lines(file):
        if raw is None:
            yield LineError(number, too_long())
            continue
        if not raw.strip():
            continue
        value, problem = decode_json_line(raw)
        if problem is None and not isinstance(value, dict):
            problem = f"expected a JSON object with 'messages', got {json_kind(value)}"
        if problem is None:
            messages = value.get("messages")
            if not isinstance(messages, list):
                problem = "field 'messages' is required and must be a list of messages"
        if problem:
            yield LineError(number, problem)
            continue
        raw_session = next((value[k] for k in SESSION_KEYS if value.get(k) is not None), None)
        session, problem = _session(raw_session) if raw_session is not None else (
            f"{default}#{number}", None)
        if problem:
            yield LineError(number, problem)
            continue
        transcript = Transcript(session, line=number, data=_free_fields(value))
        for index, message in enumerate(messages):
            transcript.add(index, message)
        yield from transcript.finish()


def _document(file: BinaryIO, default: str) -> Iterator[dict | LineError]:
    stream = JsonStream(file)
    fields: dict = {}
    transcript: Transcript | None = None
    broken: LineError | None = None
    try:
        for key in stream.members():
            if key == "messages":
                transcript = Transcript(default, line=stream.line)
                for index, (line, message) in enumerate(stream.elements()):
                    transcript.add(index, message, line)
            else:
                fields[key] = stream.take()
    except DocumentError as exc:
        # What was read before the fault is kept; the rest of the document is unreadable.
        broken = LineError(exc.line, exc.reason)
    if transcript is None:
        yield broken or LineError(1, "field 'messages' is required: a transcript is "
                                     '{"messages": [...]} or one such object per line')
        return
    raw_session = next((fields[k] for k in SESSION_KEYS if fields.get(k) is not None), None)
    session = transcript.session
    if raw_session is not None:
        session, problem = _session(raw_session)
        if problem:
            yield LineError(1, problem, "/session")
            return
    items = transcript.finish() if broken is None else transcript.items
    free = _free_fields(fields)
    for item in items:
        if isinstance(item, dict):
            item["session"] = session
            item["data"] = {**free, **item["data"]}
        yield item
    if broken is not None:
        yield broken
