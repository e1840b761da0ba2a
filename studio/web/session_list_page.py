"""The session list: a workspace's sessions with a verdict badge per rule of an audit run,
filtered by rule, verdict, upload or a search of their ids, a page at a time.  A parameter a
person can get wrong gets a message on the page (status 400), never a 500; an unknown run or
workspace gets 404."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef, Q
from django.http import HttpRequest
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from studio.audits.models import AuditRun, SessionResult
from studio.audits.verdicts import session_verdict_q
from studio.monitor.verdicts import PENDING, SATISFIED, VIOLATED, session_verdict, verdict_words
from studio.traces.models import Event, TraceSession, Upload
from studio.workspaces.access import workspace_page

from .session_page_parts import (SEARCH_LIMIT, Missing, int_param, missing_page, page_links,
                                 query_string, run_choice, run_options, verdict_badge)

SESSIONS_PER_PAGE = 50
UPLOADS_OFFERED = 200

# The list's verdict filter: its value, what the select says, the results it keeps.
VERDICT_FILTERS = {
    verdict_words(VIOLATED): (verdict_words(VIOLATED), session_verdict_q(VIOLATED)),
    verdict_words(SATISFIED): (verdict_words(SATISFIED), session_verdict_q(SATISFIED)),
    verdict_words(PENDING): (verdict_words(PENDING) + ": not decided yet",
                             session_verdict_q(PENDING)),
    "final-violated": ("violated when the session ends", Q(final="violated")),
    "any-violation": ("with at least one violation", Q(violation_count__gt=0)),
}


def _versions(run: AuditRun | None) -> list:
    if run is None:
        return []
    return list(run.rule_versions.select_related("rule").order_by("rule__name", "id"))


@require_safe
@login_required
def session_list(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug)
    problems: list[str] = []
    try:
        run = run_choice(request, workspace, problems)
    except Missing as exc:
        return missing_page(request, workspace, str(exc))
    versions = _versions(run)
    sessions = TraceSession.objects.filter(workspace=workspace)
    # By default the run's scope: the sessions it has results for; ``all=1`` lists every
    # session of the workspace, so none is out of reach (those without results say so).
    show_all = request.GET.get("all") == "1"
    outside = 0
    if run is not None:
        in_run = Exists(SessionResult.objects.filter(run=run, session=OuterRef("pk")))
        outside = sessions.exclude(in_run).count()
        if not show_all:
            sessions = sessions.filter(in_run)

    search = request.GET.get("q", "").strip()[:SEARCH_LIMIT]
    if search:
        sessions = sessions.filter(external_id__icontains=search)

    uploads = list(Upload.objects.filter(workspace=workspace).order_by("-created_at", "-id")
                   .values("id", "filename")[:UPLOADS_OFFERED])
    upload_id = int_param(request, "upload", problems, "upload number")
    if upload_id is not None:
        if Upload.objects.filter(workspace=workspace, id=upload_id).exists():
            sessions = sessions.filter(Exists(Event.objects.filter(
                session=OuterRef("pk"), upload_id=upload_id)))
        else:
            problems.append(f"There is no upload {upload_id} in this workspace; the upload "
                            "filter is ignored.")
            upload_id = None

    rule_name = request.GET.get("rule", "").strip()
    version = None
    if rule_name:
        version = next((v for v in versions if v.rule.name == rule_name), None)
        if version is None:
            problems.append(f"Rule “{rule_name[:100]}” was not audited in "
                            f"{'run ' + str(run.id) if run else 'any run'}; the rule filter "
                            "is ignored.")
            rule_name = ""
    # Links saved before the words changed say satisfied or pending.
    verdict = verdict_words(request.GET.get("verdict", "").strip())
    if verdict and verdict not in VERDICT_FILTERS:
        problems.append(f"“{verdict[:40]}” is not a verdict to filter by; choose one of: "
                        f"{', '.join(VERDICT_FILTERS)}.")
        verdict = ""
    if verdict and run is None:
        problems.append("No audit has run in this workspace, so there are no verdicts to "
                        "filter by.")
        verdict = ""
    if verdict:
        matching = SessionResult.objects.filter(VERDICT_FILTERS[verdict][1], run=run,
                                                session=OuterRef("pk"))
        if version is not None:
            matching = matching.filter(rule_version=version)
        sessions = sessions.filter(Exists(matching))

    paginator = Paginator(sessions.order_by("id").only(
        "id", "external_id", "steps", "source", "ended_at"), SESSIONS_PER_PAGE,
        allow_empty_first_page=True)
    number = int_param(request, "page", problems, "page number", minimum=1) or 1
    if number > paginator.num_pages:
        problems.append(f"There is no page {number}: the list has {paginator.num_pages} "
                        f"page{'s' if paginator.num_pages != 1 else ''}. Showing the last one.")
        number = paginator.num_pages
    page = paginator.page(number)
    rows = list(page.object_list)

    # One query for the badges of the whole page.
    columns = {v.id: i for i, v in enumerate(versions)}
    badges: dict[int, list] = {s.id: [None] * len(versions) for s in rows}
    if run is not None and rows:
        is_open = {s.id: s.is_open for s in rows}
        for session_id, version_id, v, final, count, counting in SessionResult.objects.filter(
                run=run, session_id__in=list(badges)).values_list(
                "session_id", "rule_version_id", "verdict", "final", "violation_count",
                "rule_version__counting"):
            if version_id in columns:
                badges[session_id][columns[version_id]] = verdict_badge(session_verdict(
                    count, final, open=is_open[session_id], settled=v, counting=counting),
                    count)

    filters = {"run": run.id if run else None, "rule": rule_name, "verdict": verdict,
               "q": search, "upload": upload_id, "all": "1" if show_all else None}
    with_messages = set(Event.objects.filter(session_id__in=[s.id for s in rows])
                        .exclude(message_id="").values_list("session_id", flat=True).distinct())
    back = query_string(**filters, page=number if number > 1 else None)
    session_query = query_string(run=run.id if run else None, back=back)
    list_url = reverse("sessions", args=[slug])
    return render(request, "sessions/list.html", {
        "workspace": workspace, "roles": roles, "run": run,
        "run_options": run_options(workspace, run),
        "versions": versions, "uploads": uploads, "verdict_filters": [
            (value, label) for value, (label, _) in VERDICT_FILTERS.items()],
        "filters": filters, "problems": problems,
        "rows": [{"session": s, "badges": badges[s.id], "messages": s.id in with_messages}
                 for s in rows],
        "run_by_default": run is not None and not request.GET.get("run", "").strip(),
        "outside": outside, "show_all": show_all,
        "all_url": f"{list_url}?{query_string(run=run.id if run else None, all='1')}",
        "run_only_url": f"{list_url}?{query_string(run=run.id if run else None)}",
        "column_count": 3 + len(versions), "page": page,
        "page_links": [(n, f"{list_url}?{query_string(**filters, page=n)}" if n else None)
                       for n in page_links(number, paginator.num_pages)],
        "previous_page": (f"{list_url}?{query_string(**filters, page=number - 1)}"
                          if page.has_previous() else None),
        "next_page": (f"{list_url}?{query_string(**filters, page=number + 1)}"
                      if page.has_next() else None),
        "session_query": session_query,
    }, status=400 if problems else 200)
