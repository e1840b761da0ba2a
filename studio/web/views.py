"""Pages that belong to no single app: the home page and the workspace switcher."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from studio.rules.queue import rejected_for, waiting_for_review
from studio.workspaces.models import Membership, Workspace

QUEUE_SHOWN = 50  # the navigation gives the full counts


@require_safe
@login_required
def home(request: HttpRequest):
    slugs = list(Membership.objects.filter(user=request.user)
                 .values_list("workspace__slug", flat=True).distinct())
    if len(slugs) == 1:
        return redirect("workspace", slug=slugs[0])
    roles: dict[int, set[str]] = {}
    workspaces = {}
    for m in Membership.objects.filter(user=request.user).select_related("workspace"):
        roles.setdefault(m.workspace_id, set()).add(m.role)
        workspaces[m.workspace_id] = m.workspace
    entries = [{"workspace": workspaces[wid], "roles": sorted(held),
                "waiting": waiting_for_review(workspaces[wid], request.user, held).count(),
                "rejected": rejected_for(workspaces[wid], request.user, held).count()}
               for wid, held in roles.items()]
    entries.sort(key=lambda entry: entry["workspace"].name)
    return render(request, "web/home.html", {"entries": entries})


@require_safe
@login_required
def workspace(request: HttpRequest, slug: str):
    found = Workspace.objects.filter(slug=slug, memberships__user=request.user).distinct().first()
    if found is None:
        raise Http404("no such workspace")
    roles = sorted(set(Membership.objects.filter(workspace=found, user=request.user)
                       .values_list("role", flat=True)))
    return render(request, "web/workspace.html", {
        "workspace": found, "roles": roles,
        "waiting": list(waiting_for_review(found, request.user, roles)[:QUEUE_SHOWN]),
        "rejected": list(rejected_for(found, request.user, roles)[:QUEUE_SHOWN]),
    })
