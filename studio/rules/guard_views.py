"""The workspace's causal guards page: ``/w/<slug>/guards/``.

Any member reads the list; authors declare and delete guards (the same services as the API).  A
guard whose CPL does not parse is shown again with the line and column of the mistake and a caret
under it.  The MSC page of every session evaluates these guards at the choice events naming them.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from studio.causal import CplSyntaxError, parse_cpl
from studio.errors import ServiceError
from studio.workspaces.access import actor, workspace_page
from studio.workspaces.models import Role

from . import guards
from .models import CausalGuard

FIELD_NAMES = {"name": "Name", "cpl": "CPL formula", "owner": "Owner lifeline",
               "description": "Description"}
FORM_FIELDS = tuple(FIELD_NAMES)


def _caret(text: str) -> str:
    """The offending line of a CPL formula with a caret under the mistake, or ''."""
    try:
        parse_cpl(text)
    except CplSyntaxError as exc:
        return exc.context()
    except ValueError:
        return ""
    return ""


@login_required
@require_http_methods(["GET", "POST"])
def guard_list(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug)
    form = {name: "" for name in FORM_FIELDS}
    errors: dict[str, str] = {}
    caret = ""
    status = 200
    if request.method == "POST":
        workspace, roles = workspace_page(request, slug, Role.AUTHOR)
        action = request.POST.get("action")
        if action == "create":
            form = {name: request.POST.get(name, "") for name in FORM_FIELDS}
            try:
                guard = guards.create_guard(workspace, actor(request), form["name"], form["cpl"],
                                            form["owner"], form["description"])
            except ServiceError as exc:
                errors[exc.field or "general"] = exc.message
                if exc.field == "cpl":
                    caret = _caret(form["cpl"])
                status = 409 if exc.status == 409 else 422
            else:
                messages.success(request, f"Causal guard {guard.name} declared.")
                return redirect("guards", slug=slug)
        elif action == "delete":
            raw = request.POST.get("guard", "")
            guard = get_object_or_404(CausalGuard, workspace=workspace,
                                      id=int(raw) if raw.isascii() and raw.isdigit()
                                      and len(raw) < 19 else 0)
            guards.delete_guard(guard, actor(request))
            messages.success(request, f"Causal guard {guard.name} deleted.")
            return redirect("guards", slug=slug)
        else:
            errors["general"] = "Unknown action."
            status = 400
    return render(request, "rules/guards.html", {
        "workspace": workspace, "roles": roles, "can_manage": Role.AUTHOR in roles,
        "guards": CausalGuard.objects.filter(workspace=workspace).select_related("created_by"),
        "form": form, "errors": errors, "caret": caret,
        "error_summary": [{"field": f, "name": FIELD_NAMES.get(f), "message": m}
                          for f, m in errors.items()]}, status=status)
