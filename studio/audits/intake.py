"""Auditing uploads: the audit an upload asks for, monitored on arrival while it loads.

Traces sits below audits, so this module hands traces what auditing offers an upload: the
``UploadAuditing`` that ``studio.traces.intake`` consults when an upload asks to be audited
(which rule set a client named, whether it can be audited, auditing a file sent again),
registered when the apps are ready, and the ``BatchObserver`` that the upload task hands the
loader (``observe_upload``): ``AuditOnArrival``, which monitors committed batches and starts the
upload's audit in the transaction that marks it parsed.

Audit on arrival: an upload asked to be audited is monitored while it loads.

Reading a million events back from the database to audit them costs about as much as loading them
did.  When the uploader asks for an audit (``Upload.audit_requested``), the rows the load has just
committed are handed to an ``ArrivalAudit``, which labels and monitors them while the database is
busy with the next batch.  For a big file (``ARRIVAL_PROCESS_MIN_BYTES``) loaded with threads, the
labelling and monitoring run in ``ARRIVAL_PROCESSES`` child processes
(``studio.monitor.arrival.MonitorProcesses``) that share the sessions out: the monitoring is the
load's biggest piece of Python, and on one core it would still be busy long after the last batch is
written.  Otherwise they run in the parsing thread, between two batches (``drain``), not on a thread
of their own: a third busy Python thread would hold the GIL against the writing thread, which must
get it back at once after each database call to keep the database busy.  When the upload is parsed,
``finish_upload_audit`` creates the audit run in the same transaction that marks the upload parsed:
the batches of sessions monitored on arrival are stored as done, the others are planned and enqueued
like any audit's batches.  The child processes hand their results over as the COPY text of each
batch, which Postgres loads while they write the next.  The results are the ones a separate audit of
the upload would store (tests compare them).

A session is monitored on arrival only when that is sure to give the audit's answer:

- it is new with this upload (no events stored before its first batch) and no other writer adds
  events to it meanwhile (its stored step count is checked at the end);
- its events arrive in step order (a log with explicit steps out of order is audited afterwards,
  from the database, in step order);
- nobody corrected one of its labels while it loaded;
- the labelers answer locally (LLM labelers ask in batches from the audit's tasks);
- the parse was not interrupted (a resumed parse has lost what was in memory);
- fewer than ``MAX_OPEN_SESSIONS`` sessions are open, which bounds memory;
- the monitoring (or its process) did not fail.

Every other session of the upload is audited afterwards by the usual batch tasks; nothing is lost
by falling back, only time.
"""

from __future__ import annotations

import logging
import queue
import re

from django.conf import settings
from django.db import transaction

from studio.errors import ServiceError
from studio.labeling import LabelerConfigError
from studio.logic.parser import FormulaSyntaxError
from studio.monitor import RuleError
from studio.monitor.arrival import (
    ArrivalFailed,
    ArrivalMonitor,
    MonitorProcess,
    MonitorProcesses,
)
from studio.rules.models import RuleSet
from studio.rules.monitoring import approved_versions, labeler_snapshot, rule_pairs
from studio.traces.loading import CommittedRows
from studio.traces.models import TraceSession, Upload, UploadStatus
from studio.workspaces.actions import LogAction
from studio.workspaces.services import record

from . import services
from .models import LabelCorrection

log = logging.getLogger(__name__)


class ArrivalAudit:
    """Monitors the rows of one upload as they are committed (``observe``), in commit order:
    in this process (``drain`` runs what the writing thread queued), or, for a file of
    ``ARRIVAL_PROCESS_MIN_BYTES`` or more loaded with threads, in a child process."""

    def __init__(self, upload: Upload, versions, snapshot: list[dict], *, threaded: bool):
        self.upload = upload
        self.versions = versions
        self.snapshot = snapshot
        self.version_ids = [v.id for v in versions]
        rules = rule_pairs(versions)
        # Built here in any case: it checks the rules and labelers before the load begins.
        self.monitor: ArrivalMonitor | MonitorProcesses = ArrivalMonitor(rules, snapshot)
        self.batched = bool(self.monitor.labeling.batched_labelers)
        self.in_child = (threaded and not self.batched
                         and upload.size >= settings.ARRIVAL_PROCESS_MIN_BYTES)
        # The loader cuts each batch's events into one payload per child (``parsing.Batch``).
        self.shares = settings.ARRIVAL_PROCESSES if self.in_child else 0
        if self.in_child:
            self.monitor = MonitorProcesses(rules, snapshot, self.shares, process=MonitorProcess)
        self.failure: BaseException | None = None
        # Committed rows waiting for the parsing thread (written by the writing thread).
        self._waiting: queue.SimpleQueue | None = (
            queue.SimpleQueue() if threaded and not self.in_child else None)

    @classmethod
    def begin(cls, upload: Upload, *, threaded: bool) -> ArrivalAudit | None:
        """The arrival audit of an upload that asked for one, or None when its sessions are to
        be audited afterwards (see the module doc)."""
        if not upload.audit_requested or upload.items_done or upload.attempts > 1:
            return None
        versions = approved_versions(upload.workspace, upload.audit_rule_set)
        if not versions:
            return None
        try:
            snapshot = services.pinned_labelers(labeler_snapshot(upload.workspace))
            audit = cls(upload, versions, snapshot, threaded=threaded)
        except (ServiceError, RuleError, FormulaSyntaxError, LabelerConfigError, ValueError):
            return None  # start_audit, called at the end instead, says what is wrong
        except (ArrivalFailed, OSError):
            log.exception("upload %s: the monitoring process did not start", upload.pk)
            return None  # audited afterwards, by the usual batches
        if audit.batched:
            return None
        return audit

    # -- the writer's side ------------------------------------------------------------------------

    def observe(self, rows: CommittedRows, stored_before: dict[int, int | None]) -> None:
        """Rows just committed, in file order; ``stored_before``: each session's last step
        stored before them (None when it had none)."""
        if self._waiting is None:
            self._guarded(rows, stored_before)
        else:
            self._waiting.put((rows, stored_before))

    def drain(self) -> None:
        """Monitor the rows committed so far (the parsing thread calls this between batches;
        at most the batches the writer is ahead by wait)."""
        if self._waiting is None:
            return
        while True:
            try:
                rows, stored_before = self._waiting.get_nowait()
            except queue.Empty:
                return
            self._guarded(rows, stored_before)

    def _guarded(self, rows: CommittedRows, stored_before: dict[int, int | None]) -> None:
        if self.failure is not None:
            return
        try:
            if self.in_child:
                if rows.payloads is None:
                    raise ArrivalFailed("a batch came without what monitoring needs")
                self.monitor.observe_payloads(rows.payloads, rows.picks(), stored_before)
            else:
                self.monitor.observe(rows.tuples(), stored_before)
        except Exception as exc:  # noqa: BLE001 - the sessions are audited afterwards
            log.exception("upload %s: monitoring on arrival failed", self.upload.pk)
            self.failure = exc

    # -- the end -----------------------------------------------------------------------------------

    def ready(self, scope: list[int]) -> services.Precomputed | None:
        """The results of every session of ``scope`` monitored on arrival whose events are
        still exactly the ones monitored, to be stored in the run's first batches; None when
        the monitoring failed."""
        self.drain()
        if self.failure is not None:
            return None
        try:
            followed = self.monitor.followed(scope)
        except ArrivalFailed as exc:
            log.error("upload %s: monitoring on arrival failed: %s", self.upload.pk, exc)
            return None
        steps = dict(TraceSession.objects.filter(id__in=list(followed))
                     .values_list("id", "steps"))
        corrected = set(LabelCorrection.objects.filter(event__session_id__in=list(followed))
                        .values_list("event__session_id", flat=True))
        ready = [s for s, monitored in followed.items()
                 if steps.get(s) == monitored and s not in corrected]
        if isinstance(self.monitor, MonitorProcesses):  # only for threaded loads: Postgres
            return services.Precomputed(ready, self._store_streamed)
        expected = {s: followed[s] for s in ready}
        return services.Precomputed.of(self.monitor.results(expected, self.version_ids))

    def _store_streamed(self, batches) -> None:
        """Store the children's results as COPY texts they make batch by batch: Postgres loads
        one batch while the children serialise the next.  ``ArrivalFailed`` if a child fails."""
        count = len(self.version_ids)
        ids = iter(services.draw_result_ids(count * sum(len(b.session_ids) for b in batches)))
        plan = [(b.run_id, b.pk, b.session_ids,
                 [next(ids) for _ in range(count * len(b.session_ids))]) for b in batches]
        for texts in self.monitor.result_texts(plan, self.version_ids):
            services.copy_result_texts(*texts)

    def close(self) -> None:
        """Let go of the monitors (and end the child process, if any)."""
        if isinstance(self.monitor, MonitorProcesses):
            self.monitor.close()


def finish_upload_audit(upload: Upload, arrival: ArrivalAudit | None) -> None:
    """In the transaction that marks ``upload`` (locked) parsed: create the audit it asked for,
    with the results monitored on arrival stored and the rest of its sessions enqueued."""
    if not upload.audit_requested:  # cancelled while it loaded (its rule set was deleted)
        return
    workspace = upload.workspace
    try:
        with transaction.atomic():
            rule_set = None
            if upload.audit_rule_set_id is not None:
                # Locked until the run is committed, so it cannot be deleted under the run.
                rule_set = RuleSet.objects.select_for_update().filter(
                    pk=upload.audit_rule_set_id).first()
                if rule_set is None:
                    raise ServiceError("its rule set was deleted while it loaded")
            if arrival is not None:
                run = _run_with_arrival_results(upload, arrival, rule_set)
            else:
                run = services.start_audit(workspace, rule_set, upload, upload.uploaded_by)
    except ServiceError as exc:
        # The upload itself is fine (its rules were unapproved while it loaded, say): the
        # activity log says why no audit started, and the upload page offers to start one.
        log.warning("upload %s: the audit asked for was not started: %s", upload.pk,
                    exc.message)
        record(workspace, None, LogAction.UPLOAD_AUDIT_NOT_STARTED, upload, reason=exc.message)
        return
    Upload.objects.filter(pk=upload.pk).update(audit_run=run)


def _run_with_arrival_results(upload: Upload, arrival: ArrivalAudit, rule_set):
    """The upload's run with the results monitored on arrival stored; if the monitoring
    process fails while handing them over, the run without them (its batches then audit
    every session)."""
    scope = services.upload_scope(upload)
    arguments = (upload.workspace, rule_set, upload, arrival.versions, arrival.snapshot,
                 upload.uploaded_by, scope)
    # Before ready() compares the sessions' steps with what was monitored: an erasure since
    # shows there, and none comes in between until the run's results are committed.
    services.hold_off_erasures(upload.workspace_id)
    precomputed = arrival.ready(scope)
    if precomputed is not None:
        try:  # create_run's own transaction (a savepoint here) goes back on a failure
            return services.create_run(*arguments, precomputed=precomputed)
        except ArrivalFailed as exc:
            log.error("upload %s: the monitoring process failed handing its results over (%s);"
                      " its sessions are audited by the run's batches", upload.pk, exc)
    return services.create_run(*arguments)


class AuditOnArrival:
    """The loader's ``BatchObserver`` for an upload (``studio.traces.loading``): the rows
    committed go to its ``ArrivalAudit`` (None when its sessions are audited afterwards), and
    the audit it asked for starts in the transaction that marks it parsed."""

    def __init__(self, arrival: ArrivalAudit | None):
        self.arrival = arrival
        self.shares = arrival.shares if arrival is not None else 0

    def committed(self, rows: CommittedRows, stored_before: dict[int, int | None]) -> None:
        if self.arrival is not None:
            self.arrival.observe(rows, stored_before)

    def drain(self) -> None:
        if self.arrival is not None:
            self.arrival.drain()

    def finished(self, upload: Upload, *, again: bool) -> None:
        # Again after a lost connection: the results monitored on arrival may have been half
        # handed over, so the run audits every session with its batches (only time is lost).
        finish_upload_audit(upload, None if again else self.arrival)

    def close(self) -> None:
        if self.arrival is not None:
            self.arrival.close()


def observe_upload(upload: Upload, *, threaded: bool) -> AuditOnArrival:
    """The observer of a claimed upload's load (the upload task hands it to the loader).  Also
    for an upload that asked for no audit: one may be asked for while it loads."""
    return AuditOnArrival(ArrivalAudit.begin(upload, threaded=threaded))


# ---------------------------------------------------------------------------------------------
# What an upload asking to be audited is offered (``studio.traces.intake.UploadAuditing``)

# A database id as a client may write it: digits, within a bigint.
_ID = re.compile(r"[0-9]{1,18}")


class UploadAuditing:
    """Registered with ``studio.traces.intake`` when the apps are ready (``AuditsConfig``)."""

    def rule_set(self, workspace, raw: str | None) -> RuleSet | None:
        """The rule set an upload asks to be audited with, from its id as sent (blank: none);
        a ServiceError naming ``rule_set`` when it is not an id of this workspace's rule
        sets."""
        text = (raw or "").strip()
        if not text:
            return None
        if not _ID.fullmatch(text):
            raise ServiceError(f"rule_set must be a rule set's id (a whole number), not "
                               f"{text[:40]!r}", field="rule_set")
        found = RuleSet.objects.filter(workspace=workspace, pk=int(text)).first()
        if found is None:
            raise ServiceError("no such rule set in this workspace", field="rule_set",
                               status=404)
        return found

    def refuse_unless_auditable(self, workspace, rule_set) -> None:
        if rule_set is not None and rule_set.workspace_id != workspace.id:
            raise ServiceError("no such rule set in this workspace", field="rule_set",
                               status=404)
        services.approved_versions_or_refuse(workspace, rule_set, field="audit")

    def audit_again(self, upload: Upload, rule_set, by) -> None:
        """The same file with an audit asked for: audit it now, or once its parse ends."""
        with transaction.atomic():
            locked = Upload.objects.select_for_update().get(pk=upload.pk)
            if locked.status in (UploadStatus.RECEIVED, UploadStatus.PARSING):
                if not locked.audit_requested:
                    Upload.objects.filter(pk=locked.pk).update(audit_requested=True,
                                                               audit_rule_set=rule_set)
            else:  # parsed (or failed part-way: its stored events are audited)
                run = services.start_audit(locked.workspace, rule_set, locked, by)
                Upload.objects.filter(pk=locked.pk).update(audit_run=run)
        upload.refresh_from_db()
