"""Template context every page gets: the signed-in person's workspaces and roles."""

from studio.workspaces.models import Membership


def workspaces(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"my_workspaces": []}
    roles: dict[int, dict] = {}
    for m in Membership.objects.filter(user=user).select_related("workspace").order_by(
            "workspace__name", "role"):
        entry = roles.setdefault(m.workspace_id, {"workspace": m.workspace, "roles": []})
        entry["roles"].append(m.role)
    current = None
    match = getattr(request, "resolver_match", None)
    slug = match.kwargs.get("slug") if match else None
    for entry in roles.values():
        if entry["workspace"].slug == slug:
            current = entry
    return {"my_workspaces": list(roles.values()), "current_workspace": current}
