"""Workspace access for pages: 404 to outsiders (the page never confirms a workspace exists),
403 to members who lack the role an action needs."""

from django.core.exceptions import PermissionDenied
from django.http import Http404

from studio.workspaces.acting import Actor
from studio.workspaces.models import Membership, Workspace


def workspace_page(request, slug: str, role: str | None = None) -> tuple[Workspace, set[str]]:
    workspace = Workspace.objects.filter(slug=slug).first()
    roles = set()
    if workspace is not None and request.user.is_authenticated:
        roles = set(Membership.objects.filter(workspace=workspace, user=request.user)
                    .values_list("role", flat=True))
    if not roles:
        raise Http404("no such workspace")
    if role is not None and role not in roles:
        raise PermissionDenied(f"this needs the {role} role in this workspace")
    return workspace, roles


def actor(request) -> Actor:
    return Actor(user=request.user)
