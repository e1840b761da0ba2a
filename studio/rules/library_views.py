"""The rules page's "Add rules from the library" form: installs one domain of the rule library
(studio.rules.library) as drafts, or submitted for review, and goes back to the rules list with
what was added.  Authors only, like every other way of writing rules."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from studio.errors import ServiceError
from studio.logic import library
from studio.workspaces.access import actor, workspace_page
from studio.workspaces.models import Role

from .library import install_library


@login_required
@require_POST
def add_from_library(request: HttpRequest, slug: str):
    workspace, _ = workspace_page(request, slug, Role.AUTHOR)
    domain = request.POST.get("domain", "")
    if domain not in library.DOMAINS:
        titles = ", ".join(d.title for d in library.DOMAINS.values())
        messages.error(request, f"Choose a domain of the library ({titles}).")
        return redirect("rules", slug=slug)
    try:
        result = install_library(workspace, actor(request), domain,
                                 submit=request.POST.get("submit") == "1")
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, result.summary())
    return redirect("rules", slug=slug)
