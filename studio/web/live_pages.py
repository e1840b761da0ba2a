"""The live page: sessions whose events arrive through the webhook, each rule's current verdict
and residual; the rows are polled every 2 s by htmx (and refreshed by a plain link without
JavaScript).

The answer comes first (issue 26): sessions are ordered violated, then at risk, then open, then
complied (``studio.live.attention``), most recently active first within each, across all pages:
the query orders by the place each delivery stored (``TraceSession.live_order``, indexed), so
page 1 holds the most urgent sessions and paging is stable.  In a session the rules met so far
are folded away, the violated and open ones shown.

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
from studio.live.attention import (AT_RISK, ATTENTION, at_risk, attention, met_so_far,
                                   with_verdict)
from studio.live.context import Context, context_for
from studio.live.events import SOURCE_LIVE
from studio.live.reading import current_rules
from studio.logic.anticipation import WORDS as COMPLETE_WORDS
from studio.monitor.anticipation import NOT_YET_KNOWN_WORDS
from studio.monitor.explain import residual_reading
from studio.monitor.verdicts import COMPLIED, VIOLATED, verdict_glyph, verdict_words
from studio.traces.models import TraceSession
from studio.workspaces.access import workspace_page

__all__ = ["AT_RISK", "ATTENTION", "live", "live_rows", "rules_in_words", "sessions_in_order"]

SESSIONS_PER_PAGE = 25
POLL_SECONDS = 2


def sessions_in_order(workspace):
    """The workspace's live sessions, most urgent first (``live_order``), then most recently
    active, then newest: the order of the ``live_session_order`` index, so a page is read from
    it without sorting every session."""
    return (TraceSession.objects.filter(workspace=workspace, source=SOURCE_LIVE)
            .order_by("live_order", F("last_event_at").desc(nulls_last=True), "-id"))


def _context(request: HttpRequest, slug: str) -> dict:
    workspace, roles = workspace_page(request, slug)
    page = Paginator(sessions_in_order(workspace), SESSIONS_PER_PAGE).get_page(
        request.GET.get("page"))
    context = context_for(workspace)
    live_key = context.versions_key
    rows = [rules_in_words(s, current_rules(s, context), context) for s in page.object_list]
    auto = request.GET.get("auto") != "off"
    query = f"page={page.number}" + ("" if auto else "&auto=off")
    return {"workspace": workspace, "roles": roles, "page": page, "rows": rows,
            "live_rules": [rule for rule, _ in live_key], "auto": auto, "query": query,
            "pager_query": "" if auto else "auto=off",
            "poll_seconds": POLL_SECONDS}


def rules_in_words(session: TraceSession, current: dict, context: Context) -> dict:
    """The session's rules (``current_rules``) with their one verdict
    (``attention.with_verdict``: not decided yet while the session is open, unless nothing
    later can change it) and residuals in words; the session page shows the same."""
    rules = []
    for rule in with_verdict(current["rules"], session.is_open, context.counting):
        verdict = rule["session_verdict"]
        rules.append({**rule, "words": verdict, "glyph": verdict_glyph(verdict),
                      "final_words": verdict_words(rule["final"]) if rule["final"] else "",
                      "reading": residual_reading(rule["residual"], ended=not session.is_open,
                                                  complied=verdict == COMPLIED),
                      "complete_words": complete_words(rule)})
    met = [rule for rule in rules if met_so_far(rule)]
    # Violated rules first, then those not met yet, then the other open ones; each group keeps
    # the monitors' order (by rule name).
    shown = sorted((rule for rule in rules if not met_so_far(rule)),
                   key=lambda rule: (rule["session_verdict"] != VIOLATED, not at_risk(rule)))
    return {"session": session, "note": current["note"], "rules": rules, "shown": shown,
            "met": met, "attention": attention(rules)}


def complete_words(rule: dict) -> str:
    """The anticipatory verdict in words; "not yet known" while it is being searched."""
    if "complete" in rule and rule["complete"] is None:
        return NOT_YET_KNOWN_WORDS
    return COMPLETE_WORDS.get(rule.get("complete", ""), "")


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
