"""Audit on arrival: an upload asked to be audited is monitored while it loads.

Reading a million events back from the database to audit them costs about as much as loading
them did.  When the uploader asks for an audit (``Upload.audit_requested``), the rows the load
has just committed are handed to an ``ArrivalAudit``, which labels and monitors them while the
database is busy with the next batch.  The monitoring runs in the parsing thread, between two
batches (``drain``), not on a thread of its own: a third busy Python thread would hold the GIL
against the writing thread, which must get it back at once after each database call to keep the
database busy.  When the upload is
parsed, ``finish_upload_audit`` creates the audit run in the same transaction that marks the
upload parsed: the batches of sessions monitored on arrival are stored as done, the others are
planned and enqueued like any audit's batches.  The results are the ones a separate audit of the
upload would store (tests compare them).

A session is monitored on arrival only when that is sure to give the audit's answer:

- it is new with this upload (no events stored before its first batch) and no other writer adds
  events to it meanwhile (its stored step count is checked at the end);
- its events arrive in step order (a log with explicit steps out of order is audited afterwards,
  from the database, in step order);
- nobody corrected one of its labels while it loaded;
- the labelers answer locally (LLM labelers ask in batches from the audit's tasks);
- the parse was not interrupted (a resumed parse has lost what was in memory);
- fewer than ``MAX_OPEN_SESSIONS`` sessions are open, which bounds memory.

Every other session of the upload is audited afterwards by the usual batch tasks; nothing is lost
by falling back, only time.
"""

from __future__ import annotations

import logging
import queue
from dataclasses import dataclass, field

from django.db import transaction

from studio.api.core import ServiceError
from studio.labeling import LabelerConfigError
from studio.logic.parser import FormulaSyntaxError
from studio.monitor import FastSessionMonitor, RuleError
from studio.rules.models import RuleSet
from studio.rules.monitoring import approved_versions, labeler_snapshot, labeling_from, ruleset_for
from studio.traces.models import TraceSession, Upload, monitor_event
from studio.workspaces.services import record

from . import services
from .models import LabelCorrection

log = logging.getLogger(__name__)

MAX_OPEN_SESSIONS = 20_000


@dataclass
class _Open:
    """A session being monitored: its monitor, the last event (``prev``) and its steps."""

    monitor: FastSessionMonitor
    previous: dict | None = None
    steps: list = field(default_factory=list)


class ArrivalAudit:
    """Monitors the rows of one upload as they are committed (``observe``), in commit order."""

    def __init__(self, upload: Upload, versions, snapshot: list[dict], *, threaded: bool):
        self.upload = upload
        self.versions = versions
        self.snapshot = snapshot
        self.ruleset = ruleset_for(versions)
        self.labeling = labeling_from(snapshot)
        self.version_ids = [v.id for v in versions]
        self.open: dict[int, _Open] = {}
        self.excluded: set[int] = set()
        self.failure: BaseException | None = None
        # Committed rows waiting for the parsing thread (written by the writing thread).
        self._waiting: queue.SimpleQueue | None = queue.SimpleQueue() if threaded else None

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
        return None if audit.labeling.batched_labelers else audit

    # -- the writer's side ------------------------------------------------------------------------

    def observe(self, rows: list[tuple], stored_before: dict[int, int | None]) -> None:
        """Rows ``(session_id, step, lifeline, input, output, data, labels)`` just committed, in
        file order; ``stored_before``: each session's last step stored before them (None when it
        had none)."""
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

    def _guarded(self, rows: list[tuple], stored_before: dict[int, int | None]) -> None:
        if self.failure is not None:
            return
        try:
            self._monitor(rows, stored_before)
        except Exception as exc:  # noqa: BLE001 - the sessions are audited afterwards
            log.exception("upload %s: monitoring on arrival failed", self.upload.pk)
            self.failure = exc

    def _monitor(self, rows: list[tuple], stored_before: dict[int, int | None]) -> None:
        label = self.labeling.label
        opened = self.open
        excluded = self.excluded
        checked: set[int] = set()
        for session_id, step, lifeline, input, output, data, labels in rows:
            state = opened.get(session_id)
            if session_id not in checked:
                checked.add(session_id)
                if session_id in excluded:
                    continue
                before = stored_before.get(session_id)
                fits = (before is None and state is None and len(opened) < MAX_OPEN_SESSIONS
                        ) or (state is not None and state.steps and before == state.steps[-1])
                if not fits:
                    self._exclude(session_id)
                    continue
                if state is None:
                    state = opened[session_id] = _Open(
                        FastSessionMonitor(self.ruleset, witnesses=True))
            elif state is None:
                continue  # excluded earlier in these rows
            if state.steps and step <= state.steps[-1]:
                self._exclude(session_id)
                continue
            event = monitor_event(session_id, step, lifeline, input, output, data, labels)
            state.monitor.ingest(label(event, state.previous))
            state.previous = event
            state.steps.append(step)

    def _exclude(self, session_id: int) -> None:
        self.excluded.add(session_id)
        self.open.pop(session_id, None)

    # -- the end -----------------------------------------------------------------------------------

    def results(self, scope: list[int]) -> dict[int, list]:
        """The stored results of every session of ``scope`` monitored on arrival whose events
        are still exactly the ones monitored."""
        self.drain()
        if self.failure is not None:
            return {}
        candidates = [s for s in scope if s in self.open]
        steps = dict(TraceSession.objects.filter(id__in=candidates).values_list("id", "steps"))
        corrected = set(LabelCorrection.objects.filter(event__session_id__in=candidates)
                        .values_list("event__session_id", flat=True))
        texts = services.WitnessText()
        out = {}
        for session_id in candidates:
            state = self.open[session_id]
            if steps.get(session_id) != len(state.steps) or session_id in corrected:
                continue
            out[session_id] = services.session_results(session_id, state.monitor, state.steps,
                                                       self.version_ids, texts)
        return out


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
                scope = services.upload_scope(upload)
                run = services.create_run(
                    workspace, rule_set, upload, arrival.versions, arrival.snapshot,
                    upload.uploaded_by, scope, precomputed=arrival.results(scope))
            else:
                run = services.start_audit(workspace, rule_set, upload, upload.uploaded_by)
    except ServiceError as exc:
        # The upload itself is fine (its rules were unapproved while it loaded, say): the
        # activity log says why no audit started, and the upload page offers to start one.
        log.warning("upload %s: the audit asked for was not started: %s", upload.pk,
                    exc.message)
        record(workspace, None, "upload.audit_not_started", upload, reason=exc.message)
        return
    Upload.objects.filter(pk=upload.pk).update(audit_run=run)
