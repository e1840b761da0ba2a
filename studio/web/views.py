"""Pages that belong to no single app: the home page and the workspace switcher."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from studio.workspaces.models import Membership, Workspace


@require_safe
@login_required
def home(request: HttpRequest):
    slugs = list(Membership.objects.filter(user=request.user)
                 .values_list("workspace__slug", flat=True).distinct())
    if len(slugs) == 1:
        return redirect("workspace", slug=slugs[0])
    return render(request, "web/home.html")


@require_safe
@login_required
def workspace(request: HttpRequest, slug: str):
    found = Workspace.objects.filter(slug=slug, memberships__user=request.user).distinct().first()
    if found is None:
        raise Http404("no such workspace")
    roles = sorted(set(Membership.objects.filter(workspace=found, user=request.user)
                       .values_list("role", flat=True)))
    return render(request, "web/workspace.html", {"workspace": found, "roles": roles})
