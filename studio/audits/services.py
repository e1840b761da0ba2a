"""Audits: start a run over a scope of sessions, run its batches, report progress.

``start_audit`` fixes what a run audits - the approved rule versions and the workspace's labelers
at that moment - plans batches of ``settings.AUDIT_BATCH_SIZE`` sessions and enqueues one Celery
task per batch once the transaction has committed.

``run_batch`` is what a task calls, possibly more than once for the same batch (a worker killed
with SIGKILL, a Redis redelivery after the visibility timeout, a duplicate running concurrently).
It is idempotent:

1. claim: ``attempts`` is incremented by a conditional UPDATE; a batch already done (or failed)
   is left alone, and a batch claimed more than ``settings.AUDIT_MAX_ATTEMPTS`` times is marked
   failed, with its run, and the reason;
2. compute, outside any transaction: the batch's events are streamed in step order, labelled with
   the run's labeling and fed to a ``SessionMonitor`` per session - nothing is written and no
   lock is held while the monitors run;
3. store, in one short transaction: lock the batch row, delete whatever results the batch has,
   insert the new ones (COPY on Postgres), mark the batch done only if it was not done already,
   and only then count it in the run's progress (F() expressions; the run row locked to decide
   whether it was the last batch).

A delivery of a batch already done therefore changes nothing, a concurrent duplicate waits for the
first one's transaction and then finds the batch done, and a rerun replaces, never adds to, what a
batch stored.

Erasures (``studio.traces.erasure``) and stores exclude each other: the store transaction first
holds the workspace's erasure lock shared (``hold_off_erasures``), so no erasure runs while it
checks and writes, and an erasure sees every result stored before it.  An erasure records itself
on every unfinished run covering its sessions (``AuditRun.erasures``); a store that finds an entry
there the batch had not seen when it was claimed - the events it computed from may include erased
ones - discards its results and the batch is computed again from the events left
(``ERASURE_RECOMPUTES`` times optimistically, then under the lock), and the erasure's entry counts
the batches computed again.

Steps in results (``first_verdict_step``, the timeline, violations, witnesses) are the events'
stored step numbers; the monitors count positions, which are the same when a session's steps run
0, 1, 2, ...
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.db.models import F
from django.utils import timezone

from studio import tasks
from studio.errors import ServiceError
from studio.bulkwork import fewer_collections
from studio.caching import LruCache
from studio.labeling import LabelerConfigError, Labeling, labeling_from_snapshot
from studio.labeling.llm import LLMError, config_from_env
from studio.logic.parser import FormulaSyntaxError
from studio.monitor import FastSessionMonitor, RuleError, RuleSet, SessionMonitor
from studio.monitor.results import (
    RESULT_COLUMNS,
    VIOLATION_COLUMNS,
    WitnessText,
    copy_texts,
    session_results,
)
from studio.monitor.results import StoredResult as _Result
from studio.rules.monitoring import approved_versions, labeler_snapshot, ruleset_for
from studio.connections import drop_broken_connection
from studio.traces.erasure import hold_off_erasures
from studio.traces.formats.base import fast_loads
from studio.traces.models import Event, TraceSession, UploadStatus
from studio.traces.models import monitor_event as traces_monitor_event
from studio.workspaces.acting import acting_user
from studio.workspaces.actions import LogAction
from studio.workspaces.services import record

from .models import (
    AuditBatch,
    AuditRun,
    BatchStatus,
    LabelCorrection,
    LabelProvenance,
    RunStatus,
    SessionResult,
    ViolationRecord,
)

log = logging.getLogger(__name__)

# Events fetched per round trip while a batch streams its sessions.
EVENT_CHUNK = 5000
# Error texts kept on batches and runs.
ERROR_LIMIT = 2000
# Events handed at once to labelers that answer many steps per request (LLM labelers): each
# asks about the ones it does not know yet in requests of its own batch size.
LABEL_GROUP_EVENTS = 200


# Times a batch whose events were erased while it computed is computed again without holding
# off erasures; after that it computes under the lock (no erasure can then come in between).
ERASURE_RECOMPUTES = 2


class BatchRetry(Exception):
    """A batch attempt failed and attempts remain: the task should run it again later."""


# ---------------------------------------------------------------------------------------------
# Starting

def _scope(workspace, upload) -> list[int]:
    if upload is None:
        return list(TraceSession.objects.filter(workspace=workspace).order_by("id")
                    .values_list("id", flat=True))
    return upload_scope(upload)


def upload_scope(upload) -> list[int]:
    """The sessions an audit of ``upload`` covers: those it added events to.  A session is
    audited whole, also the events other uploads (or live ingestion) added to it."""
    return list(Event.objects.filter(upload=upload).order_by("session_id")
                .values_list("session_id", flat=True).distinct())


def start_audit(workspace, rule_set=None, upload=None, by=None) -> AuditRun:
    """Create a run of the rule set's (or the workspace's) approved rule versions over the
    upload's sessions (or all the workspace's sessions) and enqueue its batches after commit."""
    if rule_set is not None and rule_set.workspace_id != workspace.id:
        raise ServiceError("no such rule set in this workspace", field="rule_set", status=404)
    if upload is not None:
        if upload.workspace_id != workspace.id:
            raise ServiceError("no such upload in this workspace", field="upload", status=404)
        if upload.status in (UploadStatus.RECEIVED, UploadStatus.PARSING):
            raise ServiceError(f"upload {upload.id} ({upload.filename}) is still being parsed; "
                               "audit it once it is parsed", field="upload", status=409)
    versions = approved_versions_or_refuse(workspace, rule_set)
    snapshot = pinned_labelers(labeler_snapshot(workspace))
    try:  # refuse now what every batch would fail on
        ruleset_for(versions)
        labeling_from_snapshot(snapshot)
    except (RuleError, FormulaSyntaxError, LabelerConfigError, ValueError) as exc:
        raise ServiceError(f"cannot audit with these rules and labelers: {exc}") from None
    return create_run(workspace, rule_set, upload, versions, snapshot, by,
                      _scope(workspace, upload))


def approved_versions_or_refuse(workspace, rule_set=None, field: str = "rule_set") -> list:
    """The rule set's (or the workspace's) approved versions; a ServiceError naming ``field``
    when there are none, since only approved versions audit."""
    versions = approved_versions(workspace, rule_set)
    if not versions:
        what = (f"rule set {rule_set.name!r}" if rule_set is not None
                else f"workspace {workspace.slug!r}")
        raise ServiceError(f"{what} has no approved rule versions", field=field)
    return versions


class Precomputed:
    """Results of sessions audited before their run exists (monitored as their upload
    arrived): the ``sessions`` they cover, and ``store(batches)``, which stores them into the
    run's batches of those sessions."""

    def __init__(self, sessions, store: Callable[[list[AuditBatch]], None]):
        self.sessions = set(sessions)
        self.store = store

    @classmethod
    def of(cls, results: dict[int, list[_Result]]) -> Precomputed:
        """Results at hand, by session."""
        def store(batches: list[AuditBatch]) -> None:
            for batch in batches:
                insert_results(batch, [r for s in batch.session_ids for r in results[s]])

        return cls(results, store)


def create_run(workspace, rule_set, upload, versions, snapshot: list[dict], by,
               session_ids: list[int], precomputed: Precomputed | None = None) -> AuditRun:
    """Create the run, plan its batches and enqueue them after commit.  ``precomputed``: the
    results of sessions already audited, stored at once in batches of their own, done."""
    done = precomputed.sessions if precomputed is not None else set()
    size = max(1, settings.AUDIT_BATCH_SIZE)
    ready = [s for s in session_ids if s in done]
    waiting = [s for s in session_ids if s not in done]
    ready_chunks = [ready[i:i + size] for i in range(0, len(ready), size)]
    chunks = ready_chunks + [waiting[i:i + size] for i in range(0, len(waiting), size)]
    now = timezone.now()
    with transaction.atomic():
        if ready_chunks:  # results computed from events: no erasure between check and write
            hold_off_erasures(workspace.id)
        run = AuditRun.objects.create(
            workspace=workspace, rule_set=rule_set, upload=upload, labelers=snapshot,
            created_by=acting_user(by), sessions_total=len(session_ids), batches_total=len(chunks),
            sessions_done=len(ready), batches_done=len(ready_chunks),
            status=RunStatus.QUEUED if waiting else RunStatus.DONE,
            finished_at=None if waiting else now)
        run.rule_versions.set(versions)
        batches = AuditBatch.objects.bulk_create(
            [AuditBatch(run=run, index=i, session_ids=chunk) for i, chunk in enumerate(chunks)])
        if ready_chunks:
            precomputed.store(batches[:len(ready_chunks)])
            AuditBatch.objects.filter(pk__in=[b.pk for b in batches[:len(ready_chunks)]]).update(
                status=BatchStatus.DONE, attempts=1, started_at=now, finished_at=now)
        record(workspace, by, LogAction.AUDIT_STARTED, run,
               rule_set=rule_set.name if rule_set is not None else None,
               upload=upload.id if upload is not None else None,
               rule_versions=[v.id for v in versions], sessions=len(session_ids),
               batches=len(chunks), audited_on_arrival=len(ready))
        if not waiting:
            record(workspace, None, LogAction.AUDIT_FINISHED, run, sessions=len(session_ids),
                   batches=len(chunks))
        _enqueue(run.id, [b.id for b in batches[len(ready_chunks):]])
    return run


def pinned_labelers(snapshot: list[dict]) -> list[dict]:
    """The snapshot with every LLM labeler's model named: a run's labels must not change with
    the environment's LLM_MODEL after it started (and the cache is keyed by model)."""
    asking = [d for d in snapshot if d["kind"] == "llm"]
    if not asking:
        return snapshot
    atoms = ", ".join(d["atom"] for d in asking)
    try:
        config = config_from_env()
    except LLMError as exc:
        raise ServiceError(f"the LLM labelers ({atoms}) need an endpoint: {exc.message}",
                           field="labelers") from None
    pinned = []
    for declared in snapshot:
        declared_config = declared["config"] if isinstance(declared.get("config"), dict) else {}
        if declared["kind"] == "llm" and not declared_config.get("model"):
            if not config.model:
                raise ServiceError(f"the LLM labeler of {declared['atom']!r} names no model "
                                   "and LLM_MODEL is not set", field="labelers")
            declared = {**declared, "config": {**declared_config, "model": config.model}}
        pinned.append(declared)
    return pinned


def resume_audit(run: AuditRun, by=None) -> int:
    """Enqueue again every batch of the run that is not done: those a broker outage lost, and,
    for a failed run, the failed ones, which start again with fresh attempts (the run is
    running again and completes like any other).  Duplicates are harmless.  Returns how many."""
    with transaction.atomic():
        run = AuditRun.objects.select_for_update().select_related("workspace").get(pk=run.pk)
        if run.status == RunStatus.DONE:
            raise ServiceError(f"audit {run.id} is done; nothing to resume", status=409)
        failed = 0
        if run.status == RunStatus.FAILED:
            failed = run.batches.filter(status=BatchStatus.FAILED).update(
                status=BatchStatus.PENDING, attempts=0, error="", finished_at=None)
            run.status, run.finished_at = RunStatus.RUNNING, None
        ids = list(run.batches.filter(status__in=[BatchStatus.PENDING, BatchStatus.RUNNING])
                   .values_list("id", flat=True))
        run.error, run.requeued_at = "", timezone.now()
        run.save(update_fields=["status", "finished_at", "error", "requeued_at"])
        record(run.workspace, by, LogAction.AUDIT_RESUMED, run, batches=len(ids),
               failed_batches=failed)
        _enqueue(run.id, ids)
    return len(ids)


def requeue_stalled_audits(stall_seconds: float | None = None) -> list[int]:
    """Enqueue again the unfinished batches of every run that made no progress - no batch
    claimed or finished, not started or requeued - for ``stall_seconds`` (default
    ``settings.AUDIT_STALL_SECONDS``).  What beat's sweeper calls; returns the runs requeued.

    A broker can lose a task for good (Redis: a worker killed between popping a message and
    recording it as unacknowledged), and then nothing else would ever run that batch."""
    stall = settings.AUDIT_STALL_SECONDS if stall_seconds is None else stall_seconds
    now = timezone.now()
    cutoff = now - timedelta(seconds=stall)
    requeued = []
    unfinished = AuditRun.objects.filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING],
                                         created_at__lt=cutoff)
    for run in unfinished.select_related("workspace"):
        latest = [run.created_at, run.requeued_at]
        for batch in run.batches.only("started_at", "finished_at"):
            latest += [batch.started_at, batch.finished_at]
        if max(t for t in latest if t is not None) >= cutoff:
            continue
        ids = list(run.batches.filter(status__in=[BatchStatus.PENDING, BatchStatus.RUNNING])
                   .values_list("id", flat=True))
        with transaction.atomic():
            # Conditional, so two sweepers at once requeue a run once.
            if not AuditRun.objects.filter(pk=run.pk, requeued_at=run.requeued_at).update(
                    requeued_at=now):
                continue
            record(run.workspace, None, LogAction.AUDIT_REQUEUED, run, batches=len(ids),
                   reason=f"no progress for {stall:.0f} s")
            _enqueue(run.id, ids)
        log.warning("audit %s made no progress for %.0f s: %d batches enqueued again", run.id,
                    stall, len(ids))
        requeued.append(run.id)
    return requeued


class QueueUnavailable(ServiceError):
    status = 503


def queue_unavailable_message(run_id: int) -> str:
    return (f"audit {run_id} is stored but the task queue is unavailable, so its batches "
            f"are not queued; resume it (POST .../audits/{run_id}/resume) once the queue "
            "is back")


def _enqueue(run_id: int, batch_ids: list[int]) -> None:
    """Run the batches in workers, once the current transaction commits; a QueueUnavailable
    from the commit when the broker cannot be reached."""

    def unavailable(exc) -> None:
        # The run is stored; its batches wait.  Resuming enqueues them again (duplicates of
        # those that did get through are harmless).
        log.warning("audit %s: the broker is unavailable (%s); batches not enqueued", run_id, exc)
        message = queue_unavailable_message(run_id)
        AuditRun.objects.filter(pk=run_id).update(error=message)
        raise QueueUnavailable(message) from None

    tasks.enqueue_each(tasks.RUN_AUDIT_BATCH, [(batch_id,) for batch_id in batch_ids],
                       unavailable=unavailable)


# ---------------------------------------------------------------------------------------------
# Running one batch

_prepared = threading.local()
_PREPARED_KEEP = 8


def prepared_rules(run: AuditRun) -> tuple[RuleSet, Labeling, list[int]]:
    """The run's compiled rules, labeling and rule version ids (in the rule set's order).

    A RuleSet builds its automata while it runs, so it is kept (per thread, the last few) and
    shared by every batch - and every later run - auditing the same approved versions with the
    same labelers: approved versions never change, and the key holds the labelers' settings.
    The labeling carries the workspace's label corrections as they are now (read afresh).
    """
    cache = getattr(_prepared, "cache", None)
    if cache is None:
        cache = _prepared.cache = LruCache(_PREPARED_KEEP)
    versions = list(run.rule_versions.select_related("rule").order_by("rule__name", "id"))
    key = (tuple((v.id, v.rule.name, v.formula) for v in versions),
           json.dumps(run.labelers, sort_keys=True))
    found = cache.get(key)
    if found is None:
        found = (ruleset_for(versions), labeling_from_snapshot(run.labelers),
                 [v.id for v in versions])
        cache.put(key, found)
    ruleset, labeling, version_ids = found
    return ruleset, labeling.corrected(label_corrections(run.workspace_id)), version_ids


def prefetch_answers(run: AuditRun, session_id: int, through_step: int | None = None) -> None:
    """Let the run's batched labelers (LLM labelers) look up what they already answered about
    the session's steps, in groups: the session page replays a session one step at a time,
    which would otherwise read each stored answer with a query of its own."""
    _, labeling, _ = prepared_rules(run)
    if not labeling.batched_labelers:
        return
    events = Event.objects.filter(session_id=session_id)
    if through_step is not None:
        events = events.filter(step__lte=through_step)
    rows = events.order_by("step").values_list(*_EVENT_FIELDS).iterator(chunk_size=EVENT_CHUNK)
    for _ in answered_in_groups(rows, labeling, None):
        pass


def label_corrections(workspace_id: int) -> dict[tuple[int, int], dict[str, bool]]:
    """``{(session id, step): {atom: true or false}}``: what people corrected in the workspace
    (a few per session reviewed by hand, so all of them are read at once)."""
    out: dict[tuple[int, int], dict[str, bool]] = {}
    for session_id, step, atom, value in (
            LabelCorrection.objects.filter(workspace_id=workspace_id)
            .values_list("event__session_id", "event__step", "atom", "value")):
        out.setdefault((session_id, step), {})[atom] = value
    return out


_EVENT_FIELDS = ("session_id", "step", "lifeline", "input", "output", "data", "labels")


def session_events(session_ids: list[int]) -> Iterator[tuple]:
    """The batch's events as rows ``(session_id, step, lifeline, input, output, data, labels)``,
    session after session, each session's in step order.  Streamed through a server-side cursor
    on Postgres: never the whole batch in memory."""
    if not session_ids:
        return iter(())
    if connection.vendor == "postgresql":
        return _events_postgres(session_ids)
    return (Event.objects.filter(session_id__in=session_ids).order_by("session_id", "step")
            .values_list(*_EVENT_FIELDS).iterator(chunk_size=EVENT_CHUNK))


def _events_postgres(session_ids: list[int]) -> Iterator[tuple]:
    # One index scan per session, in step order, joined laterally: no sort of the whole batch
    # (a sort spills to disk at this size and takes twice as long).  SQL promises no order
    # without ORDER BY, so compute_batch checks it and refuses rows out of order.  Postgres
    # packs each row into one JSON array, decoded with one json.loads: a third of the time of
    # four JSON fields decoded one by one (SQL NULL and JSON null both read as None, as the ORM
    # reads them).
    loads = fast_loads
    sql = (f"SELECT s.id, json_build_array(e.step, e.lifeline, e.input, e.output, e.data,"
           f" e.labels)::text FROM unnest(%s::bigint[]) AS s(id) CROSS JOIN LATERAL"
           f" (SELECT * FROM {Event._meta.db_table} x WHERE x.session_id = s.id"
           f" ORDER BY x.step) AS e")
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, [list(session_ids)])
        while rows := cursor.fetchmany(EVENT_CHUNK):
            for session_id, packed in rows:
                yield (session_id, *loads(packed))


class OutOfOrder(RuntimeError):
    """The event stream broke its order (a session's steps must come together, increasing)."""


def monitor_event(row: tuple) -> dict:
    """A streamed event row as the monitors read it (the shape of ``Event.as_monitor_event``)."""
    return traces_monitor_event(*row)  # one definition of the event, shared with live


def compute_batch(session_ids: list[int], ruleset: RuleSet, labeling: Labeling,
                  version_ids: list[int], provenance: list | None = None) -> list[_Result]:
    """Every session's result for every rule, in the order of ``session_ids``.  Reads only.

    With labelers that answer many steps per request (LLM labelers), their answers are also
    appended to ``provenance`` when given, as ``(session id, step, atom, kind, model,
    confidence, value)``."""
    out: dict[int, list[_Result]] = {}
    texts = WitnessText()
    monitor = None
    current = None
    previous = None
    steps: list[int] = []
    label = labeling.label
    rows = session_events(session_ids)
    if labeling.batched_labelers:
        rows = answered_in_groups(rows, labeling, provenance)
    for row in rows:
        session_id = row[0]
        if session_id != current:
            if monitor is not None:
                out[current] = session_results(current, monitor, steps, version_ids, texts)
            if session_id in out:
                raise OutOfOrder(f"the events of session {session_id} did not come together")
            current, monitor, previous, steps = (
                session_id, FastSessionMonitor(ruleset, witnesses=True), None, [])
        elif row[1] <= steps[-1]:
            raise OutOfOrder(f"session {session_id}: step {row[1]} came after {steps[-1]}")
        event = monitor_event(row)
        monitor.ingest(label(event, previous))
        previous = event
        steps.append(row[1])
    if monitor is not None:
        out[current] = session_results(current, monitor, steps, version_ids, texts)
    results = []
    for session_id in session_ids:
        found = out.get(session_id)
        if found is None:  # a session without events
            found = session_results(session_id, SessionMonitor(ruleset, witnesses=True), [],
                                     version_ids, texts)
        results.extend(found)
    return results


def answered_in_groups(rows: Iterator[tuple], labeling: Labeling,
                        provenance: list | None) -> Iterator[tuple]:
    """The same rows, each group of LABEL_GROUP_EVENTS first shown to the batched labelers so
    they ask about many steps per request; labelling a row afterwards reads their answers from
    memory.  Memory stays bounded by the group."""
    group: list[tuple] = []
    for row in rows:
        group.append(row)
        if len(group) >= LABEL_GROUP_EVENTS:
            _answer_group(group, labeling, provenance)
            yield from group
            group = []
    if group:
        _answer_group(group, labeling, provenance)
        yield from group


def _answer_group(group: list[tuple], labeling: Labeling, provenance: list | None) -> None:
    events = [monitor_event(row) for row in group]
    for labeler in labeling.batched_labelers:
        answers = labeler.answers(events)
        if provenance is not None:
            provenance.extend((row[0], row[1], labeler.atom, labeler.kind, answer.model,
                               answer.confidence, answer.value)
                              for row, answer in zip(group, answers))


def run_batch(batch_id: int, force: bool = False, after_lost_connection: bool = False) -> str:
    """Run one batch (what the Celery task calls).  Returns what happened: "done", "duplicate"
    (already done, nothing changed), "replaced" (``force`` on a done batch: results recomputed
    and replaced, progress unchanged), "failed" or "gone".  Raises ``BatchRetry`` when this
    attempt failed and the batch may be tried again.

    A lost database connection (Postgres restarted, the connection terminated) is not the
    batch's fault: it is raised as it is, the broken connection closed, and the task runs the
    batch again with ``after_lost_connection``, which claims it without spending an attempt
    (the task bounds those reruns by time, ``AUDIT_STALL_SECONDS``)."""
    batch = _claim(batch_id, force, spend=not after_lost_connection)
    if isinstance(batch, str):
        return batch
    run = batch.run
    try:
        # The erasures the run had recorded when the batch was claimed, before any event was
        # read: one recorded after may have erased some of them.
        seen = len(run.erasures)
        for tries in range(ERASURE_RECOMPUTES + 1):
            under_lock = tries == ERASURE_RECOMPUTES
            results, provenance = (None, None) if under_lock else _compute(batch)
            outcome = _store(batch, results, force, provenance, erasures_seen=seen,
                             compute=lambda: _compute(batch))
            if not isinstance(outcome, _ErasedMeanwhile):
                return outcome
            log.info("audit batch %s (run %s): events erased while it computed; computing "
                     "again", batch.id, run.id)
            seen = outcome.erasures
        raise AssertionError("unreachable: the last try computes under the lock")
    except (OperationalError, InterfaceError) as exc:
        log.warning("audit batch %s (run %s): the database connection was lost; it runs again "
                    "without counting an attempt", batch.id, run.id, exc_info=True)
        drop_broken_connection()
        try:  # the reason, should the attempts count again and run out (best effort)
            AuditBatch.objects.filter(pk=batch.pk).update(
                error=f"{type(exc).__name__}: {exc}"[:ERROR_LIMIT])
        except DatabaseError:
            drop_broken_connection()
        raise
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"[:ERROR_LIMIT]
        log.exception("audit batch %s (run %s) attempt %s failed", batch.id, run.id,
                      batch.attempts)
        AuditBatch.objects.filter(pk=batch.pk).update(error=reason)
        if batch.attempts >= settings.AUDIT_MAX_ATTEMPTS:
            _fail(batch, reason)
            return "failed"
        raise BatchRetry(reason) from exc


def _compute(batch: AuditBatch) -> tuple[list[_Result], list]:
    """The batch's results and LLM label provenance from its sessions' events as they are now
    (the labeling with today's label corrections).  Reads only."""
    ruleset, labeling, version_ids = prepared_rules(batch.run)
    provenance: list = []
    with fewer_collections():
        results = compute_batch(batch.session_ids, ruleset, labeling, version_ids, provenance)
    return results, provenance


class _ErasedMeanwhile:
    """What ``_store`` answers when the run recorded an erasure the batch had not seen: its
    results may read erased events and were not stored.  ``erasures``: how many it has now."""

    def __init__(self, erasures: int):
        self.erasures = erasures


def _claim(batch_id: int, force: bool, spend: bool = True) -> AuditBatch | str:
    now = timezone.now()
    if spend:
        claimed = (AuditBatch.objects
                   .filter(pk=batch_id, status__in=[BatchStatus.PENDING, BatchStatus.RUNNING],
                           attempts__lt=settings.AUDIT_MAX_ATTEMPTS)
                   .update(attempts=F("attempts") + 1, status=BatchStatus.RUNNING,
                           started_at=now))
    else:  # the attempt the lost connection interrupted goes on
        claimed = (AuditBatch.objects
                   .filter(pk=batch_id, status__in=[BatchStatus.PENDING, BatchStatus.RUNNING])
                   .update(status=BatchStatus.RUNNING, started_at=now))
    batch = AuditBatch.objects.select_related("run").filter(pk=batch_id).first()
    if batch is None:
        return "gone"  # its run was deleted
    if claimed:
        AuditRun.objects.filter(pk=batch.run_id, status=RunStatus.QUEUED).update(
            status=RunStatus.RUNNING)
        stale = queue_unavailable_message(batch.run_id)
        if batch.run.error == stale:  # its batches are queued after all (resumed, swept)
            AuditRun.objects.filter(pk=batch.run_id, error=stale).update(error="")
            batch.run.error = ""
        return batch
    if batch.status == BatchStatus.DONE:
        return batch if force else "duplicate"
    if batch.status == BatchStatus.FAILED:
        return "failed"
    # Claimed AUDIT_MAX_ATTEMPTS times already, and never finished.
    reason = (f"gave up after {batch.attempts} attempts; last error: {batch.error}"
              if batch.error else
              f"gave up after {batch.attempts} attempts: the worker running it stopped "
              "(killed, lost or past the time limit) each time")
    _fail(batch, reason)
    return "failed"


def _fail(batch: AuditBatch, reason: str) -> None:
    now = timezone.now()
    with transaction.atomic():
        marked = (AuditBatch.objects.filter(pk=batch.pk)
                  .exclude(status=BatchStatus.DONE)
                  .update(status=BatchStatus.FAILED, error=reason[:ERROR_LIMIT], finished_at=now))
        if not marked:
            return
        failed = (AuditRun.objects.filter(pk=batch.run_id)
                  .exclude(status__in=[RunStatus.DONE, RunStatus.FAILED])
                  .update(status=RunStatus.FAILED, finished_at=now,
                          error=f"batch {batch.index} failed: {reason}"[:ERROR_LIMIT]))
        if failed:
            run = AuditRun.objects.select_related("workspace").get(pk=batch.run_id)
            record(run.workspace, None, LogAction.AUDIT_FAILED, run, batch=batch.index,
                   reason=reason[:ERROR_LIMIT])


def _store(batch: AuditBatch, results: list[_Result] | None, force: bool,
           provenance: list | None = None, erasures_seen: int | None = None,
           compute: Callable[[], tuple[list[_Result], list]] | None = None
           ) -> str | _ErasedMeanwhile:
    """Store the batch's results (see the module docstring).  ``erasures_seen``: the run's
    erasures when the batch was claimed; if it has more now, the results are discarded
    (``_ErasedMeanwhile``).  ``results`` None: ``compute`` them here, under the lock."""
    with transaction.atomic():
        hold_off_erasures(batch.run.workspace_id)  # first: an erasure under way commits first
        # The lock serialises duplicates of this batch: a second one waits here, then sees done.
        status = (AuditBatch.objects.select_for_update().filter(pk=batch.pk)
                  .values_list("status", flat=True).first())
        if status is None:
            return "gone"
        if status == BatchStatus.DONE and not force:
            return "duplicate"
        if status == BatchStatus.FAILED:
            return "failed"
        if results is None:  # computed here, under the lock: no erasure comes in between
            results, provenance = compute()
        elif erasures_seen is not None:
            erasures = len(AuditRun.objects.filter(pk=batch.run_id)
                           .values_list("erasures", flat=True).first() or [])
            if erasures != erasures_seen:
                _count_recomputed(batch.run_id, erasures_seen)
                return _ErasedMeanwhile(erasures)
        ViolationRecord.objects.filter(result__batch_id=batch.pk).delete()
        SessionResult.objects.filter(batch_id=batch.pk).delete()
        LabelProvenance.objects.filter(batch_id=batch.pk).delete()
        # A session deleted since the run was planned (or erased) has nothing left to report.
        kept = set(TraceSession.objects.filter(id__in=batch.session_ids)
                   .values_list("id", flat=True))
        if len(kept) < len(batch.session_ids):
            results = [r for r in results if r.session_id in kept]
            provenance = [p for p in provenance or () if p[0] in kept]
        insert_results(batch, results)
        insert_provenance(batch, provenance or ())
        now = timezone.now()
        counted = (AuditBatch.objects.filter(pk=batch.pk).exclude(status=BatchStatus.DONE)
                   .update(status=BatchStatus.DONE, finished_at=now, error=""))
        if not counted:
            return "replaced"
        AuditRun.objects.filter(pk=batch.run_id).update(
            sessions_done=F("sessions_done") + len(batch.session_ids),
            batches_done=F("batches_done") + 1)
        run = (AuditRun.objects.select_for_update(of=("self",)).select_related("workspace")
               .get(pk=batch.run_id))
        if run.batches_done >= run.batches_total and run.status in (RunStatus.QUEUED,
                                                                     RunStatus.RUNNING):
            run.status = RunStatus.DONE
            run.finished_at = now
            run.error = ""  # a finished run has no error (a stale "queue unavailable" goes)
            run.save(update_fields=["status", "finished_at", "error"])
            record(run.workspace, None, LogAction.AUDIT_FINISHED, run, sessions=run.sessions_done,
                   batches=run.batches_done)
    return "done"


def _count_recomputed(run_id: int, erasures_seen: int) -> None:
    """Count, on each erasure the run recorded after ``erasures_seen``, a batch whose results
    were computed while it ran and were computed again: the report says so."""
    run = AuditRun.objects.select_for_update(of=("self",)).get(pk=run_id)
    run.erasures = [
        {**entry, "recomputed_batches": entry.get("recomputed_batches", 0) + 1}
        if i >= erasures_seen else entry for i, entry in enumerate(run.erasures)]
    run.save(update_fields=["erasures"])


def insert_results(batch: AuditBatch, results: list[_Result]) -> None:
    if not results:
        return
    if connection.vendor == "postgresql":
        _copy(batch, results)
        return
    created = SessionResult.objects.bulk_create([
        SessionResult(run_id=batch.run_id, batch_id=batch.pk, session_id=r.session_id,
                      rule_version_id=r.version_id, steps=r.steps, verdict=r.verdict,
                      first_verdict_step=r.first_verdict_step, final=r.final,
                      residual=r.residual, violation_count=len(r.violations),
                      timeline=r.timeline, triggered=r.triggered)
        for r in results], batch_size=500)
    ViolationRecord.objects.bulk_create(
        [ViolationRecord(result_id=row.pk, trigger=t, detected=d, at_end=e,
                         witness=json.loads(w))
         for row, r in zip(created, results) for t, d, e, w in r.violations],
        batch_size=1000)


def insert_provenance(batch: AuditBatch, provenance) -> None:
    LabelProvenance.objects.bulk_create(
        [LabelProvenance(run_id=batch.run_id, batch_id=batch.pk, session_id=session_id,
                         step=step, atom=atom, labeler=kind, model=model, confidence=confidence,
                         value=value)
         for session_id, step, atom, kind, model, confidence, value in provenance],
        batch_size=1000)


def _copy(batch: AuditBatch, results: list[_Result]) -> None:
    """Postgres: ids drawn from the sequence, then COPY - several times faster than INSERTs for
    the violation rows, of which a batch may have hundreds of thousands."""
    texts = copy_texts(results, draw_result_ids(len(results)), batch.run_id, batch.pk)
    copy_result_texts(*texts)


def draw_result_ids(count: int) -> list[int]:
    """Postgres: ``count`` new ids of stored results (violations point at them)."""
    table = SessionResult._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT nextval(pg_get_serial_sequence('{table}', 'id')) "
                       "FROM generate_series(1, %s)", [count])
        return [row[0] for row in cursor.fetchall()]


def copy_result_texts(results_text: str, violations_text: str) -> None:
    """Postgres: COPY results and their violations from ``copy_texts``' texts."""
    # COPY goes to psycopg directly: without the wrapper a lost connection raises psycopg's
    # error, which the batch's "lost connection: run again, no attempt spent" rule never sees.
    with connection.wrap_database_errors, connection.cursor() as cursor:
        for table, columns, text in (
                (SessionResult._meta.db_table, RESULT_COLUMNS, results_text),
                (ViolationRecord._meta.db_table, VIOLATION_COLUMNS, violations_text)):
            if text:
                with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                    copy.write(text)


# ---------------------------------------------------------------------------------------------
# Progress

def audit_progress(run: AuditRun) -> dict:
    """What a progress bar shows: status, percent of sessions done, the counts and any error."""
    if run.status == RunStatus.DONE:
        percent = 100.0
    elif run.sessions_total:
        percent = int(1000 * run.sessions_done / run.sessions_total) / 10
    elif run.batches_total:
        percent = int(1000 * run.batches_done / run.batches_total) / 10
    else:
        percent = 0.0
    return {"status": run.status, "percent": percent, "sessions_done": run.sessions_done,
            "sessions_total": run.sessions_total, "batches_done": run.batches_done,
            "batches_total": run.batches_total, "error": run.error,
            "finished_at": run.finished_at}
