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

from studio.api.core import PermissionDenied, ServiceError
from studio.web.access import actor, workspace_page
from studio.workspaces.models import Role

from . import services

ARGS_SHOWN = 300


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


def pending_context(workspace, roles, poll: bool = True) -> dict:
    rows = []
    for row in services.pending_decisions(workspace):
        rows.append({"row": row, "action": _action(row.proposed),
                     "reason": row.answer.get("reason", ""),
                     "rules": [{**rule, "percent": (None if rule.get("risk") is None
                                                     else round(rule["risk"] * 100))}
                               for rule in row.answer.get("rules_at_risk", [])],
                     "default": row.answer.get("human_default") or "stop"})
    return {"workspace": workspace, "pending": rows, "poll": poll,
            "may_answer": Role.REVIEWER in roles}


@login_required
@require_safe
def pending(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug)
    return render(request, "guard/_pending.html", pending_context(workspace, roles))


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
        context = pending_context(workspace, roles)
        context.update(done=done, failed=failed)
        return render(request, "guard/_pending.html", context,
                      status=200 if failed is None else 409)
    (messages.success if failed is None else messages.error)(request, done or failed)
    return redirect("live", slug=slug)
