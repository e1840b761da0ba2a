"""Template context every page gets: the signed-in person's workspaces and roles, and in the
current workspace how many rule versions wait for their review or came back rejected."""

from studio.rules.queue import rejected_for, waiting_for_review
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
    if current is not None:
        # The review queue's counts for the navigation: two COUNT queries per page.
        current["waiting"] = waiting_for_review(current["workspace"], user,
                                                current["roles"]).count()
        current["rejected"] = rejected_for(current["workspace"], user, current["roles"]).count()
    return {"my_workspaces": list(roles.values()), "current_workspace": current}
