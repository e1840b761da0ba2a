"""Audit pages: the runs of a workspace and the form that starts one, a run's report (progress
while it runs; then the rules x sessions matrix, totals and agreement with ground truth), the CSV
and JSON exports, the printable evidence report, and the ground-truth labels.

Views validate and call services or report.py; anyone outside the workspace gets 404, also for a
run of another workspace.  htmx requests get partials; every page works without JavaScript.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Q, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from studio.errors import ServiceError
from studio.monitor.verdicts import VIOLATED
from studio.rules.models import RuleSet
from studio.traces.models import Upload, UploadStatus
from studio.workspaces.access import actor, workspace_page
from studio.workspaces.models import Role

from . import groundtruth, report, services
from .models import AuditRun, GroundTruth, RunStatus, SessionResult
from .verdicts import session_verdict_q

RUNS_PER_PAGE = 25
SESSIONS_PER_PAGE = 50
LABELS_PER_PAGE = 100
# Line errors of a ground-truth import listed on the page; the count covers them all.
ERRORS_SHOWN = 200


def _run_of(workspace, audit_id: int) -> AuditRun:
    return get_object_or_404(AuditRun.objects.with_kind()
                             .select_related("rule_set", "upload", "created_by")
                             .prefetch_related("rule_versions__rule"),
                             workspace=workspace, id=audit_id)


def _totals(run: AuditRun) -> list[dict]:
    """report.rule_totals with each rule's version number, which the pages show."""
    numbers = {v.id: v.number for v in run.rule_versions.all()}
    return [{**row, "number": numbers.get(row["rule_version_id"])}
            for row in report.rule_totals(run)]


def _scope(run: AuditRun) -> str:
    if run.upload is not None:
        return f"the sessions of upload {run.upload.filename} (#{run.upload_id})"
    # An erased upload leaves the run's scope empty: it was still that upload, not everything.
    for entry in run.erasures:
        if entry.get("scope"):
            return f"the sessions of upload {entry['name']} (#{entry['id']}, since erased)"
    return "every session of the workspace"


# ---------------------------------------------------------------------------------------------
# Runs

def _start_form(workspace) -> dict:
    return {
        "rule_sets": list(RuleSet.objects.filter(workspace=workspace).order_by("name")),
        "uploads": list(Upload.objects.filter(workspace=workspace, status=UploadStatus.PARSED)
                        .order_by("-created_at")[:200]),
    }


def _int_or_none(value: str | None, field: str) -> int | None:
    value = (value or "").strip()
    if not value:
        return None
    if not value.isdigit() or len(value) > 18:
        raise ServiceError(f"choose a {field.replace('_', ' ')} from the list", field=field)
    return int(value)


def _start(request: HttpRequest, workspace) -> tuple[AuditRun | None, dict]:
    """Start a run from the form; the run, or None and the errors by field."""
    errors: dict[str, str] = {}
    try:
        rule_set_id = _int_or_none(request.POST.get("rule_set"), "rule_set")
        upload_id = _int_or_none(request.POST.get("upload"), "upload")
        rule_set = upload = None
        if rule_set_id is not None:
            rule_set = RuleSet.objects.filter(workspace=workspace, id=rule_set_id).first()
            if rule_set is None:
                raise ServiceError("that rule set does not exist (any more); choose another",
                                   field="rule_set")
        if upload_id is not None:
            upload = Upload.objects.filter(workspace=workspace, id=upload_id).first()
            if upload is None:
                raise ServiceError("that upload does not exist (any more); choose another",
                                   field="upload")
        return services.start_audit(workspace, rule_set, upload, actor(request)), errors
    except services.QueueUnavailable as exc:
        errors["general"] = exc.message  # the run is stored and listed; it can be resumed
    except ServiceError as exc:
        errors[exc.field or "general"] = exc.message
    return None, errors


def _runs_page(request: HttpRequest, workspace, roles, errors: dict | None = None,
               status: int = 200):
    runs = (AuditRun.objects.filter(workspace=workspace).audits()
            .select_related("rule_set", "upload", "created_by")
            .order_by("-created_at", "-id"))  # impact checks are shown with their versions
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    found = {row["run_id"]: row for row in SessionResult.objects.filter(
        run__in=[r.id for r in page.object_list]).values("run_id").annotate(
            violations=Sum("violation_count"),
            sessions_violated=Count("session_id", distinct=True,
                                    filter=session_verdict_q(VIOLATED)))}
    rows = [{"run": run, "progress": services.audit_progress(run), "scope": _scope(run),
             "violations": (found.get(run.id) or {}).get("violations") or 0,
             "sessions_violated": (found.get(run.id) or {}).get("sessions_violated") or 0}
            for run in page.object_list]
    return render(request, "audits/list.html", {
        "workspace": workspace, "roles": roles, "page": page, "rows": rows,
        "errors": errors or {}, "chosen": request.POST if request.method == "POST" else {},
        "can_start": Role.AUDITOR in roles, **_start_form(workspace)}, status=status)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def audit_list(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug)
    if request.method == "POST":
        return audit_start(request, slug)
    return _runs_page(request, workspace, roles)


@login_required
@require_POST
def audit_start(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug, Role.AUDITOR)
    run, errors = _start(request, workspace)
    if run is None:
        return _runs_page(request, workspace, roles, errors, status=400)
    return redirect("audit", slug=slug, audit_id=run.id)


# ---------------------------------------------------------------------------------------------
# One run

@login_required
@require_safe
def audit_report(request: HttpRequest, slug: str, audit_id: int):
    workspace, roles = workspace_page(request, slug)
    run = _run_of(workspace, audit_id)
    running = run.status in (RunStatus.QUEUED, RunStatus.RUNNING)
    if request.GET.get("part") == "progress" and request.headers.get("HX-Request"):
        # The watcher's question "finished yet?": nothing to swap either way.
        response = HttpResponse(status=204)
        if not running:
            response["HX-Refresh"] = "true"  # load the whole report
        return response
    totals = _totals(run)
    context = {"workspace": workspace, "roles": roles, "run": run, "running": running,
               "scope": _scope(run), "totals": totals,
               "agreement": report.agreement(run)}
    if not running:
        only_violated = request.GET.get("show") == "violated"
        context.update(report.matrix(run, request.GET.get("page"), SESSIONS_PER_PAGE,
                                     only_violated))
        # The matrix's column of a rule that never applied says so above its "complied" cells.
        context["never_triggered"] = {row["rule_version_id"] for row in totals
                                      if row["never_triggered"]}
        context["trigger_unknown"] = {row["rule_version_id"] for row in totals
                                      if row["trigger_unknown"]}
        context["only_violated"] = only_violated
    return render(request, "audits/report.html", context)


@login_required
@require_safe
def audit_csv(request: HttpRequest, slug: str, audit_id: int):
    workspace, _ = workspace_page(request, slug)
    return report.csv_response(_run_of(workspace, audit_id))


@login_required
@require_safe
def audit_violations_csv(request: HttpRequest, slug: str, audit_id: int):
    workspace, _ = workspace_page(request, slug)
    return report.violations_csv_response(_run_of(workspace, audit_id))


@login_required
@require_safe
def audit_json(request: HttpRequest, slug: str, audit_id: int):
    workspace, _ = workspace_page(request, slug)
    return report.json_response(_run_of(workspace, audit_id))


@login_required
@require_safe
def audit_evidence(request: HttpRequest, slug: str, audit_id: int):
    workspace, _ = workspace_page(request, slug)
    run = _run_of(workspace, audit_id)
    if run.draft_label:
        # An impact check ran an unapproved version: no report may present it as evidence.
        return render(request, "audits/evidence_refused.html",
                      {"workspace": workspace, "run": run}, status=404)
    violations, total = report.violations(run)
    corrections, corrections_total = report.corrections(run)
    return render(request, "audits/evidence.html", {
        "corrections": corrections, "corrections_total": corrections_total,
        "workspace": workspace, "run": run, "scope": _scope(run),
        "progress": services.audit_progress(run), "versions": report.version_history(run),
        "totals": _totals(run), "agreement": report.agreement(run),
        "labelers": report.labelers(run), "uploads": report.uploads_read(run),
        "live_sessions": report.live_sessions_read(run),
        "violations": violations, "violations_total": total,
        "violations_limit": report.EVIDENCE_VIOLATIONS})


# ---------------------------------------------------------------------------------------------
# Ground truth

@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def ground_truth(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug)
    result = None
    errors: dict[str, str] = {}
    status = 200
    if request.method == "POST":
        workspace, roles = workspace_page(request, slug, Role.AUDITOR)
        file = request.FILES.get("file")
        if file is None:
            errors["file"] = "choose a JSONL or CSV file of labels to upload"
        elif not file.size:
            errors["file"] = f"{file.name} is empty"
        else:
            try:
                result = groundtruth.import_labels(workspace, file, file.name,
                                                   request.POST.get("format") or "auto",
                                                   actor(request))
            except ServiceError as exc:
                errors[exc.field or "general"] = exc.message
        if errors:
            status = 400
    labels = GroundTruth.objects.filter(workspace=workspace).select_related("imported_by")
    wanted_rule = request.GET.get("rule", "")
    if "\x00" in wanted_rule:  # no rule is named so, and Postgres refuses NUL in a query
        labels = labels.none()
    elif wanted_rule:
        labels = labels.filter(rule=wanted_rule)
    page = Paginator(labels.order_by("rule", "session"), LABELS_PER_PAGE).get_page(
        request.GET.get("page"))
    per_rule = [{**row, "not_violated": row["labels"] - row["violated"]} for row in (
        GroundTruth.objects.filter(workspace=workspace).values("rule").annotate(
            labels=Count("id"), violated=Count("id", filter=Q(violated=True))).order_by("rule"))]
    return render(request, "audits/ground_truth.html", {
        "workspace": workspace, "roles": roles, "can_import": Role.AUDITOR in roles,
        "result": result, "errors": errors, "page": page, "per_rule": per_rule,
        "wanted_rule": wanted_rule, "rule_query": urlencode({"rule": wanted_rule}),
        "errors_shown": ERRORS_SHOWN,
        "shown_errors": result.errors[:ERRORS_SHOWN] if result else [],
    }, status=status)
