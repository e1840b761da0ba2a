"""Audit runs: start, list, status and progress, results, one session's verdicts, reports.

Starting (and resuming) an audit needs the auditor role; reading needs membership of the
workspace (anyone else gets 404).  Steps in answers are the events' step numbers.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema, Status

from studio.boundary import Text
from studio.monitor.explain import explain_violation, residual_reading
from studio.monitor.verdicts import (COUNTING_SENTENCES, OLD_NAMES_UNTIL, SATISFIED,
                                     stored_verdict, with_old_names)
from studio.rules.models import RuleSet
from studio.traces.models import TraceSession, Upload
from studio.workspaces.acting import actor_of, workspace_for
from studio.workspaces.models import Role

from . import groundtruth, replay, report, services
from .models import AuditRun, GroundTruth, SessionResult, ViolationRecord
from .verdicts import session_verdict_q

router = Router(tags=["audits"])

# Verdicts as every page and file says them (studio.monitor.verdicts.verdict_words).
Verdict = Literal["open", "complied", "violated"]
Final = Literal["complied", "violated"]
Complete = Literal["permanently_complied", "permanently_violated", "currently_complied",
                   "currently_violated"]
# The old names, answered under ``<field>_was`` and accepted as query values for one release.
OldVerdict = Literal["pending", "satisfied", "violated"]
OldFinal = Literal["satisfied", "violated"]
OldComplete = Literal["permanently_satisfied", "permanently_violated", "currently_satisfied",
                      "currently_violated"]
VerdictQuery = Literal["open", "complied", "violated", "pending", "satisfied"]
FinalQuery = Literal["complied", "violated", "satisfied"]
RunState = Literal["queued", "running", "done", "failed"]
MAX_OFFSET = 10**12  # beyond any table; keeps OFFSET inside a bigint


# ---------------------------------------------------------------------------------------------
# Schemas

class AuditIn(Schema):
    rule_set: int | None = Field(None, description="rule set id; every rule of the workspace "
                                                   "when empty")
    upload: int | None = Field(None, description="upload id; every session of the workspace "
                                                 "when empty")


class ProgressOut(Schema):
    status: RunState
    percent: float
    sessions_done: int
    sessions_total: int
    batches_done: int
    batches_total: int
    error: str
    finished_at: datetime | None


class AuditedVersion(Schema):
    id: int
    rule: str
    number: int
    formula: str


class CheckedDraft(Schema):
    rule: str
    number: int


class AuditOut(Schema):
    id: int
    # "impact_check": a draft audited beside the approved version (studio.evidence), not an
    # audit; the audits list leaves them out, a run named by its number says so here.
    kind: Literal["audit", "impact_check"]
    checks_draft: CheckedDraft | None
    status: RunState
    rule_set: int | None
    rule_set_name: str | None
    upload: int | None
    created_by: str | None
    created_at: datetime
    finished_at: datetime | None
    error: str
    progress: ProgressOut
    rule_versions: list[AuditedVersion]


class ResumeOut(Schema):
    id: int
    enqueued: int


ONE_VERDICT = ("the rule's one verdict in the session: violated when a violation was counted, "
               "complied when none was and the session ended meeting it, open only while "
               "a live session is open")


def was(field: str, default=...):
    """The deprecated field keeping ``field``'s old value (satisfied, pending) for one release."""
    return Field(default, description=f"deprecated: {field} in the old names (satisfied, "
                                      f"pending), answered until {OLD_NAMES_UNTIL}",
                 json_schema_extra={"deprecated": True})


class ResultOut(Schema):
    session_id: int
    session: str = Field(description="the session's external id")
    rule: str
    rule_version: int = Field(description="the version's number")
    rule_version_id: int
    steps: int
    session_verdict: Verdict = Field(description=ONE_VERDICT)
    verdict: Verdict = Field(description="TRAC's verdict after the last step (the first "
                                         "verdict; open when none was reached)")
    first_verdict_step: int | None
    final: Final = Field(description="LTLf verdict with the end of the log as the end")
    residual: str
    violations: int
    session_verdict_was: OldVerdict = was("session_verdict")
    verdict_was: OldVerdict = was("verdict")
    final_was: OldFinal = was("final")


class ResultsPage(Schema):
    count: int
    limit: int
    offset: int
    items: list[ResultOut]


class TimelinePoint(Schema):
    step: int
    verdict: Verdict
    verdict_was: OldVerdict = was("verdict")


class WitnessStep(Schema):
    step: int
    labels: list[str]
    residual: str
    residual_english: str = Field(description="what the rule required after the step, in "
                                              "words (\"still owed: ...\", \"can no longer "
                                              "be met (since step N)\")")


class ViolationOut(Schema):
    trigger: int = Field(description="the step that opened the failed obligation")
    detected: int = Field(description="the step at which it was known to fail")
    at_end: bool = Field(description="failed because the session ended")
    explanation: str = Field(description="the violation in one sentence, from its witness and "
                                         "the rule")
    witness: list[WitnessStep]


class RuleLane(Schema):
    rule: str
    rule_version: int = Field(description="the version's number")
    rule_version_id: int
    formula: str
    counting: str
    counting_sentence: str = Field(description="how the version counts violations, in English")
    steps: int
    session_verdict: Verdict = Field(description=ONE_VERDICT)
    verdict: Verdict
    first_verdict_step: int | None
    final: Final
    residual: str
    residual_english: str = Field(description="the residual after the last step, in words")
    timeline: list[TimelinePoint] = Field(description="TRAC's verdict from each step on, at "
                                                      "the steps where it changes")
    violations: list[ViolationOut]
    complete: Complete | None = Field(
        None, description="the anticipatory verdict of the rule's formula over the whole session "
                          "(no restart) after its last step: permanently_complied, "
                          "permanently_violated, currently_complied or currently_violated "
                          "(a session that has ended is always permanently one or the other); "
                          "null for sessions too long to replay here")
    complete_step: int | None = Field(
        None, description="the step after which that verdict was permanent (certain), or null")
    complete_reason: str | None = Field(None, description="why, in a short sentence")
    session_verdict_was: OldVerdict = was("session_verdict")
    verdict_was: OldVerdict = was("verdict")
    final_was: OldFinal = was("final")
    complete_was: OldComplete | None = was("complete", None)


class SessionVerdictsOut(Schema):
    audit: int
    session_id: int
    session: str
    steps: int
    rules: list[RuleLane]


class ReportRule(Schema):
    rule: str
    rule_version: int = Field(description="the version's number")
    rule_version_id: int
    formula: str
    counting: str
    sessions: int
    complied: int = Field(description="sessions whose one verdict is complied")
    violated: int = Field(description="sessions whose one verdict is violated")
    open: int = Field(description="open live sessions not decided yet")
    final_violated: int = Field(description="sessions whose LTLf verdict is violated")
    violations: int
    never_triggered: bool = Field(description="the rule complied in every session only because "
                                              "its condition (p in G (p -> ...)) held on no "
                                              "step: not applicable")
    trigger_unknown: bool = Field(description="the rule complied in every session, but whether "
                                              "its condition ever held could not be told (an "
                                              "audit stored before it was recorded): it may "
                                              "never have applied")
    satisfied: int = Field(description=f"deprecated: complied, under its old name, answered "
                                       f"until {OLD_NAMES_UNTIL}",
                           json_schema_extra={"deprecated": True})
    pending: int = Field(description=f"deprecated: open, under its old name, answered until "
                                     f"{OLD_NAMES_UNTIL}", json_schema_extra={"deprecated": True})


class ReportSession(Schema):
    session_id: int
    session: str
    steps: int
    verdicts: list[Verdict | None] = Field(description="per rule, in the order of `rules`: "
                                                       + ONE_VERDICT)
    final: list[Final | None] = Field(description="per rule, in the order of `rules`")
    violations: list[int | None] = Field(description="per rule, in the order of `rules`")
    verdicts_was: list[OldVerdict | None] = was("verdicts")
    final_was: list[OldFinal | None] = was("final")


class ReportOut(Schema):
    audit: int
    status: RunState
    created_at: datetime
    finished_at: datetime | None
    sessions_total: int
    sessions_done: int
    rules: list[ReportRule]
    sessions: list[ReportSession]


class GroundTruthIn(Schema):
    labels: list[Any] = Field(description='[{"session": str, "rule": str, "violated": bool, '
                                          '"note": str (optional)}, ...]', max_length=100_000)
    source: Text = Field("api", max_length=255, description="where the labels come from")


class LabelError(Schema):
    index: int = Field(description="position of the refused label in `labels`, from 0")
    reason: str


class GroundTruthImportOut(Schema):
    stored: int
    created: int
    changed: int
    unchanged: int
    repeated: int = Field(description="labels given twice, identically (stored once)")
    errors: list[LabelError]
    unknown_rules: list[str] = Field(description="rule names no rule of the workspace has (yet)")
    sessions_not_loaded: int = Field(description="sessions named that the workspace has no log "
                                                 "of (yet)")


class GroundTruthOut(Schema):
    session: str
    rule: str
    violated: bool
    note: str
    source: str
    imported_at: datetime
    imported_by: str | None


class GroundTruthPage(Schema):
    count: int
    limit: int
    offset: int
    items: list[GroundTruthOut]


# ---------------------------------------------------------------------------------------------
# Helpers

def _run_of(workspace, audit_id: int) -> AuditRun:
    return get_object_or_404(AuditRun.objects.with_kind()
                             .select_related("rule_set", "created_by")
                             .prefetch_related("rule_versions__rule"),
                             workspace=workspace, id=audit_id)


def _audit_out(run: AuditRun) -> dict:
    draft = run.checked_draft
    return {"id": run.id, "kind": run.kind,
            "checks_draft": {"rule": draft.rule.name, "number": draft.number} if draft else None,
            "status": run.status, "rule_set": run.rule_set_id,
            "rule_set_name": run.rule_set.name if run.rule_set is not None else None,
            "upload": run.upload_id,
            "created_by": run.created_by.get_username() if run.created_by else None,
            "created_at": run.created_at, "finished_at": run.finished_at, "error": run.error,
            "progress": services.audit_progress(run),
            "rule_versions": [{"id": v.id, "rule": v.rule.name, "number": v.number,
                               "formula": v.formula} for v in report.versions(run)]}


def _page(limit: int, offset: int, most: int = 1000) -> tuple[int, int]:
    return max(1, min(limit, most)), max(0, min(offset, MAX_OFFSET))


# ---------------------------------------------------------------------------------------------
# Runs

@router.post("{slug}/audits", response={201: AuditOut},
             summary="Start an audit (auditor role); its batches run in the background")
def start_audit(request, slug: str, body: AuditIn):
    workspace = workspace_for(request, slug, role=Role.AUDITOR)
    rule_set = (get_object_or_404(RuleSet, workspace=workspace, id=body.rule_set)
                if body.rule_set is not None else None)
    upload = (get_object_or_404(Upload, workspace=workspace, id=body.upload)
              if body.upload is not None else None)
    run = services.start_audit(workspace, rule_set, upload, actor_of(request))
    run = (AuditRun.objects.with_kind().select_related("rule_set", "created_by")
           .prefetch_related("rule_versions__rule").get(pk=run.pk))  # as the tasks left it
    return Status(201, _audit_out(run))


@router.get("{slug}/audits", response=list[AuditOut], summary="Audit runs, newest first")
def list_audits(request, slug: str, limit: int = 50, offset: int = 0):
    workspace = workspace_for(request, slug)
    limit, offset = _page(limit, offset, 500)
    runs = (AuditRun.objects.filter(workspace=workspace).audits().with_kind()
            .select_related("rule_set", "created_by").prefetch_related("rule_versions__rule")
            .order_by("-created_at", "-id")[offset:offset + limit])
    return [_audit_out(run) for run in runs]


@router.get("{slug}/audits/{audit_id}", response=AuditOut,
            summary="One audit run: status and progress")
def get_audit(request, slug: str, audit_id: int):
    workspace = workspace_for(request, slug)
    return _audit_out(_run_of(workspace, audit_id))


@router.post("{slug}/audits/{audit_id}/resume", response=ResumeOut,
             summary="Enqueue the unfinished batches again (auditor role)")
def resume_audit(request, slug: str, audit_id: int):
    workspace = workspace_for(request, slug, role=Role.AUDITOR)
    run = _run_of(workspace, audit_id)
    return {"id": run.id, "enqueued": services.resume_audit(run, actor_of(request))}


# ---------------------------------------------------------------------------------------------
# Results

@router.get("{slug}/audits/{audit_id}/results", response=ResultsPage,
            summary="Per session and rule: verdicts, residual and number of violations")
def audit_results(request, slug: str, audit_id: int, verdict: VerdictQuery | None = None,
                  final: FinalQuery | None = None, rule: Text | None = None,
                  session: int | None = None, violated: bool | None = None,
                  session_verdict: VerdictQuery | None = None, limit: int = 100,
                  offset: int = 0):
    workspace = workspace_for(request, slug)
    run = _run_of(workspace, audit_id)
    limit, offset = _page(limit, offset)
    results = SessionResult.objects.filter(run=run)
    if session_verdict is not None:
        results = results.filter(session_verdict_q(stored_verdict(session_verdict)))
    if verdict is not None:
        results = results.filter(verdict=stored_verdict(verdict))
    if final is not None:
        results = results.filter(final=stored_verdict(final))
    if rule is not None:
        results = results.filter(rule_version__rule__name=rule)
    if session is not None:
        results = results.filter(session_id=session)
    if violated is not None:
        results = (results.filter(violation_count__gt=0) if violated
                   else results.filter(violation_count=0))
    count = results.count()
    rows = (results.order_by("session_id", "rule_version__rule__name")
            .select_related("session", "rule_version__rule")
            .defer("session__monitor_state")[offset:offset + limit])
    return {"count": count, "limit": limit, "offset": offset,
            "items": [with_old_names(
                {"session_id": r.session_id, "session": r.session.external_id,
                 "rule": r.rule_version.rule.name, "rule_version": r.rule_version.number,
                 "rule_version_id": r.rule_version_id, "steps": r.steps,
                 "session_verdict": r.session_verdict, "verdict": r.verdict,
                 "first_verdict_step": r.first_verdict_step, "final": r.final,
                 "residual": r.residual, "violations": r.violation_count},
                ("session_verdict", "verdict", "final")) for r in rows]}


@router.get("{slug}/audits/{audit_id}/sessions/{session_id}", response=SessionVerdictsOut,
            summary="One session in an audit: verdict lanes, residuals, violations, witnesses")
def session_verdicts(request, slug: str, audit_id: int, session_id: int):
    workspace = workspace_for(request, slug)
    run = _run_of(workspace, audit_id)
    session = get_object_or_404(TraceSession, workspace=workspace, id=session_id)
    results = list(SessionResult.objects.filter(run=run, session=session)
                   .select_related("session", "rule_version__rule")
                   .order_by("rule_version__rule__name", "rule_version_id"))
    violations: dict[int, list] = {}
    version_of = {r.id: r.rule_version for r in results}
    for v in ViolationRecord.objects.filter(result__in=results).order_by("result_id", "detected",
                                                                          "trigger", "id"):
        version = version_of[v.result_id]
        violations.setdefault(v.result_id, []).append(
            {"trigger": v.trigger, "detected": v.detected, "at_end": v.at_end,
             "explanation": explain_violation(version.formula, v.trigger, v.detected,
                                              v.at_end, v.witness, version.counting),
             "witness": [{**w, "residual_english": residual_reading(w["residual"],
                                                                    since=w["step"])}
                         for w in v.witness]})
    lanes = [{"rule": r.rule_version.rule.name, "rule_version": r.rule_version.number,
              "rule_version_id": r.rule_version_id, "formula": r.rule_version.formula,
              "counting": r.rule_version.counting,
              "counting_sentence": COUNTING_SENTENCES.get(r.rule_version.counting, ""),
              "steps": r.steps, "session_verdict": r.session_verdict, "verdict": r.verdict,
              "first_verdict_step": r.first_verdict_step, "final": r.final,
              "residual": r.residual,
              "residual_english": residual_reading(r.residual, since=next(
                  (step for step, verdict in r.timeline if verdict == "violated"), None),
                  ended=not session.is_open, complied=r.session_verdict == SATISFIED),
              "timeline": [with_old_names({"step": step, "verdict": verdict}, ("verdict",))
                           for step, verdict in r.timeline],
              "violations": violations.get(r.id, [])}
             for r in results]
    complete = replay.complete_verdicts(run, session) if results else None
    for lane in lanes:
        found = (complete or {}).get(lane["rule"], {})
        lane.update({k: v for k, v in found.items() if k != "anticipated"})
    lanes = [with_old_names(lane, ("session_verdict", "verdict", "final", "complete"))
             for lane in lanes]
    steps = results[0].steps if results else session.events.count()
    return {"audit": run.id, "session_id": session.id, "session": session.external_id,
            "steps": steps, "rules": lanes}


# ---------------------------------------------------------------------------------------------
# Reports (built in report.py, which the pages share)

@router.get("{slug}/audits/{audit_id}/report.json", response=ReportOut,
            summary="Report: per rule totals, and rules x sessions verdicts and violation counts")
def report_json(request, slug: str, audit_id: int):
    workspace = workspace_for(request, slug)
    return report.report_document(_run_of(workspace, audit_id))


@router.get("{slug}/audits/{audit_id}/report.csv", response={200: None},
            summary="Report as CSV, streamed: one row per session; per rule the LTLf verdict "
                    "and the number of violations",
            openapi_extra={"responses": {200: {"description": "CSV",
                                               "content": {"text/csv": {}}}}})
def report_csv(request, slug: str, audit_id: int):
    workspace = workspace_for(request, slug)
    return report.csv_response(_run_of(workspace, audit_id))


@router.get("{slug}/audits/{audit_id}/violations.csv", response={200: None},
            summary="Every violation as CSV, streamed: session, rule, version number, counting, "
                    "trigger and detection steps, at_end, the witness's steps and the sentence "
                    "explaining it",
            openapi_extra={"responses": {200: {"description": "CSV",
                                               "content": {"text/csv": {}}}}})
def violations_csv(request, slug: str, audit_id: int):
    workspace = workspace_for(request, slug)
    return report.violations_csv_response(_run_of(workspace, audit_id))


# ---------------------------------------------------------------------------------------------
# Ground truth

@router.post("{slug}/ground-truth", response={200: GroundTruthImportOut, 207: GroundTruthImportOut},
             summary="Store ground-truth labels (auditor role): whether a session truly violates "
                     "a rule.  A label given again replaces the stored one; 207 when some labels "
                     "were refused (each named by its index), the others stored")
def import_ground_truth(request, slug: str, body: GroundTruthIn):
    workspace = workspace_for(request, slug, role=Role.AUDITOR)
    # Each label is validated exactly as a line of an uploaded JSONL file is.
    lines = (json.dumps(label) for label in body.labels)
    result = groundtruth.store_labels(workspace, groundtruth.read_jsonl(lines), body.source,
                                      "api", actor_of(request))
    answer = {**result.as_dict(),
              "errors": [{"index": e.line - 1, "reason": e.reason} for e in result.errors]}
    return Status(207 if result.errors else 200, answer)


@router.get("{slug}/ground-truth", response=GroundTruthPage,
            summary="Ground-truth labels, by rule and session")
def list_ground_truth(request, slug: str, rule: Text | None = None, session: Text | None = None,
                      limit: int = 100, offset: int = 0):
    workspace = workspace_for(request, slug)
    limit, offset = _page(limit, offset)
    labels = GroundTruth.objects.filter(workspace=workspace)
    if rule is not None:
        labels = labels.filter(rule=rule)
    if session is not None:
        labels = labels.filter(session=session)
    rows = labels.select_related("imported_by").order_by("rule", "session")[offset:offset + limit]
    return {"count": labels.count(), "limit": limit, "offset": offset,
            "items": [{"session": g.session, "rule": g.rule, "violated": g.violated,
                       "note": g.note, "source": g.source, "imported_at": g.imported_at,
                       "imported_by": g.imported_by.get_username() if g.imported_by else None}
                      for g in rows]}
