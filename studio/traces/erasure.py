"""Erasing what was stored: an upload, a session, and what a workspace's retention period
no longer allows.

One erasure is one transaction, done in bulk by SQL (an upload may hold a million events, so no
row is ever loaded into Python): the events go; so do the sessions they leave with no event; so
do the results, violations, label provenance and label corrections of every session that had
one of those events, in every audit run - a result computed over events that no longer exist is
no longer evidence.  A session that also holds events from elsewhere (another upload, live
deliveries) stays with those events.  Each audit run that covered the erased sessions records
the erasure in ``AuditRun.erasures`` (its report says what was erased, when, by whom, and how
many of its results went with it), and the workspace's audit log records who erased what.  The
stored file is removed once the transaction has committed.

Nothing copied from the erased events stays either (``Erasure.copies`` counts what went, by
kind): the vocabulary entries only erased events showed (an atom or path name may be a value:
``tool_call:send_money_to_john_doe``) and the example values erased events held (an upload's
share of the vocabulary is taken off without reading its events, ``vocabulary.take_off_upload``); the rule test cases copied from
the erased steps (``studio.evidence``), with the values of the audit-log entries that describe
them replaced by ``"[erased]"`` (the only change the log allows, migration workspaces 0007); the
ground-truth labels of the sessions removed; the impact-check summaries computed from removed
results (computed again, from what is left, when next shown).

Erasures and audits exclude each other per workspace: the erasure holds a transaction-level
advisory lock (``exclude_result_writers``) and whatever stores results computed from events -
an audit batch, the results monitored on arrival, a recomputed session - holds the same lock
shared (``hold_off_erasures``) while it decides whether its results still stand and writes them.
So an erasure never runs between such a check and the write, and it sees (and removes) every
result stored before it.  A batch computing while an erasure runs sees, in its write
transaction, that the run has recorded an erasure since the batch read its events, and computes
again from the events left (``studio.audits.services.run_batch``).

Traces sits below what keeps results and copies, so those apps take part as ``ErasureParticipant``s
they register when the apps are ready (``studio.audits``: results, runs, label provenance and
corrections; ``studio.evidence``: test cases, log entries, ground truth, impact summaries): an
erasure asks each, in its transaction, what will go (``survey``), to remove it (``erase``), and
to record the erasure where it shows (``recorded``).

Rows go by SQL ``DELETE`` statements (``delete_rows``; the events by their upload or session
column, ``ErasureScope.erased_by``): Django's own ``delete`` would first read every row it
cascades to, and an erasure deletes what points at a row before the row (so it also holds with
the foreign keys checked at once, not at commit: ``bench.erasure --profile`` times each
statement with its checks).  The ids of the sessions touched are
read once into a temporary table (``touched``), not again from the erased events by every
statement.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from django.db import IntegrityError, connection, models, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery, Sum, Value
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from studio.workspaces.acting import acting_token, acting_user
from studio.workspaces.actions import LogAction
from studio.workspaces.models import Workspace
from studio.workspaces.services import record

from .intake import stored_file
from .models import Event, TraceSession, TraceSessionLink, Upload, UploadError, UploadStatus
from .vocabulary import (enqueue_rebuild, forget_erased_names, forget_erased_values,
                         recount_names_left, take_off_upload)

log = logging.getLogger(__name__)

STILL_PARSING = (UploadStatus.RECEIVED, UploadStatus.PARSING)


class StillParsing(Exception):
    """The upload is still being parsed: its events are still arriving."""


# The key space of the advisory locks between a workspace's erasures and its result writers
# (any int4; the second key is the workspace).
_LOCK_SPACE = 0x45524153


def hold_off_erasures(workspace_id: int) -> None:
    """In the caller's transaction, until it ends: no erasure of the workspace runs, and one
    under way has committed.  For whatever writes results computed from events: it takes this
    before checking that its results still stand, then writes them."""
    _advisory_lock(workspace_id, shared=True)


def exclude_result_writers(workspace_id: int) -> None:
    """In the erasure's transaction, first: wait for every result writer of the workspace
    (``hold_off_erasures``) to commit, and keep new ones waiting until this transaction ends."""
    _advisory_lock(workspace_id, shared=False)


def _advisory_lock(workspace_id: int, shared: bool) -> None:
    if connection.vendor != "postgresql":
        return  # SQLite runs one writing transaction at a time anyway
    if not connection.in_atomic_block:
        raise RuntimeError("the erasure lock is a transaction's: take it inside atomic()")
    function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s, %s)", [_LOCK_SPACE, workspace_id % 2**31])


@dataclass
class Erasure:
    """What one erasure removed."""

    kind: str            # "upload" | "session"
    id: int              # the upload's or the session's id
    name: str            # the upload's file name, the session's external id
    events: int          # events erased
    sessions: int        # sessions that had one of them
    sessions_removed: int  # of those, the ones left with no event (removed)
    results: int         # results (in any run) removed with them
    runs: list[int] = field(default_factory=list)  # the runs that record it
    at: datetime | None = None
    by: str | None = None
    reason: str = ""     # why, when no person asked (retention)
    # The copies of erased data removed with the events, by kind (see the module docstring).
    copies: dict[str, int] = field(default_factory=dict)

    def copies_sentence(self) -> str:
        """The copies removed, in a sentence ("" when there were none)."""
        nouns = {"vocabulary_entries": ("vocabulary entry", "vocabulary entries"),
                 "test_cases": ("rule test case", "rule test cases"),
                 "log_entries_redacted": ("audit-log entry's values erased",
                                          "audit-log entries' values erased"),
                 "ground_truth_labels": ("ground-truth label", "ground-truth labels"),
                 "impact_summaries": ("impact-check summary", "impact-check summaries")}
        parts = [f"{n:,} {nouns[kind][n != 1]}" for kind, n in self.copies.items()
                 if n and kind in nouns]
        return f"Copies removed with it: {', '.join(parts)}." if parts else ""

    def for_run(self, results: int, scope: bool = False) -> dict:
        """The entry a run keeps (``AuditRun.erasures``), with its own results removed;
        ``scope``: the run audited the erased upload's sessions."""
        return {"at": self.at.isoformat(), "by": self.by, "kind": self.kind, "id": self.id,
                "name": self.name, "events": self.events, "sessions": self.sessions,
                "sessions_removed": self.sessions_removed, "results": results,
                "reason": self.reason, "scope": scope}


@dataclass
class ErasureScope:
    """One erasure, as its participants see it in its transaction."""

    workspace: Workspace
    events: QuerySet        # the events erased (still stored until every participant erased)
    touched: QuerySet       # the ids of the sessions that had one of them (a subquery; flat)
    emptied: QuerySet       # of those, the sessions left with no event (still stored)
    upload_id: int | None   # the upload erased, if an upload is
    by: object
    # The erased events' column and value: ("upload_id", 7) or ("session_id", 12).
    erased_by: tuple[str, int]
    # What the participants' surveys found: the results computed from the events by run, the
    # runs that record the erasure, and those of them that audited the erased upload.
    results_by_run: dict[int, int] = field(default_factory=dict)
    runs: set[int] = field(default_factory=set)
    runs_in_scope: set[int] = field(default_factory=set)


class ErasureParticipant(Protocol):
    """Keeps something computed or copied from events, which an erasure removes with them."""

    def results_of(self, touched: QuerySet) -> int:
        """How many results computed from the sessions ``touched`` would go (a preview)."""

    def survey(self, scope: ErasureScope) -> None:
        """Before anything is removed: note in ``scope`` what will go."""

    def erase(self, scope: ErasureScope) -> dict[str, int]:
        """Remove what was computed or copied from the erased events; the copies removed, by
        kind (see ``Erasure.copies_sentence``)."""

    def recorded(self, erasure: Erasure, scope: ErasureScope) -> None:
        """The erasure is complete: record it where it shows."""


_participants: list[ErasureParticipant] = []


def register_participant(participant: ErasureParticipant) -> None:
    """Called once the apps are ready, bottom app first (``studio.audits``, then
    ``studio.evidence``): they are asked in that order."""
    if not any(type(p) is type(participant) for p in _participants):
        _participants.append(participant)


def erase_upload(upload: Upload, by=None, reason: str = "") -> Erasure:
    """Erase ``upload``: its events, its stored file, its line errors and the upload itself,
    with what the module docstring lists.  ``StillParsing`` while it is being parsed."""
    with transaction.atomic():
        exclude_result_writers(upload.workspace_id)  # first: nothing of theirs locked yet
        locked = Upload.objects.select_for_update().filter(pk=upload.pk).first()
        if locked is None:  # erased meanwhile
            return Erasure("upload", upload.pk, upload.filename, 0, 0, 0, 0)
        if locked.status in STILL_PARSING:
            raise StillParsing(f"upload {locked.pk} is still being parsed ({locked.percent:g}% "
                               "read); erase it once it has been parsed or has failed")
        # The sessions with no event from elsewhere (another upload, live deliveries).
        only_this = ~Exists(Event.objects.filter(session_id=OuterRef("pk"))
                            .exclude(upload_id=locked.pk))
        erasure = _erase(locked.workspace, "upload", locked.pk, locked.filename,
                         ("upload_id", locked.pk), locked.events_stored, only_this, by, reason,
                         upload_id=locked.pk, shared_vocabulary=locked.vocabulary_shared)
        delete_rows(UploadError.objects.filter(upload_id=locked.pk))
        path = _stored_path(locked)
        _delete_upload(locked)
        if path is not None:
            transaction.on_commit(lambda: _remove_file(path))
    return erasure


def erase_session(session: TraceSession, by=None, reason: str = "") -> Erasure:
    """Erase ``session`` and every event it holds, whatever their source: a live session, or an
    uploaded one (the uploads that brought its events keep their other sessions)."""
    with transaction.atomic():
        exclude_result_writers(session.workspace_id)
        # A live delivery to the session holds this lock while it stores events.
        locked = TraceSession.objects.select_for_update().filter(pk=session.pk).first()
        if locked is None:
            return Erasure("session", session.pk, session.external_id, 0, 0, 0, 0)
        return _erase(locked.workspace, "session", locked.pk, locked.external_id,
                      ("session_id", locked.pk), locked.steps, Q(pk=locked.pk), by, reason)


def preview_upload(upload: Upload) -> dict:
    """What erasing ``upload`` would remove now (the confirmation page)."""
    events = Event.objects.filter(upload_id=upload.pk)
    touched = events.order_by().values("session_id")
    only_this = ~Exists(Event.objects.filter(session_id=OuterRef("pk"))
                        .exclude(upload_id=upload.pk))
    sessions = TraceSession.objects.filter(pk__in=touched)
    return {"events": events.count(), "sessions": sessions.count(),
            "sessions_removed": sessions.filter(only_this).count(),
            "results": sum(p.results_of(touched) for p in _participants),
            "still_parsing": upload.status in STILL_PARSING}


_ERASED = {"upload": LogAction.UPLOAD_ERASED, "session": LogAction.SESSION_ERASED}


def _erase(workspace: Workspace, kind: str, ident: int, name: str, erased_by: tuple[str, int],
           expected: int, left_empty, by, reason: str, upload_id: int | None = None,
           shared_vocabulary: bool = False) -> Erasure:
    """The erasure of the workspace's events whose column ``erased_by[0]`` holds
    ``erased_by[1]`` (about ``expected`` of them, as their upload or session counted them), in
    the caller's transaction.  ``left_empty`` filters the touched sessions to those that have
    no other event (they are removed).  ``shared_vocabulary``: the erased upload's share of the
    vocabulary is kept (``Upload.vocabulary_shared``)."""
    now = timezone.now()
    column, value = erased_by
    events = Event.objects.filter(**{column: value})
    touched = _touched_sessions(column, value)
    sessions = TraceSession.objects.filter(workspace=workspace, pk__in=touched)
    emptied = sessions.filter(left_empty)
    scope = ErasureScope(workspace, events, touched, emptied, upload_id, by, erased_by)
    for participant in _participants:
        participant.survey(scope)
    session_count = sessions.count()
    # The vocabulary: an upload whose share of it is kept takes that off, reading no event.
    # Otherwise the erased events are counted again, on the side the recount reads: the events
    # erased, or those left if fewer (the counts kept tell, without reading the events; either
    # side gives the same vocabulary).
    shared = shared_vocabulary
    read_left = False
    if not shared:
        stored = TraceSession.objects.filter(workspace=workspace).aggregate(n=Sum("steps"))["n"]
        read_left = (stored or 0) - expected < expected

    # The participants' parts first (the audits' results, then the evidence's copies), while the
    # erased events and sessions are still there to be read.
    removed = {}
    for participant in _participants:
        removed.update(participant.erase(scope))
    _drop_steps(sessions, events, left_empty)
    stale = True
    if shared:
        names, stale = take_off_upload(workspace, upload_id)
    elif not read_left:
        names = forget_erased_names(workspace, events)
    doomed = _names_of_emptied(emptied, touched)
    with connection.cursor() as cursor:
        quote = connection.ops.quote_name
        cursor.execute(f"DELETE FROM {quote(Event._meta.db_table)} WHERE {quote(column)} = %s",
                       [value])
        event_count = cursor.rowcount
    removed_count = _delete_emptied(emptied)
    _forget_trace_links(workspace, doomed)
    if read_left:
        names = recount_names_left(workspace)
    copies = {"vocabulary_entries": names, **removed}

    erasure = Erasure(kind, ident, name, event_count, session_count, removed_count,
                      sum(scope.results_by_run.values()), sorted(scope.runs), now, _name_of(by),
                      reason, copies)
    for participant in _participants:
        participant.recorded(erasure, scope)
    if not shared:
        forget_erased_values(workspace)
    elif stale:
        enqueue_rebuild(workspace.pk)
    details = {k: v for k, v in asdict(erasure).items() if k not in ("at", "by", "id")}
    record(workspace, by, _ERASED[kind], None, **{kind: ident}, **details)
    return erasure


def _delete_upload(upload: Upload) -> None:
    """Delete ``upload`` (its events already are): what points at it is set null (audit runs'
    scope) or deleted with it (its vocabulary shares), as ``on_delete`` says.  Not Django's
    ``delete``, which would also set the upload of its events to null: a walk over the index
    entries of every event just deleted (a million of them, still in the index until vacuumed)."""
    relations = [f for f in Upload._meta.get_fields(include_hidden=True)
                 if f.auto_created and not f.concrete and (f.one_to_one or f.one_to_many)
                 and f.related_model is not Event]
    plain = all(f.on_delete in (models.SET_NULL, models.CASCADE) for f in relations) and not any(
        r.auto_created and not r.concrete and (r.one_to_one or r.one_to_many)
        for f in relations if f.on_delete is models.CASCADE
        for r in f.related_model._meta.get_fields(include_hidden=True))
    if not plain:  # something this does not know how to follow: Django's own cascade
        upload.delete()
        return
    for relation in relations:
        pointing = relation.related_model._base_manager.filter(
            **{relation.field.attname: upload.pk})
        if relation.on_delete is models.SET_NULL:
            pointing.update(**{relation.field.attname: None})
        else:
            delete_rows(pointing)
    delete_rows(Upload.objects.filter(pk=upload.pk))


def _names_of_emptied(emptied: QuerySet, touched: QuerySet) -> list[str]:
    """The names of the sessions the erasure will leave with no event, read before their events
    go.  On Postgres those whose step count is now 0 (``_drop_steps``; from the touched ids, as
    ``_delete_emptied`` deletes them), which spares asking each session for a remaining event."""
    if connection.vendor == "postgresql":
        emptied = TraceSession.objects.filter(pk__in=touched, steps=0)
    return list(emptied.values_list("external_id", flat=True))


def _forget_trace_links(workspace: Workspace, names: list[str]) -> None:
    """Which session a trace's spans go to (``TraceSessionLink``) names the session (maybe a
    person's conversation id): gone with it, so that no erased session's name stays behind."""
    for start in range(0, len(names), 1000):
        delete_rows(TraceSessionLink.objects.filter(workspace=workspace,
                                                    session__in=names[start:start + 1000]))


def _delete_emptied(emptied: QuerySet) -> int:
    """Delete the touched sessions left with no event (``emptied``, after the events are
    deleted); returns how many.

    Asking each session whether an event is left reads every index entry of the events just
    deleted (they stay in the index until vacuumed): a million at a million events.  The
    database reads them anyway when it checks the events' foreign key to the sessions deleted.
    So on Postgres the sessions whose step count (the number of events stored, less those
    erased: ``_drop_steps``) is now 0 are deleted, and that check is made at once: should a
    count be wrong and an event be left, the deletion is undone and every touched session is
    asked instead.  The sessions a count says keep events are asked (few of them hold only
    erased events)."""
    if connection.vendor != "postgresql":
        return delete_rows(emptied)
    constraint = _events_to_sessions()
    quote = connection.ops.quote_name
    table = TraceSession._meta.db_table
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {table} WHERE steps = 0 AND id IN "
                           f"(SELECT session_id FROM {_TOUCHED_TABLE})")
            removed = cursor.rowcount
            cursor.execute(f"SET CONSTRAINTS {quote(constraint)} IMMEDIATE")
    except IntegrityError:
        log.warning("erasure: a session's step count was not its number of events; every "
                    "touched session is checked instead")
        return delete_rows(emptied)
    finally:
        if not connection.needs_rollback:
            with connection.cursor() as cursor:
                cursor.execute(f"SET CONSTRAINTS {quote(constraint)} DEFERRED")
    return removed + delete_rows(emptied.exclude(steps=0))


_constraints: dict[str, str] = {}


def _events_to_sessions() -> str:
    """The name of the foreign key from events to their session (Django names it)."""
    name = _constraints.get(connection.alias)
    if name is None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT conname FROM pg_constraint WHERE contype = 'f' "
                           "AND conrelid = %s::regclass AND confrelid = %s::regclass",
                           [Event._meta.db_table, TraceSession._meta.db_table])
            name = _constraints[connection.alias] = cursor.fetchone()[0]
    return name


def _drop_steps(sessions: QuerySet, events: QuerySet, left_empty) -> None:
    """The sessions that keep events: their step count drops by the events erased, and a live
    one's saved monitors (built over them) are dropped, to be rebuilt from what is left."""
    if connection.vendor == "postgresql":
        # Every touched session, by the counts read with the touched ids: the ones left empty
        # are deleted later anyway, and telling them apart here would read the events again.
        table = TraceSession._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {table} SET steps = GREATEST({table}.steps - t.events, 0), "
                           f"monitor_state = NULL FROM {_TOUCHED_TABLE} t "
                           f"WHERE {table}.id = t.session_id")
        return
    erased_here = (events.filter(session_id=OuterRef("pk")).order_by()
                   .values("session_id").annotate(n=Count("id")).values("n"))
    (sessions.exclude(left_empty)
     .update(steps=Greatest(F("steps") - Coalesce(Subquery(erased_here), Value(0)), Value(0)),
             monitor_state=None))


def delete_rows(queryset: QuerySet) -> int:
    """Delete the rows ``queryset`` selects in one statement, none read into Python and nothing
    cascaded or signalled (an erasure deletes what points at a row first); returns how many."""
    model = queryset.model
    select, params = queryset.order_by().values("pk").query.sql_with_params()
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {quote(model._meta.db_table)} "
                       f"WHERE {quote(model._meta.pk.column)} IN ({select})", params)
        return cursor.rowcount


_TOUCHED_TABLE = "erasure_touched_sessions"


def _touched_sessions(column: str, value: int) -> QuerySet:
    """The ids of the sessions that have an erased event, read once (with how many each has)
    into a temporary table, and given as a subquery of the table.  Read once, not asked of the
    events each time: after the events are deleted, the sessions they were in must still be
    found (to remove those left empty)."""
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        # An earlier erasure's, in the same outer transaction (retention erases several) or,
        # on SQLite, where a temporary table lasts as long as the connection.
        cursor.execute(f"DROP TABLE IF EXISTS {_TOUCHED_TABLE}")
        cursor.execute(f"CREATE TEMPORARY TABLE {_TOUCHED_TABLE} "
                       f"{'ON COMMIT DROP ' if postgres else ''}AS "
                       f"SELECT session_id, count(*) AS events FROM {Event._meta.db_table} "
                       f"WHERE {connection.ops.quote_name(column)} = %s GROUP BY session_id",
                       [value])
        if postgres:
            cursor.execute(f"ANALYZE {_TOUCHED_TABLE}")
    return TraceSession.objects.filter(
        pk__in=RawSQL(f"SELECT session_id FROM {_TOUCHED_TABLE}", [])).values_list("pk",
                                                                                   flat=True)


def _name_of(by) -> str | None:
    user = acting_user(by, through_token=False)
    if user is not None:
        return user.get_username()
    token = acting_token(by)
    return f"token {token.name}" if token is not None else None


def _stored_path(upload: Upload):
    return stored_file(upload) if upload.stored_path else None


def _remove_file(path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError:  # the rows are gone; a file left behind is logged, not a failure
        log.exception("erased upload: its stored file %s could not be removed", path)


# ---------------------------------------------------------------------------------------------
# Retention

def erase_expired(workspace: Workspace, now: datetime | None = None) -> list[Erasure]:
    """Erase what the workspace's ``retention_days`` no longer allows: each upload received
    before the cutoff (its events are as old as it is), and each session made of events no
    upload brought (live deliveries) whose last event came before the cutoff.  A live session is
    erased whole: cutting off its beginning would leave a session its rules cannot read."""
    days = workspace.retention_days or 0
    if days <= 0:
        return []
    now = now or timezone.now()
    cutoff = now - timedelta(days=days)
    reason = f"retention: events are kept {days} day{'s' if days != 1 else ''}"
    done = []
    expired = (Upload.objects.filter(workspace=workspace, created_at__lt=cutoff)
               .exclude(status__in=STILL_PARSING).order_by("pk"))
    for upload in expired:
        done.append(erase_upload(upload, reason=reason))
    uploaded = Exists(Event.objects.filter(session_id=OuterRef("pk"), upload__isnull=False))
    stale = (TraceSession.objects.filter(workspace=workspace).filter(~uploaded)
             .filter(Q(last_event_at__lt=cutoff)
                     | Q(last_event_at__isnull=True, created_at__lt=cutoff))
             .order_by("pk"))
    for session in stale:
        done.append(erase_session(session, reason=reason))
    return done


def apply_retention(now: datetime | None = None) -> int:
    """Every workspace's retention period (beat: worker.retention.apply_retention); returns how
    many uploads and sessions were erased."""
    erased = 0
    for workspace in Workspace.objects.filter(retention_days__gt=0).order_by("pk"):
        erased += len(erase_expired(workspace, now))
    return erased
