"""OTLP/HTTP JSON trace files: one ``ExportTraceServiceRequest`` document, or one per line (what
the OpenTelemetry Collector's file exporter writes).  Spans become events through
``otlp.events_from_otlp``, the decoder live ingestion uses, with one message linker for the whole
file; each event is then checked like a JSONL line.  A document is read one ``resourceSpans``
entry at a time.

The file is read twice: first for the sessions its spans name (``otlp.named_sessions``), then
for the events, so every span of a trace goes to the session the first naming span of the file
names, also the spans that come before it (``otlp.TraceSessions``); a span naming another
session for its trace is reported as an error of its line, and kept with its trace."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from functools import partial
from typing import Any, BinaryIO

from .base import LineError, OptionsError, decode_json_line, event_from_object, read_lines, too_long
from .jsonstream import DocumentError, JsonStream
from .openai_chat import sniff_lines
from .otlp import TraceSessions, events_from_otlp, named_sessions
from .otlp_messages import MessageLinker

OPTIONS: frozenset[str] = frozenset()


def decoder(sessions: TraceSessions | None = None):
    """``events_from_otlp(document) -> (events, errors)`` with a message linker of its own: the
    spans of one trace may be spread over several documents of a file, and a message joins spans
    of two of them; and with ``sessions`` (the file's first pass), so they keep to one session."""
    return partial(events_from_otlp, linker=MessageLinker(),
                   sessions=sessions if sessions is not None else TraceSessions())


def check_options(options: dict | None) -> None:
    if options:
        raise OptionsError("OTLP files take no options", field=f"options.{min(options)}")


def _decode(events_from_otlp, document: Any, line: int, pointer: str) -> Iterator[dict | LineError]:
    events, errors = events_from_otlp(document)
    for message in errors:
        yield LineError(line, str(message), pointer)
    for event in events:
        checked = event_from_object(event, line)
        if isinstance(checked, dict):
            yield checked
        else:
            yield LineError(line, f"a span gave an event that cannot be stored: {checked}",
                            pointer)


def parse_otlp(file: BinaryIO, options: dict | None = None,
               name: str = "") -> Iterator[dict | LineError]:
    check_options(options)
    if not file.seekable():  # read twice: kept in a temporary file (on disk past 16 MiB)
        copy = tempfile.SpooledTemporaryFile(max_size=16 * 1024 * 1024)
        shutil.copyfileobj(file, copy)
        file = copy
    start = file.tell()
    first = TraceSessions()
    for item in _documents(file):
        if not isinstance(item, LineError):
            named_sessions(item[2], first)
    file.seek(start)
    events_from_otlp = decoder(TraceSessions(first.chosen))
    for item in _documents(file):
        if isinstance(item, LineError):
            yield item
        else:
            line, pointer, document = item
            yield from _decode(events_from_otlp, document, line, pointer)


def _documents(file: BinaryIO) -> Iterator[tuple[int, str, dict] | LineError]:
    """``(line, pointer, document)`` for each document of the file (one per line, or one per
    ``resourceSpans`` entry of a whole document), or the error of a line that holds none."""
    is_lines, file = sniff_lines(file)
    if is_lines:
        for number, raw in read_lines(file):
            if raw is None:
                yield LineError(number, too_long())
                continue
            if not raw.strip():
                continue
            value, problem = decode_json_line(raw)
            if problem is None and not isinstance(value, dict):
                problem = f"expected an OTLP JSON object, got a {type(value).__name__}"
            if problem:
                yield LineError(number, problem)
                continue
            yield number, "", value
        return
    stream = JsonStream(file)
    try:
        for key in stream.members():
            if key == "resourceSpans":
                for index, (line, entry) in enumerate(stream.elements()):
                    yield line, f"/resourceSpans/{index}", {"resourceSpans": [entry]}
    except DocumentError as exc:
        yield LineError(exc.line, exc.reason)
