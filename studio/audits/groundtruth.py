"""Ground truth: whether a session truly violates a rule, loaded from JSONL or CSV.

JSONL, one object a line::

    {"session": "s1", "rule": "no_drop", "violated": true, "note": "optional"}

CSV with a header naming the columns ``session``, ``rule``, ``violated`` and optionally ``note``
(``violated`` reads true/false, yes/no or 1/0).  Blank lines are skipped.  Every other line is
either stored or reported with its number and the reason: nothing is dropped silently.  A label
given again replaces the earlier one (a new file corrects an old one); within one file, a second
line contradicting the first is refused and the first is kept.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from studio.boundary import text_problem
from studio.errors import ServiceError
from studio.rules.models import Rule
from studio.traces.models import TraceSession
from studio.workspaces.acting import acting_user
from studio.workspaces.actions import LogAction
from studio.workspaces.services import record

from .models import GroundTruth

SESSION_MAX = GroundTruth._meta.get_field("session").max_length
RULE_MAX = GroundTruth._meta.get_field("rule").max_length
SOURCE_MAX = GroundTruth._meta.get_field("source").max_length
NOTE_MAX = 2000
MAX_FILE_BYTES = 50 * 1024 * 1024
FORMATS = ("jsonl", "csv")
_TRUE = {"true", "yes", "1", "y", "t"}
_FALSE = {"false", "no", "0", "n", "f"}
_WRITE_CHUNK = 1000
# Repeated lines are listed by number up to this many; the count covers them all.
_LINES_LISTED = 20


@dataclass(frozen=True)
class Label:
    line: int
    session: str
    rule: str
    violated: bool
    note: str | None = None  # None: the file gives no note (an existing one is kept)


@dataclass(frozen=True)
class LineError:
    line: int
    reason: str


@dataclass
class ImportResult:
    filename: str
    format: str
    created: int = 0
    changed: int = 0
    unchanged: int = 0
    repeated: int = 0  # lines giving a label the file gave before, identically
    repeated_lines: list[int] = field(default_factory=list)  # the first few of them
    errors: list[LineError] = field(default_factory=list)
    unknown_rules: list[str] = field(default_factory=list)  # no such rule in the workspace (yet)
    sessions_not_loaded: int = 0  # sessions named that the workspace has no log of (yet)

    @property
    def stored(self) -> int:
        return self.created + self.changed + self.unchanged

    def as_dict(self) -> dict:
        return {"filename": self.filename, "format": self.format, "stored": self.stored,
                "created": self.created, "changed": self.changed, "unchanged": self.unchanged,
                "repeated": self.repeated, "repeated_lines": self.repeated_lines,
                "errors": [{"line": e.line, "reason": e.reason} for e in self.errors],
                "unknown_rules": self.unknown_rules,
                "sessions_not_loaded": self.sessions_not_loaded}


# ---------------------------------------------------------------------------------------------
# Reading

class _Bad(ValueError):
    pass


def _name(value, what: str, limit: int) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)  # session ids are often numbers
    if not isinstance(value, str) or not value:
        raise _Bad(f"{what} is missing or empty" if value in (None, "") else
                   f"{what} must be text, not {type(value).__name__}")
    if len(value) > limit:
        raise _Bad(f"{what} is longer than {limit} characters")
    _check_text(value, what)
    return value


def _check_text(value: str, what: str) -> None:
    # The database refuses NUL and lone surrogates (a JSON line may spell one as "\ud800"):
    # said in the words of the request boundary.
    problem = text_problem(value)
    if problem is not None:
        raise _Bad(f"{what} {problem}")


def _note(value) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Bad(f"note must be text, not {type(value).__name__}")
    _check_text(value, "note")
    if len(value) > NOTE_MAX:
        raise _Bad(f"note is longer than {NOTE_MAX} characters")
    return value


def _label(line: int, session, rule, violated, note) -> Label:
    return Label(line, _name(session, "session", SESSION_MAX), _name(rule, "rule", RULE_MAX),
                 violated, _note(note))


def _decoded(lines: Iterable[bytes | str]) -> Iterator[tuple[int, str | None]]:
    """``(line number, text)``; text None for a line that is not UTF-8."""
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                yield number, None
                continue
        if number == 1:
            raw = raw.removeprefix("\ufeff")
        yield number, raw


def read_jsonl(lines: Iterable[bytes | str]) -> Iterator[Label | LineError]:
    for number, text in _decoded(lines):
        if text is None:
            yield LineError(number, "not UTF-8 text")
            continue
        if not text.strip():
            continue
        try:
            item = json.loads(text)
        except ValueError as exc:
            yield LineError(number, f"not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(item, dict):
            yield LineError(number, 'a line must be a JSON object {"session": ..., "rule": ..., '
                                    '"violated": true|false}')
            continue
        try:
            violated = item.get("violated")
            if not isinstance(violated, bool):
                raise _Bad("violated is missing" if violated is None else
                           f"violated must be true or false, not {json.dumps(violated)[:40]}")
            yield _label(number, item.get("session"), item.get("rule"), violated,
                         item.get("note"))
        except _Bad as exc:
            yield LineError(number, str(exc))


def read_csv(lines: Iterable[bytes | str]) -> Iterator[Label | LineError]:
    bad_lines: list[int] = []

    def text_lines() -> Iterator[str]:
        for number, text in _decoded(lines):
            if text is None:
                bad_lines.append(number)
                yield "\n"  # keeps the reader's line count; reported below
            else:
                yield text

    reader = csv.reader(text_lines())
    header: list[str] | None = None
    columns: dict[str, int] = {}
    reported = 0
    for row in reader:
        number = reader.line_num
        while reported < len(bad_lines):
            yield LineError(bad_lines[reported], "not UTF-8 text")
            reported += 1
        if not row or not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [cell.strip().lower() for cell in row]
            missing = [c for c in ("session", "rule", "violated") if c not in header]
            if missing:
                yield LineError(number, "the first line must be a header naming the columns "
                                        f"session, rule and violated; missing: "
                                        f"{', '.join(missing)}")
                return
            columns = {name: header.index(name) for name in ("session", "rule", "violated",
                                                             "note") if name in header}
            continue
        cells = [cell.strip() for cell in row]
        if len(cells) < len(header):
            cells += [""] * (len(header) - len(cells))
        try:
            flag = cells[columns["violated"]].lower()
            if flag in _TRUE:
                violated = True
            elif flag in _FALSE:
                violated = False
            else:
                raise _Bad("violated is missing" if not flag else
                           f"violated must be true or false, not {flag[:40]!r}")
            yield _label(number, cells[columns["session"]], cells[columns["rule"]], violated,
                         cells[columns["note"]] if "note" in columns else None)
        except _Bad as exc:
            yield LineError(number, str(exc))
    while reported < len(bad_lines):
        yield LineError(bad_lines[reported], "not UTF-8 text")
        reported += 1


def guess_format(filename: str, first_bytes: bytes) -> str:
    name = filename.lower()
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if name.endswith(".csv"):
        return "csv"
    return "jsonl" if first_bytes.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") else "csv"


# ---------------------------------------------------------------------------------------------
# Storing

def import_labels(workspace, file, filename: str | None = None, format: str | None = None,
                  by=None) -> ImportResult:
    """Read ``file`` (an uploaded file or any binary file object) and store its labels.

    Raises ServiceError only when the file as a whole cannot be used (too large, unknown
    format); bad lines are reported in the result and the good ones are stored.
    """
    # The name is stored as the labels' source: no NUL (Postgres refuses it), bounded length.
    filename = (str(filename or getattr(file, "name", "") or "labels").replace("\x00", "")
                [:SOURCE_MAX] or "labels")
    size = getattr(file, "size", None)
    if size is not None and size > MAX_FILE_BYTES:
        raise ServiceError(f"the file is {size} bytes; ground truth files are limited to "
                           f"{MAX_FILE_BYTES // (1024 * 1024)} MB: split it", field="file")
    if format in (None, "", "auto"):
        start = file.read(512)
        file.seek(0)
        format = guess_format(filename, start)
    if format not in FORMATS:
        raise ServiceError(f"unknown format {format!r}: use jsonl or csv", field="format")
    reader = read_jsonl if format == "jsonl" else read_csv
    return store_labels(workspace, reader(file), filename, format, by)


def store_labels(workspace, items: Iterable[Label | LineError], source: str, format: str,
                 by=None) -> ImportResult:
    result = ImportResult(source, format)
    first: dict[tuple[str, str], Label] = {}
    for item in items:
        if isinstance(item, LineError):
            result.errors.append(item)
            continue
        key = (item.session, item.rule)
        earlier = first.get(key)
        if earlier is None:
            first[key] = item
        elif earlier.violated == item.violated and earlier.note == item.note:
            result.repeated += 1
            if len(result.repeated_lines) < _LINES_LISTED:
                result.repeated_lines.append(item.line)
        else:
            result.errors.append(LineError(
                item.line, f"session {item.session[:80]!r}, rule {item.rule[:80]!r} was labelled "
                           f"differently on line {earlier.line}; that line is kept"))
    result.errors.sort(key=lambda e: e.line)
    user = acting_user(by)
    now = timezone.now()
    labels = list(first.values())
    with transaction.atomic():
        for start in range(0, len(labels), _WRITE_CHUNK):
            _write(workspace, labels[start:start + _WRITE_CHUNK], source, user, now, result)
        rules = {label.rule for label in labels}
        known = set(Rule.objects.filter(workspace=workspace, name__in=rules)
                    .values_list("name", flat=True))
        result.unknown_rules = sorted(rules - known)
        sessions = sorted({label.session for label in labels})
        loaded = 0
        for start in range(0, len(sessions), _WRITE_CHUNK):
            loaded += TraceSession.objects.filter(
                workspace=workspace, external_id__in=sessions[start:start + _WRITE_CHUNK]).count()
        result.sessions_not_loaded = len(sessions) - loaded
        record(workspace, by, LogAction.GROUND_TRUTH_IMPORTED, None, source=source, format=format,
               created=result.created, changed=result.changed, unchanged=result.unchanged,
               errors=len(result.errors), repeated=result.repeated)
    return result


def _write(workspace, labels: list[Label], source: str, user, now, result: ImportResult) -> None:
    existing = {(g.session, g.rule): g for g in GroundTruth.objects.filter(
        workspace=workspace, session__in={label.session for label in labels},
        rule__in={label.rule for label in labels})}
    writes = []
    for label in labels:
        old = existing.get((label.session, label.rule))
        note = label.note if label.note is not None else (old.note if old else "")
        if old is not None and old.violated == label.violated and old.note == note:
            result.unchanged += 1
            continue
        if old is None:
            result.created += 1
        else:
            result.changed += 1
        writes.append(GroundTruth(workspace=workspace, session=label.session, rule=label.rule,
                                  violated=label.violated, note=note, source=source,
                                  imported_by=user, imported_at=now))
    if writes:
        # A concurrent import of the same labels meets the unique constraint: the later wins.
        GroundTruth.objects.bulk_create(
            writes, update_conflicts=True, unique_fields=["workspace", "session", "rule"],
            update_fields=["violated", "note", "source", "imported_by", "imported_at"])
