"""The live page: sessions whose events arrive through the webhook, each rule's current verdict
and residual; the rows are polled every 2 s by htmx (and refreshed by a plain link without
JavaScript).

The answer comes first (issue 26): each page holds the most recently active sessions, ordered
violated, then at risk, then open, then complied (``ATTENTION``), most recent first within each;
in a session the rules met so far are folded away, the violated and open ones shown.

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
from studio.logic.anticipation import (CURRENTLY_SATISFIED, CURRENTLY_VIOLATED,
                                       PERMANENTLY_SATISFIED, PERMANENTLY_VIOLATED)
from studio.logic.anticipation import WORDS as COMPLETE_WORDS
from studio.monitor.anticipation import NOT_YET_KNOWN_WORDS
from studio.monitor.explain import residual_reading
from studio.monitor.verdicts import (COMPLIED, OPEN, SATISFIED, VIOLATED, effective_counting,
                                     session_verdict, verdict_glyph, verdict_words)
from studio.traces.models import TraceSession
from studio.workspaces.access import workspace_page

SESSIONS_PER_PAGE = 25
POLL_SECONDS = 2
# A session's place on its page, most urgent first.  At risk: a rule still open that the
# anticipation says is not met yet (the session ends violating it unless the agent acts);
# complied: every rule complied or met so far.
AT_RISK = "at risk"
ATTENTION = (VIOLATED, AT_RISK, OPEN, COMPLIED)


def _context(request: HttpRequest, slug: str) -> dict:
    workspace, roles = workspace_page(request, slug)
    sessions = (TraceSession.objects.filter(workspace=workspace, source=SOURCE_LIVE)
                .order_by(F("last_event_at").desc(nulls_last=True), "-id"))
    page = Paginator(sessions, SESSIONS_PER_PAGE).get_page(request.GET.get("page"))
    context = context_for(workspace)
    live_key = context.versions_key
    rows = by_attention([rules_in_words(s, current_rules(s, context), context)
                         for s in page.object_list])
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


def met_so_far(rule: dict) -> bool:
    """Complied, or open with nothing owed if the session ended now (the anticipation's
    "met so far" or "met for good")."""
    return rule["session_verdict"] == COMPLIED or (
        rule["session_verdict"] == OPEN
        and rule.get("complete") in (CURRENTLY_SATISFIED, PERMANENTLY_SATISFIED))


def at_risk(rule: dict) -> bool:
    """Open, and the session would end violating it unless the agent acts ("not met yet")."""
    return (rule["session_verdict"] == OPEN
            and rule.get("complete") in (CURRENTLY_VIOLATED, PERMANENTLY_VIOLATED))


def attention(rules: list[dict]) -> str:
    """The session's place in ``ATTENTION``: its worst rule.  Complied: every rule met so far.
    A session with no rule read yet is open (nothing is decided)."""
    if any(rule["session_verdict"] == VIOLATED for rule in rules):
        return VIOLATED
    if any(at_risk(rule) for rule in rules):
        return AT_RISK
    if not rules or not all(met_so_far(rule) for rule in rules):
        return OPEN
    return COMPLIED


def by_attention(rows: list[dict]) -> list[dict]:
    """``rows`` (most recently active first) in ``ATTENTION`` order; the sort is stable, so
    recency still orders sessions needing the same attention."""
    return sorted(rows, key=lambda row: ATTENTION.index(row["attention"]))


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
