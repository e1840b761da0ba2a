"""The guard's questions to people, on the Live page: each decision waiting for a person with its
context (the session, the proposed action, the risk, what the rules at risk still require, in
words) and Approve / Deny for reviewers.  The list is polled by htmx like the sessions table;
without JavaScript the forms post and come back to the Live page."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from studio.errors import PermissionDenied, ServiceError
from studio.workspaces.access import actor, workspace_page
from studio.workspaces.models import Role

from . import services

ARGS_SHOWN = 300
PAGE_SIZE = 20


def _action(event) -> str:
    """The proposed action in a line: the tool and its arguments, or the text."""
    output = event.get("output") if isinstance(event, dict) else None
    if isinstance(output, dict) and output.get("tool"):
        args = json.dumps(output.get("args", {}), ensure_ascii=False, sort_keys=True)
        if len(args) > ARGS_SHOWN:
            args = args[:ARGS_SHOWN] + "…"
        return f"call {output['tool']} with {args}"
    text = json.dumps(output if output is not None else event, ensure_ascii=False)
    return text[:ARGS_SHOWN] + ("…" if len(text) > ARGS_SHOWN else "")


def _page_number(raw) -> int:
    try:
        return max(1, min(int(raw), 100_000))
    except (TypeError, ValueError):
        return 1


def pending_context(workspace, roles, poll: bool = True, page: int = 1) -> dict:
    """A page of the decisions waiting for a person (``PAGE_SIZE`` a page, oldest first)."""
    total = services.pending_count(workspace)
    pages = max(1, -(-total // PAGE_SIZE))
    page = min(_page_number(page), pages)
    rows = []
    for row in services.pending_decisions(workspace, PAGE_SIZE, (page - 1) * PAGE_SIZE):
        rows.append({"row": row, "action": _action(row.proposed),
                     "reason": row.answer.get("reason", ""),
                     "rules": [{**rule, "percent": (None if rule.get("risk") is None
                                                     else round(rule["risk"] * 100))}
                               for rule in row.answer.get("rules_at_risk", [])],
                     "default": row.answer.get("human_default") or "stop"})
    first = (page - 1) * PAGE_SIZE + 1
    return {"workspace": workspace, "pending": rows, "poll": poll,
            "may_answer": Role.REVIEWER in roles, "pending_total": total,
            "pending_page": page, "pending_pages": pages, "pending_first": first,
            "pending_last": first + len(rows) - 1}


@login_required
@require_safe
def pending(request: HttpRequest, slug: str):
    """The list's fragment (htmx polls it); without htmx (a link followed without JavaScript)
    the same list on a page of its own."""
    workspace, roles = workspace_page(request, slug)
    context = pending_context(workspace, roles, page=request.GET.get("page"))
    if request.headers.get("HX-Request"):
        return render(request, "guard/_pending.html", context)
    context["poll"] = False
    return render(request, "guard/pending.html", context)


@login_required
@require_POST
def answer(request: HttpRequest, slug: str, pk: int):
    workspace, roles = workspace_page(request, slug)
    approve = request.POST.get("answer") == "approve"
    try:
        row = services.resolve(workspace, pk, actor(request), approve,
                               request.POST.get("note", ""))
        done = (f"Approved: the agent in session {row.session} may go ahead." if approve
                else f"Denied: the agent in session {row.session} stops.")
        failed = None
    except (PermissionDenied, ServiceError) as exc:
        done, failed = None, getattr(exc, "message", str(exc))
    if request.headers.get("HX-Request"):
        context = pending_context(workspace, roles, page=request.POST.get("page"))
        context.update(done=done, failed=failed)
        return render(request, "guard/_pending.html", context,
                      status=200 if failed is None else 409)
    (messages.success if failed is None else messages.error)(request, done or failed)
    return redirect("live", slug=slug)
