"""The live page: sessions whose events arrive through the webhook, most recently active first,
each rule's current verdict and residual; the rows are polled every 2 s by htmx (and refreshed
by a plain link without JavaScript).

A session's verdicts are those of its saved snapshot brought up to date with the few events
stored after it (``studio.live.reading.current_rules``): what the agent was last answered.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import F
from django.http import HttpRequest
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from studio.guard.decision_pages import pending_context
from studio.live.context import Context, context_for
from studio.live.events import SOURCE_LIVE
from studio.live.reading import current_rules
from studio.logic.anticipation import WORDS as COMPLETE_WORDS
from studio.monitor.explain import residual_reading
from studio.monitor.verdicts import (SATISFIED, effective_counting, session_verdict, verdict_glyph,
                                     verdict_words)
from studio.traces.models import TraceSession
from studio.workspaces.access import workspace_page

SESSIONS_PER_PAGE = 25
POLL_SECONDS = 2


def _context(request: HttpRequest, slug: str) -> dict:
    workspace, roles = workspace_page(request, slug)
    sessions = (TraceSession.objects.filter(workspace=workspace, source=SOURCE_LIVE)
                .order_by(F("last_event_at").desc(nulls_last=True), "-id"))
    page = Paginator(sessions, SESSIONS_PER_PAGE).get_page(request.GET.get("page"))
    context = context_for(workspace)
    live_key = context.versions_key
    rows = [rules_in_words(s, current_rules(s, context), context)
            for s in page.object_list]
    auto = request.GET.get("auto") != "off"
    query = f"page={page.number}" + ("" if auto else "&auto=off")
    return {"workspace": workspace, "roles": roles, "page": page, "rows": rows,
            "live_rules": [rule for rule, _ in live_key], "auto": auto, "query": query,
            "pager_query": "" if auto else "auto=off",
            "poll_seconds": POLL_SECONDS}


def rules_in_words(session: TraceSession, current: dict, context: Context) -> dict:
    """The session's rules (``current_rules``) with their one verdict
    (``session_verdict``: not decided yet while the session is open, unless nothing later can
    change it) and residuals in words; the session page shows the same."""
    counting = {v.rule: effective_counting(v.counting, v.formula) for v in context.versions}
    rules = []
    for rule in current["rules"]:
        verdict = session_verdict(rule["violations"], rule["final"] or "",
                                  open=session.is_open,
                                  settled=rule.get("trac_verdict", rule["verdict"]),
                                  counting=counting.get(rule["rule"], ""))
        rules.append({**rule, "session_verdict": verdict_words(verdict),
                      "words": verdict_words(verdict), "glyph": verdict_glyph(verdict),
                      "final_words": verdict_words(rule["final"]) if rule["final"] else "",
                      "reading": residual_reading(rule["residual"], ended=not session.is_open,
                                                  complied=verdict == SATISFIED),
                      "complete_words": COMPLETE_WORDS.get(rule.get("complete", ""), "")})
    return {"session": session, "note": current["note"], "rules": rules}


@login_required
@require_safe
def live(request: HttpRequest, slug: str):
    context = _context(request, slug)
    events_path = reverse("api:post_events", kwargs={"slug": slug, "session_id": "SESSION_ID"})
    context.update({
        "events_url": request.build_absolute_uri(events_path),
        "check_url": request.build_absolute_uri(events_path.removesuffix("events") + "check"),
        "otlp_url": request.build_absolute_uri(reverse("otlp-traces")),
    })
    context.update(pending_context(context["workspace"], context["roles"], context["auto"]))
    return render(request, "live/page.html", context)


@login_required
@require_safe
def live_rows(request: HttpRequest, slug: str):
    return render(request, "live/page.html#rows", _context(request, slug))
