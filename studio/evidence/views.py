"""Review evidence pages: a rule's test cases (run against the selected version), what a
version would change on stored sessions, and two audit runs compared.  The first two are loaded
by htmx into the rule page and are pages of their own without JavaScript."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from studio.audits.models import AuditRun
from studio.errors import ServiceError
from studio.logic.cases import parse_table, table_text
from studio.rules.models import Rule, VersionStatus
from studio.traces.models import Upload
from studio.workspaces.access import actor, workspace_page
from studio.workspaces.models import Role

from . import compare, impact, services
from .models import RuleCase


# Errors shown beside the from-a-session form's fields rather than above the cases.
SESSION_FIELDS = ("session", "from_step", "to_step")


def _selected(rule: Rule, request):
    versions = list(rule.versions.select_related("rule").order_by("number"))
    wanted = request.GET.get("v") or request.POST.get("v") or ""
    return next((v for v in versions if wanted.isdigit() and v.number == int(wanted)),
                versions[-1])


def _int(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isdigit() else None


@login_required
@require_http_methods(["GET", "POST"])
def rule_cases(request: HttpRequest, slug: str, rule_id: int):
    """The rule's test cases run against version ``?v=N``; POST adds, promotes, changes or
    deletes a case (authors)."""
    workspace, roles = workspace_page(request, slug)
    rule = get_object_or_404(Rule, workspace=workspace, id=rule_id)
    selected = _selected(rule, request)
    errors: dict[str, str] = {}
    form: dict = {}
    if request.method == "POST":
        workspace_page(request, slug, Role.AUTHOR)
        form = request.POST
        try:
            _act(request, rule, selected)
        except ServiceError as exc:
            errors = {"field": exc.field or "", "message": exc.message,
                      "inline": exc.field in SESSION_FIELDS
                      and form.get("action") == "from_session"}
        else:
            back = f"{reverse('rule', args=[slug, rule.id])}?v={selected.number}#cases"
            return redirect(back)
    results = {r["case_id"]: r for r in services.check_version(selected)}
    cases = [{"case": c, "result": results.get(c.id), "table": table_text(c.steps)}
             for c in RuleCase.objects.filter(rule=rule)]
    context = {"workspace": workspace, "rule": rule, "selected": selected, "cases": cases,
               "errors": errors, "form": form, "can_write": Role.AUTHOR in roles,
               "session_names": services.newest_sessions(workspace) if Role.AUTHOR in roles
               else [],
               "failing": sum(1 for r in results.values() if not r["passed"])}
    template = ("evidence/_cases.html" if request.headers.get("HX-Request")
                else "evidence/cases.html")
    return render(request, template, context, status=422 if errors else 200)


def _act(request, rule: Rule, selected) -> None:
    who = actor(request)
    post = request.POST
    action = post.get("action")
    if action == "add":
        services.add_case(rule, who, post.get("name", ""), post.get("expect", ""),
                          parse_table(post.get("table", "")), _int(post.get("at_step")))
        messages.success(request, "Test case added.")
    elif action == "promote":
        services.case_from_trace(selected, who, post.get("which", ""))
        messages.success(request, "Shortest trace added as a test case.")
    elif action == "from_session":
        session = services.session_named(rule.workspace, post.get("session", ""))
        services.case_from_session(rule, who, session.id, _int(post.get("from_step")),
                                   _int(post.get("to_step")), post.get("expect", ""),
                                   post.get("name", ""), _int(post.get("at_step")))
        messages.success(request, "Test case taken from the session.")
    elif action in ("change", "delete"):
        case = get_object_or_404(RuleCase, rule=rule, id=_int(post.get("case")) or 0)
        if action == "delete":
            services.delete_case(case, who)
            messages.success(request, f"Test case {case.name!r} deleted.")
        else:
            at = _int(post.get("at_step"))
            services.change_case(case, who, post.get("name") or None, post.get("expect") or None,
                                 parse_table(post["table"]) if "table" in post else None,
                                 at, post.get("reason", ""))
            messages.success(request, f"Test case {case.name!r} changed (recorded).")
    else:
        raise ServiceError("unknown action")


@login_required
@require_http_methods(["GET", "POST"])
def version_impact(request: HttpRequest, slug: str, rule_id: int):
    """What version ``?v=N`` would change on the stored sessions: the form that starts a check
    (authors and reviewers), its progress (htmx polls this) and the sessions that change."""
    workspace, roles = workspace_page(request, slug)
    rule = get_object_or_404(Rule, workspace=workspace, id=rule_id)
    selected = _selected(rule, request)
    error = ""
    if request.method == "POST":
        if not roles & {Role.AUTHOR, Role.REVIEWER}:
            raise PermissionDenied("this needs the author or the reviewer role")
        try:
            impact.start_impact(selected, actor(request), request.POST.get("scope", "all"),
                                _int(request.POST.get("upload_id")),
                                _int(request.POST.get("sample_size")))
        except ServiceError as exc:
            error = exc.message
        else:
            if not request.headers.get("HX-Request"):
                return redirect(f"{reverse('rule', args=[slug, rule.id])}"
                                f"?v={selected.number}#impact")
    check = impact.latest_check(selected)
    result = impact.impact_result(check) if check is not None else None
    rows = []
    if result and result["summary"]:
        for change in result["summary"]["sessions_list"][:50]:
            rows.append({**change, **impact.witnesses(change)})
    running = bool(result and not result["summary"]
                   and result["progress"]["status"] != "failed")
    context = {"workspace": workspace, "rule": rule, "selected": selected, "check": check,
               "result": result, "rows": rows, "error": error, "running": running,
               "can_start": (bool(roles & {Role.AUTHOR, Role.REVIEWER}) and selected.status in
                             (VersionStatus.DRAFT, VersionStatus.IN_REVIEW)),
               "uploads": Upload.objects.filter(workspace=workspace).order_by("-id")[:50]}
    template = ("evidence/_impact.html" if request.headers.get("HX-Request")
                else "evidence/impact.html")
    return render(request, template, context, status=422 if error else 200)


@login_required
@require_http_methods(["GET"])
def compare_runs(request: HttpRequest, slug: str):
    """Two audit runs of the workspace compared (``?before=A&after=B``; ``&format=csv|json``)."""
    workspace, _ = workspace_page(request, slug)
    runs = list(AuditRun.objects.filter(workspace=workspace).audits().with_kind()
                .order_by("-created_at", "-id")[:200])
    before_id, after_id = _int(request.GET.get("before")), _int(request.GET.get("after"))
    context = {"workspace": workspace, "runs": runs, "before_id": before_id,
               "after_id": after_id, "rules": None, "error": ""}
    if before_id and after_id:
        mine = AuditRun.objects.filter(workspace=workspace).with_kind()
        before = mine.filter(id=before_id).first()
        after = mine.filter(id=after_id).first()
        if before is None or after is None:
            missing = before_id if before is None else after_id
            context["error"] = f"There is no audit run {missing} in this workspace."
        else:
            # Impact checks are compared only when named: the pickers show them then, labelled.
            runs[:0] = [r for r in dict.fromkeys((before, after)) if r not in runs]
            rules = compare.compare_runs(before, after)
            fmt = request.GET.get("format")
            if fmt == "csv":
                response = HttpResponse(compare.comparison_csv(rules), content_type="text/csv")
                response["Content-Disposition"] = (f'attachment; filename="audit-{before.id}-vs-'
                                                   f'{after.id}.csv"')
                return response
            if fmt == "json":
                return JsonResponse({"before": before.id, "after": after.id,
                                     "rules": [r.as_dict() for r in rules]})
            context.update(before=before, after=after, rules=rules)
    return render(request, "evidence/compare.html", context,
                  status=404 if context["error"] else 200)

