"""An upload's file parsed into batches of rows ready for COPY (no Django).

``batches`` runs a format's parser (``studio.traces.formats``) over the file, turns each event
into its COPY text (``serialise``) and cuts the items into batches for the writer of
``studio.traces.loading``, which assigns sessions and steps and stores each batch in one
transaction.  A big file is parsed in a child process of its own (``ParseProcess``; this module
is its program: ``python -m studio.traces.parsing``): the writer, which the load waits for, then
has its process's Python to itself instead of taking turns with the parser after every call to
the database.
"""

from __future__ import annotations

import gc
import json
import marshal
import math
import re
import sys
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from studio.bulkwork import BULK_THRESHOLDS
from studio.childprocess import receive, send, spawn, stop
from studio.copyformat import NULL, json_field, needs_escaping, text_field
from studio.logic.vocabulary import Collector

from . import formats
from .formats import LineError, OptionsError


@dataclass(frozen=True)
class BatchSizes:
    """A batch holds at most ``events`` events or ``bytes`` of their COPY text.  The first holds
    at most ``first`` events and each next one twice as many, up to ``events``: the database
    starts loading after a moment instead of waiting for a whole batch to be parsed."""

    first: int
    events: int
    bytes: int


@dataclass(slots=True)
class Row:
    """One event on its way to the database: ``tail`` is its COPY text from ``event_id`` on
    (the columns of ``studio.traces.copytext.DIRECT_COLUMNS`` after ``source``), so that the
    writer only prefixes the session and step it assigns.  ``event`` is the canonical event, when
    parsed in this process (None when it came from a ``ParseProcess``)."""

    seq: int
    line: int
    session: str
    step: int | None
    event_id: str | None
    tail: str
    event: dict | None = None
    session_id: int = 0
    share: int = 0      # with payloads: the share of its session, and its place in that share
    position: int = 0


@dataclass
class Batch:
    items: list     # Row or LineError, in file order
    start: int      # the upload's items loaded before this batch: its checkpoint
    position: int   # bytes of the file read when the batch was cut
    # When asked for (``shares``): per share of the sessions, what monitoring its rows needs,
    # ``(lifeline, input, output, data, labels)`` each, in marshal's format - read back in a
    # monitoring process much faster than the COPY text is; None when not asked for, or when
    # a value marshal cannot write came up.
    payloads: list[bytes] | None = None
    # What the batch's events show of the workspace's vocabulary, every event counted:
    # ``{(kind, name, json_type, carrier): (events, examples)}`` (a ``Collector`` of
    # ``studio.logic.vocabulary``), collected from the values parsed anyway.
    vocabulary: dict | None = None


def share_of(session: str, shares: int) -> int:
    """Which of ``shares`` monitoring processes follows a session (the same in every process,
    unlike ``hash``)."""
    return zlib.crc32(session.encode("utf-8", "surrogatepass")) % shares


def _marshalled(lists: list[list]) -> list[bytes] | None:
    try:
        return [marshal.dumps(values) for values in lists]
    except ValueError:  # a value of a type marshal does not write: no decoder makes one
        return None


# ---------------------------------------------------------------------------------------------
# An event as COPY text

_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def json_text(value: Any) -> str:
    """``_dumps(value)``, made by orjson where that gives the same JSON: orjson refuses what
    ``_dumps`` may write differently (integers beyond 64 bits, keys that are not strings, lone
    surrogates), and writes NaN and infinities as null where ``_dumps`` refuses them."""
    if value is None:
        return "null"
    try:
        text = orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError
        return _dumps(value)
    if b"null" in text and _holds_nonfinite(value):
        return _dumps(value)  # raises, with the json module's message
    return text.decode()


def _holds_nonfinite(value: Any) -> bool:
    """Whether a NaN or an infinity is somewhere in ``value`` (a JSON-like value)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_holds_nonfinite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_nonfinite(v) for v in value)
    return False


_SURROGATE = ("contains an unpaired UTF-16 surrogate (\\ud800-\\udfff), which cannot be "
              "stored")
_NUL = "contains the NUL character (\\u0000), which the database cannot store"


def serialise(event: dict) -> tuple[str | None, str | None]:
    """The event's COPY text from ``event_id`` on, or why the database cannot store it."""
    try:
        labels = event["labels"]
        texts = [json_text(event["input"]), json_text(event["output"]),
                 json_text(event["data"]), None if labels is None else json_text(labels)]
    except (TypeError, ValueError, RecursionError) as exc:  # from a decoder's odd value
        return None, f"cannot be stored as JSON ({exc})"
    message = event["message"] or {}
    names = [event["event_id"], event["lifeline"] or "", event["timestamp"],
             message.get("id") or "", message.get("peer") or "", message.get("kind") or ""]
    # Checked on the texts joined (one pass in C each): Python's UTF-8 codec refuses every
    # surrogate code point, joined or not.
    json_joined = "".join([t for t in texts if t])
    names_joined = "".join([t for t in names if t]) + event["session"]
    if not (json_joined.isascii() and names_joined.isascii()):
        try:
            json_joined.encode("utf-8")
            names_joined.encode("utf-8")
        except UnicodeEncodeError:
            return None, _SURROGATE
    if "\x00" in names_joined or ("\\u0000" in json_joined and any(
            "\\u0000" in t and _NUL_ESCAPE.search(t) for t in texts if t)):
        return None, _NUL
    json_texts = [json_field(t) for t in texts]
    if needs_escaping(names_joined):
        names = [text_field(t) for t in names]
    else:
        names = [NULL if t is None else t for t in names]
    return "\t".join([names[0], names[1], names[2], *json_texts, names[3], names[4],
                      names[5]]), None


# ---------------------------------------------------------------------------------------------
# Batches

def batches(items: Iterable[dict | LineError], handle, skip: int, sizes: BatchSizes,
            keep_events: bool = True, shares: int = 0) -> Iterator[Batch]:
    """The parser's ``items`` after the first ``skip`` (loaded before: the checkpoint), as
    batches; ``handle`` is the file being read, for the position of each cut.  ``shares``: make
    each batch's ``payloads`` for that many monitoring processes (0: none)."""
    next_start = skip
    batch: list[Row | LineError] = []
    events = size = 0
    limit = min(sizes.first, sizes.events)
    last_line: int | None = None
    share_cache: dict[str, int] = {}
    payloads: list[list] = [[] for _ in range(shares)]
    seen = Collector()  # one for the whole file: what it learns of the paths is kept
    for position, item in enumerate(items, start=1):
        if position <= skip:
            continue
        line = item.line if isinstance(item, LineError) else item["line"]
        # Batches end between records, so a record's events and errors are counted together.
        if (events >= limit or size >= sizes.bytes) and line != last_line and batch:
            yield Batch(batch, next_start, _tell(handle),
                        _marshalled(payloads) if shares else None, seen.take())
            next_start += len(batch)
            batch, events, size = [], 0, 0
            payloads = [[] for _ in range(shares)]
            limit = min(2 * limit, sizes.events)
        last_line = line
        if isinstance(item, LineError):
            batch.append(item)
            continue
        tail, problem = serialise(item)
        if problem:
            batch.append(LineError(line, problem))
            continue
        session = item["session"]
        row = Row(len(batch), line, session, item["step"], item["event_id"], tail,
                  item if keep_events else None)
        if shares:
            share = share_cache.get(session)
            if share is None:
                share = share_cache[session] = share_of(session, shares)
            values = payloads[share]
            row.share, row.position = share, len(values)
            values.append((item["lifeline"] or "", item["input"], item["output"], item["data"],
                           item["labels"]))
        seen.add(item["input"], item["output"], item["data"], item["labels"])
        batch.append(row)
        events += 1
        size += len(tail) + 20
    if batch:
        yield Batch(batch, next_start, _tell(handle), _marshalled(payloads) if shares else None,
                    seen.take())


def _tell(handle) -> int:
    try:
        return handle.tell()
    except (OSError, ValueError):
        return 0


# ---------------------------------------------------------------------------------------------
# Parsing in a child process

class ParseFailed(Exception):
    """The parsing process failed or went away; its message says why."""


# The rows of a batch go over in messages of this many items: unpickling one holds the
# receiving process's Python for a moment only, so its writing thread is not kept waiting.
_ITEMS_PER_MESSAGE = 2_000


class ParseProcess:
    """``batches`` of a stored file, parsed in a child process.  Iterating gives each batch as
    the child cuts it (its rows without their events); the child parses ahead by about one
    batch, then waits until the batch is taken.  Errors of the file's options and of reading it
    come as ``OptionsError`` and ``OSError``, as from ``batches``; others as ``ParseFailed``."""

    program = ["-m", "studio.traces.parsing"]
    # How long the parent waits for the next message before giving the child up: far longer
    # than any batch takes to parse.
    ANSWER_SECONDS = 600.0

    def __init__(self, path: Path, format: str, options: dict, name: str, skip: int,
                 sizes: BatchSizes, shares: int = 0):
        try:  # a failure to start is not the file's: the loader parses in its own process
            self._child = spawn(self.program)
        except OSError as exc:
            raise ParseFailed(f"the parsing process did not start ({exc})") from None
        try:
            send(self._child.stdin, (str(path), format, options, name, skip, sizes, shares))
        except OSError as exc:
            self.close()
            raise ParseFailed(f"the parsing process did not start ({exc})") from None

    def __iter__(self) -> Iterator[Batch]:
        items: list[Row | LineError] = []
        while True:
            message = self._next()
            kind = message[0]
            if kind == "items":
                items += [Row(*item) if type(item) is tuple else item for item in message[1]]
            elif kind == "cut":
                yield Batch(items, *message[1:])
                items = []
            elif kind == "done":
                return
            else:  # "failed"
                _, error, text, detail = message
                if error == "options":
                    raise OptionsError(text, field=detail)
                if error == "os":
                    raise OSError(detail, text)
                raise ParseFailed(text)

    def _next(self):
        try:
            message = receive(self._child.stdout, time.monotonic() + self.ANSWER_SECONDS)
        except TimeoutError:
            raise ParseFailed(f"the parsing process sent nothing for {self.ANSWER_SECONDS:g}"
                              " s") from None
        if message is None:
            raise ParseFailed(f"the parsing process went away (exit status {self._child.wait()})")
        return message

    def close(self) -> None:
        """End the child, also in the middle of the file: its input closes and it is killed if
        it is busy parsing."""
        if self._child.poll() is None:
            self._child.kill()
        stop(self._child)


def _serve(path: str, format: str, options: dict, name: str, skip: int, sizes: BatchSizes,
           shares: int, out) -> None:
    try:
        with open(path, "rb") as handle:
            parsed = formats.parse(format, handle, options, name=name)
            for batch in batches(parsed, handle, skip, sizes, keep_events=False, shares=shares):
                items = batch.items
                for offset in range(0, len(items), _ITEMS_PER_MESSAGE):
                    send(out, ("items", [
                        (i.seq, i.line, i.session, i.step, i.event_id, i.tail, None, 0, i.share,
                         i.position) if type(i) is Row else i
                        for i in items[offset:offset + _ITEMS_PER_MESSAGE]]))
                send(out, ("cut", batch.start, batch.position, batch.payloads,
                           batch.vocabulary))
    except BrokenPipeError:
        return  # the parent stopped reading: it has given up on this parse
    except OptionsError as exc:
        send(out, ("failed", "options", exc.message, exc.field))
    except OSError as exc:
        send(out, ("failed", "os", exc.strerror or str(exc), exc.errno))
    except Exception as exc:  # noqa: BLE001 - the parent reports it as an internal error
        send(out, ("failed", "internal", f"{type(exc).__name__}: {exc}", None))
        raise  # the traceback goes to standard error, for the worker's log
    else:
        send(out, ("done",))


def main() -> None:
    gc.set_threshold(*BULK_THRESHOLDS)  # this process only ever does bulk work
    incoming, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but messages on the message stream
    start = receive(incoming)
    if start is not None:
        _serve(*start, out)


if __name__ == "__main__":
    main()
