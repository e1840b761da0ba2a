"""People correcting labels, and the verdicts recomputed from the corrections.

A correction says whether an atom holds at one event.  It overrides every source of that label -
the labels the event arrived with, the built-in atoms, every labeler, an LLM's answer - wherever a
run's labeling is built (``services.prepared_rules``: batches computed from now on, session pages
replaying a run).  The session's results in the run the correction was made from are recomputed
at once (``recompute_session``); other runs keep the results they computed until they are run
again.  Every correction is written to the workspace's audit log with who made it.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from studio.errors import PermissionDenied, ServiceError
from studio.traces.erasure import hold_off_erasures
from studio.traces.models import Event, TraceSession
from studio.workspaces.acting import acting_user
from studio.workspaces.actions import LogAction
from studio.workspaces.models import Membership, Role
from studio.workspaces.services import record

from .models import (
    AuditBatch,
    AuditRun,
    LabelCorrection,
    LabelProvenance,
    SessionResult,
    ViolationRecord,
)
from .services import compute_batch, insert_provenance, insert_results, prepared_rules

ATOM_MAX = 200


def _check_auditor(workspace, actor) -> None:
    if hasattr(actor, "roles_in"):
        roles = actor.roles_in(workspace) or set()
    else:
        user = acting_user(actor)
        roles = set(Membership.objects.filter(workspace=workspace, user=user)
                    .values_list("role", flat=True)) if user is not None else set()
    if Role.AUDITOR not in roles:
        raise PermissionDenied("only members with the auditor role correct labels")


def _clean_atom(atom: str) -> str:
    cleaned = (atom or "").strip()
    if not cleaned:
        raise ServiceError("name the atom to correct", field="atom", status=422)
    if len(cleaned) > ATOM_MAX:
        raise ServiceError(f"an atom has at most {ATOM_MAX} characters", field="atom",
                           status=422)
    return cleaned


def correct_label(run: AuditRun, session: TraceSession, step: int, atom: str,
                  value: bool | None, actor) -> LabelCorrection | None:
    """Set ``atom`` true or false at the session's ``step`` (``value`` None removes the
    correction: the labelers decide again), then recompute the session's results in ``run``.
    Only auditors correct labels.  Returns the correction (None once removed)."""
    workspace = run.workspace
    if session.workspace_id != workspace.id:
        raise ServiceError("no such session in this workspace", field="session", status=404)
    _check_auditor(workspace, actor)
    atom = _clean_atom(atom)
    event = Event.objects.filter(session=session, step=step).first()
    if event is None:
        raise ServiceError(f"session {session.external_id!r} has no step {step}", field="step",
                           status=422)
    if not SessionResult.objects.filter(run=run, session=session).exists():
        raise ServiceError(f"audit run {run.id} has no results for session "
                           f"{session.external_id!r}: there is nothing to recompute",
                           field="run", status=409)
    answered = (LabelProvenance.objects.filter(run=run, session=session, step=step, atom=atom)
                .values_list("value", flat=True).first())
    with transaction.atomic():
        existing = (LabelCorrection.objects.select_for_update()
                    .filter(event=event, atom=atom).first())
        before = existing.value if existing is not None else None
        if value is None:
            if existing is not None:
                existing.delete()
            correction = None
        else:
            correction, _ = LabelCorrection.objects.update_or_create(
                event=event, atom=atom,
                defaults={"workspace": workspace, "value": value,
                          "corrected_by": acting_user(actor), "corrected_at": timezone.now()})
        record(workspace, actor, LogAction.LABEL_CORRECTED if value is not None else
               LogAction.LABEL_CORRECTION_REMOVED, event, session=session.external_id,
               session_id=session.id, step=step, atom=atom, value=value,
               previous_correction=before, labeler_answer=answered, run=run.id)
    recompute_session(run, session)
    return correction


def recompute_session(run: AuditRun, session: TraceSession) -> None:
    """Compute the session's results in ``run`` again, with the labeling as it is now (the
    run's rules and labelers, today's corrections), and replace what the run stored for it -
    results, violations, label provenance - in one transaction.  LLM answers come from the
    cache, so this costs no requests for steps the run already asked about."""
    ruleset, labeling, version_ids = prepared_rules(run)
    provenance: list = []
    results = compute_batch([session.id], ruleset, labeling, version_ids, provenance)
    with transaction.atomic():
        # An erasure since the compute removed the results (found none below), or waits.
        hold_off_erasures(run.workspace_id)
        batch_id = (SessionResult.objects.filter(run=run, session=session)
                    .values_list("batch_id", flat=True).first())
        if batch_id is None:
            raise ServiceError(f"audit run {run.id} has no results for session "
                               f"{session.external_id!r}", field="run", status=409)
        # Serialises with a rerun of the whole batch, which replaces these rows too.
        batch = AuditBatch.objects.select_for_update().get(pk=batch_id)
        ViolationRecord.objects.filter(result__run=run, result__session=session).delete()
        SessionResult.objects.filter(run=run, session=session).delete()
        LabelProvenance.objects.filter(run=run, session=session).delete()
        insert_results(batch, results)
        insert_provenance(batch, provenance)
