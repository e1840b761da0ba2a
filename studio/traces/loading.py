"""Loading an upload: its stored file parsed as a stream, its events bulk-loaded, nothing lost.

``parse_upload`` (the Celery task's service; the file was received by ``studio.traces.intake``)
runs the format's parser over the stored file (in a child process for a big file on Postgres,
``studio.traces.parsing``) and loads its events in batches, one transaction each:

- sessions are looked up (created when new) and locked in bulk, so no other writer adds steps to
  them while a batch numbers its step-less events after their stored steps;
- on Postgres the events are COPYed: straight into ``traces_event`` when no stored event can clash
  (every step of the batch comes after its session's stored steps and no event id is taken),
  otherwise into a temporary table and then ``INSERT ... ON CONFLICT DO NOTHING``, every row that
  clashed being reported as a line error with the event it clashed with; on SQLite the clashes
  are looked up first and the rest goes in with ``bulk_create``;
- the batch's line errors, the progress counters and the checkpoint (``items_done``) are written
  in the same transaction, so a rerun after a crash resumes where the last batch ended and never
  stores an event twice.

The caller may hand a ``BatchObserver`` (the upload task hands the audit on arrival,
``studio.audits.intake``): it is shown each batch's rows once committed, and it finishes its work
inside the transaction that marks the upload parsed.

A lost database connection (Postgres restarted, the connection terminated) is not the upload's
fault and spends no attempt: the batch in hand is written again on a new connection, in halves
(each its own checkpoint), and so is the final step (``_Reconnects``); a database away for longer
goes up to the task, which parses on from the checkpoint later (``worker.uploads``).  A failed
upload resumes from its checkpoint (``intake.resume_upload``), also when the same file is
uploaded again.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Protocol

from django.conf import settings
from django.db import (
    IntegrityError,
    InterfaceError,
    OperationalError,
    connection,
    connections,
    transaction,
)
from django.db.models import F, OuterRef, Subquery
from django.utils import timezone

from studio.bulkwork import fewer_collections
from studio.connections import drop_broken_connection
from studio.workspaces.actions import LogAction
from studio.workspaces.services import record

from . import formats, parsing, vocabulary
from .copytext import DIRECT_COLUMNS, json_value, monitor_rows
from .formats import LineError, OptionsError
from .intake import stored_file
from .models import Event, TraceSession, Upload, UploadError, UploadStatus
from .parsing import Batch, BatchSizes, ParseFailed, ParseProcess, Row

logger = logging.getLogger(__name__)

# One load transaction holds at most this many events or bytes of serialised events.
BATCH_EVENTS = 20_000
BATCH_BYTES = 16 * 1024 * 1024
# The first batch is small, and each next one twice as large up to BATCH_EVENTS
# (``parsing.BatchSizes``).
FIRST_BATCH_EVENTS = 1_000
# Postgres: COPY straight into traces_event when no stored event can clash (see the module doc).
# The bench turns it off to measure the staged load alone.
DIRECT_COPY = True
SOURCE = "upload"
# A batch whose connection is lost is written again in halves down to about this many items.
MIN_PART_ITEMS = 250
# The vocabulary of a part of a batch: counted from its stored rows.
RECOUNT = {"recount": "from the stored rows"}


def max_attempts() -> int:
    return getattr(settings, "UPLOAD_MAX_ATTEMPTS", 3)


def reconnect_seconds() -> float:
    """How long a parse retries lost connections itself while nothing commits, before the
    task takes over (shorter than a task may run)."""
    return getattr(settings, "UPLOAD_RECONNECT_SECONDS", 60)


class BatchObserver(Protocol):
    """Follows one load batch by batch (the audit on arrival, ``studio.audits.intake``)."""

    # Payloads per batch the observer wants, one per monitoring process (0: none).
    shares: int

    def committed(self, rows: CommittedRows, stored_before: dict[int, int | None]) -> None:
        """Rows just committed, in file order (on the writing thread when the load has one);
        ``stored_before``: each session's last step stored before them (None: it had none)."""

    def drain(self) -> None:
        """On the parsing thread, between two batches and after the last one."""

    def finished(self, upload: Upload, *, again: bool) -> None:
        """Inside the transaction that marks ``upload`` (locked) parsed.  ``again``: the
        transaction of an earlier call was lost with its connection, so what that call handed
        over may be half done."""

    def close(self) -> None:
        """The load is over (whatever its outcome)."""


# Makes the observer of a claimed upload: ``observe(upload, threaded=...)``, None for none.
ObserverFactory = Callable[..., "BatchObserver | None"]


# ---------------------------------------------------------------------------------------------
# Parsing

class _Superseded(Exception):
    """Another run of the same upload has moved it on; this one stops."""


def parse_upload(upload_id: int, after_lost_connection: bool = False,
                 observe: ObserverFactory | None = None) -> Upload | None:
    """Parse and load a stored upload.  Idempotent: a finished upload is left alone, and a rerun
    of an interrupted one resumes after the last loaded batch.  ``observe`` makes the
    ``BatchObserver`` of the load (the upload task hands the audit on arrival's).

    Lost connections are retried here while the database comes back quickly (``_Reconnects``);
    one that outlasts that is raised as it is, and the task parses the upload again with
    ``after_lost_connection``, which claims it without spending an attempt."""
    upload = _claim(upload_id, spend=not after_lost_connection)
    if upload is None:
        return Upload.objects.filter(pk=upload_id).first()
    try:
        problem = _not_a_text_log(upload)
        if problem is not None:
            _fail(upload, problem)
            return Upload.objects.filter(pk=upload_id).first()
        _parse(upload, observe)
    except _Superseded:
        pass
    except OptionsError as exc:
        _fail(upload, exc.message)
    except OSError as exc:
        _fail(upload, f"the stored file cannot be read ({exc.strerror or exc})")
    except (OperationalError, InterfaceError):
        logger.warning("upload %s: the database connection was lost; the task parses on from "
                       "the checkpoint without counting an attempt", upload_id, exc_info=True)
        drop_broken_connection()
        raise
    except Exception as exc:  # a bug must not leave the upload "parsing" for ever
        logger.exception("upload %s: parsing failed", upload_id)
        _fail(upload, f"parsing stopped on an internal error ({type(exc).__name__}); the events "
                      "loaded before it are kept")
    return Upload.objects.filter(pk=upload_id).first()


def _not_a_text_log(upload: Upload) -> str | None:
    """Why the stored file cannot be a log of the upload's format (a binary file), or None.
    Inspect's .eval logs are ZIP archives: that format reads its own bytes."""
    if upload.format == "inspect":
        return None
    with open(stored_file(upload), "rb") as handle:
        reason = formats.binary_reason(handle.read(8192))
    return f"{upload.filename}: {reason}" if reason else None


def nothing_read(upload: Upload) -> str:
    """The failure of an upload none of whose lines is an event: the first reason, and what
    the file may be instead."""
    first = upload.errors.order_by("line", "id").first()
    lines = f"{upload.lines_bad} line{'s' if upload.lines_bad != 1 else ''}"
    message = f"no line of {upload.filename} is an event"
    if first is not None:
        message += f" ({lines} not imported; the first, line {first.line}: {first.reason})"
    summaries = upload.errors.filter(reason=formats.base.NO_EVENT_FIELDS).exists()
    if summaries:
        return (f"{message}. Lines that name a session but carry no step of it look like "
                "per-session summaries or verdicts: to record whether sessions violate rules, "
                f"load them with the ground-truth import (the Ground truth page, or POST "
                f"/api/w/{upload.workspace.slug}/ground-truth with lines {{\"session\", "
                f"\"rule\", \"violated\"}}); a log has one line per step of a session, with "
                "its input, output, labels or data")
    others = ", ".join(f for f in formats.PARSERS if f != upload.format)
    return (f"{message}. Was the format right? It was read as {upload.format}; the other "
            f"formats are {others} (a whole JSON document of chat transcripts is openai, "
            "OpenTelemetry traces are otlp, an Inspect log is inspect)")


def _claim(upload_id: int, spend: bool = True) -> Upload | None:
    """The upload, marked parsing, unless it is finished (None).  ``spend``: count an attempt
    (not when the attempt a lost connection interrupted goes on - unless none was counted)."""
    with transaction.atomic():
        upload = Upload.objects.select_for_update().filter(pk=upload_id).first()
        if upload is None or upload.status in (UploadStatus.PARSED, UploadStatus.FAILED):
            return None
        if not spend and upload.attempts:
            upload.status = UploadStatus.PARSING
            upload.save(update_fields=["status"])
            return upload
        if upload.attempts >= max_attempts():
            upload.status = UploadStatus.FAILED
            upload.error = (f"gave up after {upload.attempts} attempts to parse; the events "
                            "loaded before are kept")
            upload.finished_at = timezone.now()
            upload.save(update_fields=["status", "error", "finished_at"])
            return None
        upload.attempts += 1
        upload.status = UploadStatus.PARSING
        upload.started_at = upload.started_at or timezone.now()
        upload.save(update_fields=["attempts", "status", "started_at"])
        return upload


def _fail(upload: Upload, message: str) -> None:
    Upload.objects.filter(pk=upload.pk).exclude(status=UploadStatus.PARSED).update(
        status=UploadStatus.FAILED, error=message, finished_at=timezone.now())


@contextmanager
def _batches(upload: Upload, skip: int, shares: int,
             in_child: bool) -> Iterator[Iterator[Batch]]:
    """The upload's batches after its first ``skip`` items, with payloads for ``shares``
    monitoring processes, parsed in a child process or in this thread."""
    sizes = BatchSizes(FIRST_BATCH_EVENTS, BATCH_EVENTS, BATCH_BYTES)
    options = upload.options or {}
    if in_child:
        child = ParseProcess(stored_file(upload), upload.format, options, upload.filename,
                             skip, sizes, shares)
        try:
            yield iter(child)
        finally:
            child.close()
        return
    with open(stored_file(upload), "rb") as handle:
        items = formats.parse(upload.format, handle, options, name=upload.filename)
        yield parsing.batches(items, handle, skip, sizes, shares=shares)


def _parse(upload: Upload, observe: ObserverFactory | None) -> None:
    # With Postgres, batches are written on a thread of their own while the parser reads on: the
    # database checks and indexes one batch while Python parses the next.  Not inside a caller's
    # transaction (tests), whose rows another connection could not see.
    threaded = connection.vendor == "postgresql" and not connection.in_atomic_block
    observer = observe(upload, threaded=threaded) if observe is not None else None
    try:
        with fewer_collections():
            _load_and_finish(upload, observer, threaded)
    finally:
        if observer is not None:
            observer.close()


def _load_and_finish(upload: Upload, observer: BatchObserver | None, threaded: bool) -> None:
    started = time.monotonic()
    store = _Store(upload, observer)
    sink = _Background(store) if threaded else store
    done = upload.items_done
    shares = observer.shares if observer is not None else 0

    def load(batches) -> None:
        nonlocal done
        for batch in batches:
            sink.put(batch)
            done = batch.start + len(batch.items)
            if observer is not None:
                observer.drain()  # what the writer committed meanwhile

    # A big file loaded with threads is parsed in a child process (PARSE_PROCESS_MIN_BYTES).
    in_child = threaded and upload.size >= settings.PARSE_PROCESS_MIN_BYTES
    try:
        try:
            with _batches(upload, done, shares, in_child) as batches:
                load(batches)
        except ParseFailed as exc:
            if not in_child:
                raise
            # The batches handed over so far are loaded in order; this thread parses on after
            # the last of them, so the load only takes longer.
            logger.warning("upload %s: %s; parsing on in the loading process after item %s",
                           upload.pk, exc, done)
            with _batches(upload, done, shares, in_child=False) as batches:
                load(batches)
        sink.close()  # every batch written
    finally:
        if threaded:
            sink.stop()
        if observer is not None:
            observer.drain()  # what the writer committed last
    loaded = time.monotonic()
    reconnects = _Reconnects(upload.pk)
    again = False
    while True:
        try:
            with connection.wrap_database_errors:  # the observer's COPYs raise psycopg's errors
                outcome = _finish(upload, done, store, observer, again)
            break
        except (OperationalError, InterfaceError) as exc:
            if not reconnects.retry(exc, "the final step"):
                raise
            # What the observer handed over may be half done: it is told (nothing is lost).
            again = True
    if outcome is None:
        return
    locked, finished = outcome
    # Where a load's time went, for operators (and bench.pipeline): loading the events, storing
    # the results monitored on arrival, and the commit (which checks their foreign keys).
    phases = {"load_s": loaded - started, "finish_s": finished - loaded,
              "commit_s": time.monotonic() - finished}
    logger.info("upload %s: %s events loaded in %.2f s, finished in %.2f s, committed in %.2f s",
                upload.pk, locked.events_stored, *phases.values(), extra={"phases": phases})


def _finish(upload: Upload, done: int, store: _Store, observer: BatchObserver | None,
            again: bool) -> tuple[Upload, float] | None:
    """In one transaction, mark the loaded upload parsed (and let the observer finish: the
    audit it asked for starts) or failed when no line was an event (None).  A commit whose
    answer a lost connection swallowed is found done when this runs again (``_Superseded``)."""
    with transaction.atomic():
        locked = Upload.objects.select_for_update().get(pk=upload.pk)
        if locked.status != UploadStatus.PARSING or locked.items_done != done:
            raise _Superseded
        if locked.lines_ok == 0 and not store.events_read:
            # Not a line was an event (lines that were events but clashed with stored ones
            # are another matter: the file was a log).  A green "parsed" would hide that.
            locked.status = UploadStatus.FAILED
            locked.error = nothing_read(locked)
            locked.finished_at = timezone.now()
            locked.save(update_fields=["status", "error", "finished_at"])
            record(locked.workspace, None, LogAction.UPLOAD_FAILED, locked,
                   lines=locked.lines_total,
                   bad_lines=locked.lines_bad, reason=locked.error)
            return None
        locked.status = UploadStatus.PARSED
        locked.bytes_read = locked.size
        locked.finished_at = timezone.now()
        locked.save(update_fields=["status", "bytes_read", "finished_at"])
        record(locked.workspace, None, LogAction.UPLOAD_PARSED, locked, lines=locked.lines_total,
               bad_lines=locked.lines_bad, events=locked.events_stored)
        if observer is not None:
            observer.finished(locked, again=again)
        finished = time.monotonic()
    return locked, finished


class _Reconnects:
    """The rule for a connection lost in the middle of a parse (Postgres restarted, the
    connection terminated), as for audits: not the upload's fault, so it spends no attempt.  The
    work in hand runs again on a new connection after a pause that grows while nothing commits;
    once nothing has committed for ``reconnect_seconds()`` the error goes up to the task, which
    parses on from the checkpoint later (``worker.uploads``)."""

    def __init__(self, upload_id: int):
        self.upload_id = upload_id
        self.since: float | None = None
        self.retries = 0

    def committed(self) -> None:
        self.since, self.retries = None, 0

    def retry(self, exc: BaseException, what: str) -> bool:
        """After ``exc`` (a lost connection): wait, and say whether to run ``what`` again."""
        drop_broken_connection()
        if connection.in_atomic_block:
            return False  # a caller's transaction (tests) is lost with its connection
        now = time.monotonic()
        if self.since is None:
            self.since = now
        if now - self.since >= reconnect_seconds():
            return False
        logger.warning("upload %s: the database connection was lost (%s); %s runs again on a "
                       "new connection", self.upload_id, str(exc).strip()[:200], what)
        time.sleep(min(1.0, 0.01 * 2 ** self.retries))
        self.retries += 1
        return True


# The columns of traces_event after session_id, step, workspace_id, upload_id and source, in the
# order of a row's ``tail``.
TAIL_COLUMNS = DIRECT_COLUMNS[5:]


class _Background:
    """Writes the batches on a thread (and a database connection) of its own.  At most one batch
    waits while another is written, so memory stays bounded; the first failure is raised in the
    parsing thread at its next hand-over."""

    def __init__(self, store: _Store):
        self.store = store
        self.queue: queue.Queue = queue.Queue(maxsize=1)
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name=f"upload-{store.upload.pk}-writer")
        self.thread.start()

    def _run(self) -> None:
        try:
            while (batch := self.queue.get()) is not None:
                if self.failure is None:  # after a failure, only drain the queue
                    try:
                        self.store.put(batch)
                    except BaseException as exc:  # noqa: BLE001 - raised in the parsing thread
                        self.failure = exc
        finally:
            connections.close_all()  # this thread's connection

    def _raise(self) -> None:
        if self.failure is not None:
            raise self.failure

    def put(self, batch: Batch) -> None:
        self._raise()
        self.queue.put(batch)

    def close(self) -> None:
        self.stop()
        self._raise()

    def stop(self) -> None:
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()


def direct_copy_text(rows: list[Row], workspace_id: int, upload_id: int) -> str:
    """The rows in COPY text, in the columns of ``DIRECT_COLUMNS`` (``copytext`` reads it)."""
    head = f"{workspace_id}\t{upload_id}\t{SOURCE}\t"
    return "".join([f"{r.session_id}\t{r.step}\t{head}{r.tail}\n" for r in rows])


class CommittedRows:
    """A batch's rows once committed, for an audit on arrival: as tuples ``(session_id, step,
    lifeline, input, output, data, labels)`` (``tuples()``), as direct COPY text (``text()``;
    ``copy_text`` is the text they went in with, None when they did not go in by one direct
    COPY), each made when asked; and, when the batch has them, as its ``payloads`` per share of
    the sessions with the rows of each share that were stored (``picks()``)."""

    __slots__ = ("rows", "copy_text", "payloads")

    def __init__(self, rows: list[Row], copy_text: str | None,
                 payloads: list[bytes] | None = None):
        self.rows = rows
        self.copy_text = copy_text
        self.payloads = payloads

    def picks(self) -> list[list[tuple[int, int, int]]]:
        """Per share, ``(place in the share's payload, session id, step)`` of each stored row,
        in order."""
        picks: list[list[tuple[int, int, int]]] = [[] for _ in self.payloads or ()]
        for row in self.rows:
            picks[row.share].append((row.position, row.session_id, row.step))
        return picks

    def text(self) -> str:
        if self.copy_text is None:
            # The ids of the workspace and upload are not read back (``monitor_rows``).
            self.copy_text = direct_copy_text(self.rows, 0, 0)
        return self.copy_text

    def tuples(self) -> list[tuple]:
        if self.rows and self.rows[0].event is None:  # parsed in a child process
            return monitor_rows(self.text())
        return [(r.session_id, r.step, r.event["lifeline"] or "", r.event["input"],
                 r.event["output"], r.event["data"], r.event["labels"]) for r in self.rows]


def _values_of(row: Row) -> tuple:
    """``(input, output, data, labels)`` of a row: from its event, or read back from its COPY
    text when it was parsed in a child process (``Row.tail`` starts at ``event_id``)."""
    if row.event is not None:
        event = row.event
        return event["input"], event["output"], event["data"], event["labels"]
    fields = row.tail.split("\t")
    return tuple(json_value(fields[TAIL_COLUMNS.index(name)])
                 for name in ("input", "output", "data", "labels"))


class _Store:
    """Writes one batch in one transaction: events, line errors, counters and checkpoint.
    ``observer`` is shown each batch's stored rows once committed."""

    def __init__(self, upload: Upload, observer: BatchObserver | None = None):
        self.copied: str | None = None
        self.events_read = 0  # lines the parser read as events (stored or not) in this run
        self.upload = upload
        self.workspace_id = upload.workspace_id
        self.observer = observer
        self.position = upload.bytes_read  # of the last batch committed
        self.reconnects = _Reconnects(upload.pk)
        # After a lost connection: whether the last write's commit may have gone through unseen.
        self.unsure = False

    def close(self) -> None:
        pass

    def put(self, batch: Batch) -> None:
        """Write the batch.  When the connection is lost it is written again on a new one, in
        halves (each its own checkpoint), so that a connection lost again and again still lets
        smaller transactions through; a part whose commit went through unseen is skipped."""
        parts = [batch]
        while parts:
            part = parts[0]
            steps = [item.step for item in part.items if isinstance(item, Row)]
            try:
                with connection.wrap_database_errors:  # COPY raises psycopg's own errors
                    written = self._write(part)
            except (OperationalError, InterfaceError) as exc:
                # The rows are numbered afresh on the new connection, as if never tried.
                for row, step in zip((i for i in part.items if isinstance(i, Row)), steps):
                    row.step = step
                end = part.start + len(part.items)
                if not self.reconnects.retry(exc, f"the batch of items {part.start + 1}-{end}"):
                    raise
                self.unsure = True
                parts[0:1] = self._halves(part)
                continue
            parts.pop(0)
            self.reconnects.committed()
            if written:
                self.unsure = False

    def _halves(self, part: Batch) -> list[Batch]:
        """The part cut in two between lines near its middle (a line's items stay together, so
        it is counted once), or whole when it is small or one line."""
        items = part.items
        if len(items) < 2 * MIN_PART_ITEMS:
            return [part]
        middle = len(items) // 2
        cut = next((i for d in range(middle) for i in (middle + d, middle - d)
                    if 0 < i < len(items) and items[i].line != items[i - 1].line), None)
        if cut is None:
            return [part]
        # The halves carry no payloads (the audit on arrival then leaves their sessions to the
        # run's batches) and count their vocabulary from their rows.
        counts = RECOUNT if part.vocabulary else None
        return [Batch(items[:cut], part.start, self.position, None, counts),
                Batch(items[cut:], part.start + cut, part.position, None, counts)]

    def _write(self, batch: Batch) -> bool:
        """One batch in one transaction: events, line errors, counters and checkpoint.  False
        when it had been committed already (before a lost connection)."""
        self.copied = None  # the COPY text of the batch's rows, when they went in directly
        end = batch.start + len(batch.items)
        with transaction.atomic():
            if connection.vendor == "postgresql":
                # Asynchronous commit: a crash may lose the last batches, but never part of one,
                # and their checkpoint goes with them, so the rerun loads them again.  The final
                # status change commits synchronously, which makes every batch before it durable.
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL synchronous_commit TO OFF")
            locked = Upload.objects.select_for_update().get(pk=self.upload.pk)
            if locked.status != UploadStatus.PARSING:
                raise _Superseded
            if locked.items_done != batch.start:
                if self.unsure and locked.items_done >= end:
                    # Committed before the connection was lost: not loaded twice.
                    self.events_read += sum(1 for item in batch.items if isinstance(item, Row))
                    self.position = max(self.position, batch.position)
                    return False
                raise _Superseded
            errors = [e for e in batch.items if isinstance(e, LineError)]
            rows = [r for r in batch.items if isinstance(r, Row)]
            stored: list[Row] = []
            before: dict[int, int | None] = {}
            if rows:
                more, stored, before = self._load(rows)
                errors += more
            UploadError.objects.bulk_create(
                [UploadError(upload_id=self.upload.pk, line=e.line, reason=e.reason,
                             pointer=e.pointer[:500]) for e in errors], batch_size=1000)
            lines = {item.line for item in batch.items}
            bad = {e.line for e in errors}
            if stored and batch.vocabulary:
                counts = batch.vocabulary
                # The vocabulary counts stored events only
                if len(stored) < len(rows) or counts is RECOUNT:
                    counts = vocabulary.counts_of(self.upload.workspace,
                                                  [_values_of(r) for r in stored])
                vocabulary.record(self.upload.workspace, counts, upload_id=self.upload.pk)
            Upload.objects.filter(pk=self.upload.pk).update(
                lines_total=F("lines_total") + len(lines), lines_bad=F("lines_bad") + len(bad),
                lines_ok=F("lines_ok") + len(lines - bad),
                events_stored=F("events_stored") + len(stored),
                items_done=end, bytes_read=batch.position)
        self.events_read += len(rows)
        self.position = batch.position
        if self.observer is not None and stored:
            self.observer.committed(CommittedRows(stored, self.copied, batch.payloads), before)
        return True

    # -- one batch -----------------------------------------------------------------------------

    def _load(self, rows: list[Row]) -> tuple[list[LineError], list[Row], dict]:
        """Store the rows: the line errors of those that could not be, those that were, and
        each session's last step stored before (None when it had none), by session id."""
        sessions = self._sessions(list(dict.fromkeys(r.session for r in rows)))
        next_step = {name: (-1 if last is None else last) + 1
                     for name, (_, last) in sessions.items()}
        errors: list[LineError] = []
        taken: dict[tuple[int, int], int] = {}
        ids_taken: dict[str, int] = {}
        direct = True  # no step of the batch at or below its session's stored steps
        keep = []
        for row in rows:
            session_id, last = sessions[row.session]
            step = row.step if row.step is not None else next_step[row.session]
            next_step[row.session] = max(next_step[row.session], step + 1)
            if last is not None and step <= last:
                direct = False
            key = (session_id, step)
            if key in taken:
                errors.append(LineError(row.line, f"session {row.session!r} has another event "
                                                  f"at step {step} (line {taken[key]})"))
                continue
            event_id = row.event_id
            if event_id is not None:
                if event_id in ids_taken:
                    errors.append(LineError(row.line, f"event id {event_id!r} is already used "
                                                      f"on line {ids_taken[event_id]}"))
                    continue
                ids_taken[event_id] = row.line
            taken[key] = row.line
            row.session_id, row.step = session_id, step
            keep.append(row)
        if not keep:
            return errors, [], {}
        if connection.vendor == "postgresql":
            clashes = self._copy(keep, direct and not self._ids_stored(ids_taken))
        else:
            clashes = self._insert(keep, ids_taken)
        errors += clashes.values()
        stored = [r for r in keep if r.seq not in clashes]
        self._count_steps(stored)
        errors.sort(key=lambda e: e.line)
        return errors, stored, dict(sessions.values())

    def _sessions(self, names: list[str]) -> dict[str, tuple[int, int | None]]:
        """name -> (session id, last stored step), the sessions created when new and locked."""
        found = set(TraceSession.objects.filter(workspace_id=self.workspace_id,
                                                external_id__in=names)
                    .values_list("external_id", flat=True))
        missing = sorted(name for name in names if name not in found)
        if missing:
            # A concurrent upload or live delivery may create the same session: the conflict is
            # expected, and the row is read back (and locked) below whoever created it.  Sorted,
            # so two uploads creating the same sessions wait for each other instead of deadlocking.
            TraceSession.objects.bulk_create(
                [TraceSession(workspace_id=self.workspace_id, external_id=name, source=SOURCE)
                 for name in missing], ignore_conflicts=True, batch_size=1000)
        last = Event.objects.filter(session=OuterRef("pk")).order_by("-step").values("step")[:1]
        locked = (TraceSession.objects.select_for_update()
                  .filter(workspace_id=self.workspace_id, external_id__in=names).order_by("pk")
                  .annotate(last_step=Subquery(last))
                  .values_list("external_id", "pk", "last_step"))
        return {name: (pk, last_step) for name, pk, last_step in locked}

    def _ids_stored(self, ids: dict[str, int]) -> bool:
        names = list(ids)
        return any(Event.objects.filter(workspace_id=self.workspace_id, source=SOURCE,
                                        event_id__in=names[i:i + 1000]).exists()
                   for i in range(0, len(names), 1000))

    def _copy(self, rows: list[Row], direct: bool) -> dict[int, LineError]:
        """Postgres: COPY; returns the rows that clashed with stored events, by seq."""
        table = Event._meta.db_table
        if direct and DIRECT_COPY:
            columns = ", ".join(DIRECT_COLUMNS)
            text = direct_copy_text(rows, self.workspace_id, self.upload.pk)
            try:
                # Wrapped: COPY raises psycopg's errors, not Django's.
                with transaction.atomic(), connection.wrap_database_errors, \
                        connection.cursor() as cursor, \
                        cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                    copy.write(text)
                self.copied = text
                return {}
            except IntegrityError:
                pass  # a concurrent writer got there first: the staged load names the clashes
        with connection.cursor() as cursor:
            cursor.execute(
                "CREATE TEMPORARY TABLE traces_event_incoming (seq integer, session_id bigint,"
                " step integer, event_id varchar(200), lifeline varchar(200),"
                " timestamp timestamptz, input jsonb, output jsonb, data jsonb, labels jsonb,"
                " message_id varchar(200), message_peer varchar(200), message_kind varchar(10))"
                " ON COMMIT DROP")
            with cursor.copy("COPY traces_event_incoming FROM STDIN") as copy:
                copy.write("".join([f"{r.seq}\t{r.session_id}\t{r.step}\t{r.tail}\n"
                                    for r in rows]))
            tail = ", ".join(TAIL_COLUMNS)
            cursor.execute(
                f"""WITH stored AS (
                        INSERT INTO {table} (workspace_id, upload_id, source, session_id, step,
                                             {tail})
                        SELECT %s, %s, %s, session_id, step, {tail}
                        FROM traces_event_incoming ORDER BY seq
                        ON CONFLICT DO NOTHING
                        RETURNING session_id, step)
                    SELECT i.seq, same_step.upload_id, same_step.source, same_id.upload_id,
                           same_id.source
                    FROM traces_event_incoming i
                    LEFT JOIN stored s ON s.session_id = i.session_id AND s.step = i.step
                    LEFT JOIN {table} same_step
                           ON same_step.session_id = i.session_id AND same_step.step = i.step
                    LEFT JOIN {table} same_id
                           ON i.event_id IS NOT NULL AND same_id.workspace_id = %s
                          AND same_id.source = %s AND same_id.event_id = i.event_id
                    WHERE s.session_id IS NULL""",
                [self.workspace_id, self.upload.pk, SOURCE, self.workspace_id, SOURCE])
            clashes = cursor.fetchall()
            cursor.execute("DROP TABLE traces_event_incoming")
        by_seq = {row.seq: row for row in rows}
        return {seq: self._clash(by_seq[seq], step_upload, step_source, id_upload, id_source)
                for seq, step_upload, step_source, id_upload, id_source in clashes}

    def _insert(self, rows: list[Row], ids: dict[str, int]) -> dict[int, LineError]:
        """SQLite (one writer at a time): look the clashes up, then bulk_create the rest."""
        clashes: dict[int, LineError] = {}
        by_session: dict[int, list[Row]] = {}
        for row in rows:
            by_session.setdefault(row.session_id, []).append(row)
        for session_id, group in by_session.items():
            steps = [r.step for r in group]
            stored = {step: (upload_id, source) for step, upload_id, source in
                      Event.objects.filter(session_id=session_id, step__gte=min(steps),
                                           step__lte=max(steps))
                      .values_list("step", "upload_id", "source")}
            for row in group:
                if row.step in stored:
                    clashes[row.seq] = self._clash(row, *stored[row.step], None, None)
        if ids:
            names = list(ids)
            stored_ids = {}
            for i in range(0, len(names), 500):
                stored_ids.update({eid: (upload_id, source) for eid, upload_id, source in
                                   Event.objects.filter(workspace_id=self.workspace_id,
                                                        source=SOURCE,
                                                        event_id__in=names[i:i + 500])
                                   .values_list("event_id", "upload_id", "source")})
            for row in rows:
                if row.seq not in clashes and row.event_id in stored_ids:
                    clashes[row.seq] = self._clash(row, None, None, *stored_ids[row.event_id])
        Event.objects.bulk_create(
            [self._model(row) for row in rows if row.seq not in clashes], batch_size=500)
        return clashes

    def _model(self, row: Row) -> Event:
        event = row.event  # parsed in this process: the unthreaded load always is
        message = event["message"] or {}
        return Event(workspace_id=self.workspace_id, session_id=row.session_id,
                     upload_id=self.upload.pk, step=row.step, source=SOURCE,
                     event_id=event["event_id"], lifeline=event["lifeline"] or "",
                     timestamp=(datetime.fromisoformat(event["timestamp"])
                                if event["timestamp"] else None),
                     input=event["input"], output=event["output"], data=event["data"],
                     labels=event["labels"], message_id=message.get("id") or "",
                     message_peer=message.get("peer") or "",
                     message_kind=message.get("kind") or "")

    def _clash(self, row: Row, step_upload, step_source, id_upload, id_source) -> LineError:
        def origin(upload_id, source) -> str:
            if source and source != SOURCE:
                return f"from {source} ingestion"
            if upload_id == self.upload.pk:
                return "from an earlier line of this file"
            return f"from upload #{upload_id}" if upload_id else "from a deleted upload"

        if step_source is not None:
            return LineError(row.line, f"session {row.session!r} already has an event at step "
                                       f"{row.step} ({origin(step_upload, step_source)}); this "
                                       "line was not stored")
        if id_source is not None:
            return LineError(row.line, f"event id {row.event_id!r} is already stored "
                                       f"({origin(id_upload, id_source)}); this line was not "
                                       "stored")
        return LineError(row.line, f"session {row.session!r} step {row.step} or its event id "
                                   "was stored by a concurrent import; this line was not stored")

    def _count_steps(self, rows: list[Row]) -> None:
        counts: dict[int, int] = {}
        for row in rows:
            counts[row.session_id] = counts.get(row.session_id, 0) + 1
        if not counts:
            return
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {TraceSession._meta.db_table} t SET steps = t.steps + c.n"
                    " FROM unnest(%s::bigint[], %s::integer[]) AS c(id, n) WHERE t.id = c.id",
                    [list(counts), list(counts.values())])
            return
        for session_id, n in counts.items():
            TraceSession.objects.filter(pk=session_id).update(steps=F("steps") + n)

