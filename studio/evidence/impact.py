"""What a rule version would change on the workspace's stored sessions.

An impact check is one audit run (``studio.audits.services.create_run``: the same batches,
Celery tasks, progress, retries and stored results as any audit) of the new version beside the
rule's approved version, over all stored sessions, an upload's, or a random sample of them.
Once the run is done, ``compare.compare_versions`` lists the sessions whose verdict or
violations differ between the two versions; the summary is kept on the check, its counts go into
the approval's audit-log entry (``counts_for_approval``) and the evidence report.
"""

from __future__ import annotations

import random

from django.db import transaction

from studio.audits.models import AuditRun, RunStatus, ViolationRecord
from studio.audits.services import audit_progress, create_run, pinned_labelers, upload_scope
from studio.errors import Conflict, ServiceError
from studio.labeling import LabelerConfigError, labeling_from_snapshot
from studio.logic.parser import FormulaSyntaxError, parse
from studio.monitor import RuleError
from studio.monitor.explain import explain_violation, residual_reading
from studio.rules.models import RuleVersion, VersionStatus
from studio.rules.monitoring import labeler_snapshot, ruleset_for
from studio.rules.sampling import formula_flags
from studio.traces.models import TraceSession, Upload
from studio.workspaces.acting import acting_user
from studio.workspaces.actions import LogAction
from studio.workspaces.services import record

from .compare import compare_versions, public_summary
from .models import ImpactCheck, ImpactScope

SAMPLE_MAX = 1_000_000


def start_impact(version: RuleVersion, by, scope: str = ImpactScope.ALL,
                 upload_id: int | None = None, sample_size: int | None = None,
                 seed: int | None = None) -> ImpactCheck:
    """Audit the workspace's stored sessions (``scope``) with ``version`` and the rule's
    approved version; the run's batches are enqueued after commit."""
    rule = version.rule
    workspace = rule.workspace
    if version.status not in (VersionStatus.DRAFT, VersionStatus.IN_REVIEW):
        raise Conflict(f"version {version.number} is {version.get_status_display().lower()}; "
                       "the impact of a change is checked for drafts and versions in review",
                       field="status")
    if scope not in ImpactScope.values:
        raise ServiceError(f"scope must be one of {', '.join(ImpactScope.values)}",
                           field="scope", status=422)
    upload = None
    stored = list(TraceSession.objects.filter(workspace=workspace).order_by("id")
                  .values_list("id", flat=True))
    if not stored:
        raise ServiceError(f"workspace {workspace.slug!r} has no stored sessions: there is "
                           "nothing to check the change on yet (upload logs or ingest live "
                           "events first)", field="scope", status=409)
    if scope == ImpactScope.UPLOAD:
        upload = Upload.objects.filter(workspace=workspace, pk=upload_id).first()
        if upload is None:
            raise ServiceError("no such upload in this workspace", field="upload_id",
                               status=404)
        sessions = upload_scope(upload)
        if not sessions:
            raise ServiceError(f"upload {upload.id} ({upload.filename}) stored no sessions",
                               field="upload_id", status=409)
    elif scope == ImpactScope.SAMPLE:
        if not sample_size or not 1 <= sample_size <= SAMPLE_MAX:
            raise ServiceError(f"a sample needs a size from 1 to {SAMPLE_MAX:,}",
                               field="sample_size", status=422)
        sessions = (sorted(random.Random(seed).sample(stored, sample_size))
                    if sample_size < len(stored) else stored)
    else:
        sessions = stored
    baseline = rule.approved_version()
    versions = [v for v in (baseline, version) if v is not None]
    snapshot = pinned_labelers(labeler_snapshot(workspace))
    try:  # refuse now what every batch would fail on
        ruleset_for(versions)
        labeling_from_snapshot(snapshot)
    except (RuleError, FormulaSyntaxError, LabelerConfigError, ValueError) as exc:
        raise ServiceError(f"cannot audit with this version and the labelers: {exc}") from None
    with transaction.atomic():
        run = create_run(workspace, None, upload, versions, snapshot, by, sessions)
        check = ImpactCheck.objects.create(
            workspace=workspace, version=version, baseline=baseline, run=run, scope=scope,
            upload=upload, sample_size=len(sessions) if scope == ImpactScope.SAMPLE else None,
            sessions_available=len(stored), created_by=acting_user(by), formula=version.formula,
            counting=version.counting)
        record(workspace, by, LogAction.RULE_VERSION_IMPACT_STARTED, version, rule=rule.name,
               number=version.number, baseline=baseline.number if baseline else None,
               run=run.id, scope=scope, sessions=len(sessions), stored=len(stored))
    return check


def latest_check(version: RuleVersion) -> ImpactCheck | None:
    return (ImpactCheck.objects.filter(version=version)
            .select_related("run", "baseline", "version").first())


def impact_result(check: ImpactCheck) -> dict:
    """Progress while the run works; once it is done, the comparison (computed once, kept)."""
    run = AuditRun.objects.get(pk=check.run_id)
    out = {"id": check.id, "run_id": run.id, "version": check.version.number,
           "baseline": check.baseline.number if check.baseline else None,
           "scope": check.scope, "upload_id": check.upload_id,
           "sample_size": check.sample_size, "sessions_available": check.sessions_available,
           "sessions": run.sessions_total, "progress": audit_progress(run),
           "created_at": check.created_at, "summary": None, "stale": is_stale(check)}
    if run.status == RunStatus.DONE:
        if check.summary is None:
            compared = compare_versions(run, check.baseline, check.version)
            check.summary = {**compared.counts(),
                             "sessions_list": [c.as_dict() | {"result_before": c.result_before,
                                                              "result_after": c.result_after}
                                               for c in compared.changes]}
            ImpactCheck.objects.filter(pk=check.pk).update(summary=check.summary)
        out["summary"] = public_summary(check.summary)
        # "0 sessions would change" reads differently when the version can never fire: say so
        out["flags"] = formula_flags(check.version.rule.workspace, parse(check.formula))
    return out


def is_stale(check: ImpactCheck) -> bool:
    """Whether the version was edited after it was checked (only drafts can be)."""
    version = check.version
    return (check.formula, check.counting) != (version.formula, version.counting)


def counts(check: ImpactCheck | None) -> dict | None:
    """The check's counts, as the approval's audit-log entry and the evidence report state
    them; None while it runs or when there is none."""
    if check is None:
        return None
    result = impact_result(check)
    summary = result["summary"]
    if summary is None:
        return {"run": check.run_id, "status": result["progress"]["status"]}
    return {"run": check.run_id, "scope": check.scope, "sessions": result["sessions"],
            "sessions_available": check.sessions_available,
            "baseline": result["baseline"],
            **{k: v for k, v in summary.items() if k != "sessions_list"}}


def counts_for_approval(version: RuleVersion) -> dict | None:
    """The latest check's counts, unless it was made on an earlier formula of the version."""
    check = latest_check(version)
    if check is not None and is_stale(check):
        return {"run": check.run_id, "stale": True}
    return counts(check)


def witnesses(change: dict) -> dict:
    """Both sides' first violation at or after the differing step, with its witness, for the
    side-by-side view: ``{"before": ..., "after": ...}`` (None where a side has none)."""
    out = {}
    for side, key in (("before", "result_before"), ("after", "result_after")):
        rid = change.get(key)
        found = None
        if rid and rid > 0:
            rows = list(ViolationRecord.objects.filter(result_id=rid)
                        .select_related("result__rule_version").order_by("detected", "trigger"))
            step = change.get("step")
            found = next((v for v in rows if step is None or v.detected >= step),
                         rows[0] if rows else None)
        if found is None:
            out[side] = None
            continue
        version = found.result.rule_version
        # In words for the reviewer, the formulas one click away (the template).
        out[side] = {"trigger": found.trigger, "detected": found.detected,
                     "explanation": explain_violation(version.formula, found.trigger,
                                                      found.detected, found.at_end,
                                                      found.witness, version.counting),
                     "witness": [{**w, "reading": residual_reading(w.get("residual", ""))}
                                 for w in found.witness]}
    return out
