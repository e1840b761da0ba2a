"""Pages for a workspace's people and credentials: members, their roles and invitations
(admins), tokens (everyone their own, admins all), webhook secrets and the LLM endpoint (admins),
and a new workspace (staff).  Secrets and invitation links are shown once, on the answer to the
form that created them, which no cache keeps; a stored LLM key is never shown back (only its
last four characters)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods, require_POST

from studio.errors import ServiceError

from . import invitations, llm, services
from .access import actor, workspace_page
from .models import INVITATION_DAYS, ApiToken, Invitation, LLMEndpoint, Role, WebhookSecret

ROLE_HELP = {
    Role.AUTHOR: "writes rules and submits them for review",
    Role.REVIEWER: "approves or rejects rule versions written by others",
    Role.AUDITOR: "uploads logs and runs audits",
    Role.ADMIN: "manages members, everyone's tokens and the webhook secrets",
}


def _role_options(allowed=None) -> list[dict]:
    return [{"value": value, "label": label, "help": ROLE_HELP[value]}
            for value, label in Role.choices if allowed is None or value in allowed]


# --- members ---------------------------------------------------------------------------------

def _members_page(request, workspace, roles, errors=None, form=None, status=200, *,
                  invite_form=None, invited=None):
    errors = errors or {}
    people = [{**member, "error": errors.get(f"member:{member['username']}")}
              for member in services.members_of(workspace)]
    response = render(request, "workspaces/members.html", {
        "workspace": workspace, "roles": roles, "members": people,
        "role_options": _role_options(), "errors": errors or {},
        "form": form or {"username": "", "roles": []},
        "invitations": invitations.pending(workspace), "invited": invited,
        "invite_form": invite_form or {"email": "", "roles": []},
        "invitation_days": INVITATION_DAYS,
    }, status=status)
    if invited is not None:
        add_never_cache_headers(response)  # the link must not outlive this answer
    return response


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def members(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug, role=Role.ADMIN)
    if request.method != "POST":
        return _members_page(request, workspace, roles)
    form = {"username": request.POST.get("username", "").strip(),
            "roles": request.POST.getlist("roles")}
    if not form["username"]:
        return _members_page(request, workspace, roles, {"username": "Enter a username."},
                             form, status=400)
    try:
        services.add_person(workspace, form["username"], form["roles"], by=actor(request))
    except ServiceError as exc:
        return _members_page(request, workspace, roles, {exc.field or "username": exc.message},
                             form, status=exc.status)
    messages.success(request, f"{form['username']} added with the roles "
                              f"{', '.join(sorted(set(form['roles'])))}.")
    return redirect("members", slug=workspace.slug)


def _member_user(workspace, username: str):
    user = services.find_member(workspace, username)
    if user is None:
        raise Http404("no such member")
    return user


@login_required
@require_POST
def member_roles(request: HttpRequest, slug: str, username: str):
    workspace, roles = workspace_page(request, slug, role=Role.ADMIN)
    user = _member_user(workspace, username)
    try:
        after = services.set_member_roles(workspace, user, request.POST.getlist("roles"),
                                          by=actor(request))
    except ServiceError as exc:
        return _members_page(request, workspace, roles, {f"member:{username}": exc.message},
                             status=exc.status)
    messages.success(request, f"{username} now has the roles {', '.join(after)}.")
    return redirect("members", slug=workspace.slug)


@login_required
@require_POST
def member_remove(request: HttpRequest, slug: str, username: str):
    workspace, roles = workspace_page(request, slug, role=Role.ADMIN)
    user = _member_user(workspace, username)
    try:
        services.remove_member(workspace, user, by=actor(request))
    except ServiceError as exc:
        return _members_page(request, workspace, roles, {f"member:{username}": exc.message},
                             status=exc.status)
    messages.success(request, f"{username} was removed from {workspace.name}; their tokens no "
                              "longer act here.")
    if user == request.user:
        return redirect("home")
    return redirect("members", slug=workspace.slug)


@login_required
@require_POST
def invitation_create(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug, role=Role.ADMIN)
    form = {"email": request.POST.get("email", "").strip(),
            "roles": request.POST.getlist("roles")}
    try:
        invitation, token = invitations.invite(workspace, form["email"], form["roles"],
                                               by=actor(request))
    except ServiceError as exc:
        field = "invite_roles" if exc.field == "roles" else "invite_email"
        return _members_page(request, workspace, roles, {field: exc.message},
                             invite_form=form, status=exc.status)
    url = request.build_absolute_uri(reverse("invitation", args=[token]))
    return _members_page(request, workspace, roles, status=201,
                         invited={"invitation": invitation, "url": url})


@login_required
@require_POST
def invitation_revoke(request: HttpRequest, slug: str, invitation_id: int):
    workspace, roles = workspace_page(request, slug, role=Role.ADMIN)
    invitation = get_object_or_404(Invitation, workspace=workspace, id=invitation_id)
    try:
        invitations.revoke(invitation, by=actor(request))
    except ServiceError as exc:
        return _members_page(request, workspace, roles, {"invitations": exc.message},
                             status=exc.status)
    messages.success(request, f"The invitation of {invitation.email} is revoked: its link no "
                              "longer works.")
    return redirect("members", slug=workspace.slug)


# --- a new workspace -------------------------------------------------------------------------

@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def workspace_new(request: HttpRequest):
    """Staff open a workspace and become its first admin; everyone else gets 403."""
    if not request.user.is_staff:
        raise PermissionDenied("only staff create workspaces")
    form = {"name": request.POST.get("name", "").strip(),
            "slug": request.POST.get("slug", "").strip()}
    errors, status = {}, 200
    if request.method == "POST":
        try:
            workspace = services.open_workspace(form["name"], form["slug"], by=actor(request))
        except ServiceError as exc:
            errors, status = {exc.field or "name": exc.message}, exc.status
        else:
            messages.success(request, f"Workspace {workspace.name} is open at "
                                      f"/w/{workspace.slug}/ and you are its admin: invite "
                                      "its members from the Members page.")
            return redirect("workspace", slug=workspace.slug)
    return render(request, "workspaces/new.html", {
        "form": form, "errors": errors, "role_options": _role_options()}, status=status)


# --- tokens ----------------------------------------------------------------------------------

def _tokens_page(request, workspace, roles, *, created=None, errors=None, form=None,
                 status=200):
    tokens = ApiToken.objects.filter(workspace=workspace).select_related("created_by")
    is_admin = Role.ADMIN in roles
    if not is_admin:
        tokens = tokens.filter(created_by=request.user)
    rows = [{"token": t, "acting_roles": sorted(t.current_roles()),
             "mine": t.created_by_id == request.user.pk}
            for t in tokens.order_by("revoked_at", "-created_at")]
    response = render(request, "workspaces/tokens.html", {
        "workspace": workspace, "roles": roles, "rows": rows, "is_admin": is_admin,
        "role_options": _role_options(allowed=roles), "created": created,
        "errors": errors or {}, "form": form or {"name": "", "roles": []},
    }, status=status)
    if created is not None:
        add_never_cache_headers(response)  # the secret must not outlive this answer
    return response


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def tokens(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug)
    if request.method != "POST":
        return _tokens_page(request, workspace, roles)
    form = {"name": request.POST.get("name", ""), "roles": request.POST.getlist("roles")}
    try:
        token, secret = services.create_token(workspace, form["name"], form["roles"],
                                              by=actor(request))
    except ServiceError as exc:
        return _tokens_page(request, workspace, roles, form=form,
                            errors={exc.field or "name": exc.message}, status=exc.status)
    return _tokens_page(request, workspace, roles, created={"token": token, "secret": secret},
                        status=201)


@login_required
@require_POST
def token_revoke(request: HttpRequest, slug: str, token_id: int):
    workspace, roles = workspace_page(request, slug)
    token = get_object_or_404(ApiToken, workspace=workspace, id=token_id)
    try:
        services.revoke_token(token, by=actor(request))
    except ServiceError as exc:
        return _tokens_page(request, workspace, roles, errors={"general": exc.message},
                            status=exc.status)
    messages.success(request, f"Token {token.name} (cs_{token.prefix}_…) is revoked: it is "
                              "refused from now on.")
    return redirect("tokens", slug=workspace.slug)


# --- webhook secrets -------------------------------------------------------------------------

def _secrets_page(request, workspace, roles, *, created=None, errors=None, form=None,
                  status=200):
    secrets = WebhookSecret.objects.filter(workspace=workspace).order_by("revoked_at",
                                                                         "-created_at", "-id")
    response = render(request, "workspaces/webhook_secrets.html", {
        "workspace": workspace, "roles": roles, "created": created,
        "rows": [{"secret": s, "ending": s.secret[-4:]} for s in secrets],
        "errors": errors or {}, "form": form or {"name": ""},
    }, status=status)
    if created is not None:
        add_never_cache_headers(response)
    return response


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def webhook_secrets(request: HttpRequest, slug: str):
    workspace, roles = workspace_page(request, slug, role=Role.ADMIN)
    if request.method != "POST":
        return _secrets_page(request, workspace, roles)
    form = {"name": request.POST.get("name", "")}
    try:
        secret = services.create_webhook_secret(workspace, form["name"], by=actor(request))
    except ServiceError as exc:
        return _secrets_page(request, workspace, roles, form=form,
                             errors={exc.field or "name": exc.message}, status=exc.status)
    return _secrets_page(request, workspace, roles, created=secret, status=201)


@login_required
@require_POST
def webhook_secret_revoke(request: HttpRequest, slug: str, secret_id: int):
    workspace, _ = workspace_page(request, slug, role=Role.ADMIN)
    secret = get_object_or_404(WebhookSecret, workspace=workspace, id=secret_id)
    services.revoke_webhook_secret(secret, by=actor(request))
    messages.success(request, f"The webhook secret {secret.name} (ending in "
                              f"{secret.secret[-4:]}) is revoked: deliveries signed only with "
                              "it are refused from now on.")
    return redirect("webhook_secrets", slug=workspace.slug)


# --- the LLM endpoint ------------------------------------------------------------------------

def _llm_page(request, workspace, roles, *, errors=None, form=None, status=200):
    endpoint = llm.endpoint_of(workspace)
    if form is None:
        form = {"base_url": endpoint.base_url if endpoint else "",
                "model": endpoint.model if endpoint else "",
                "key_source": endpoint.key_source if endpoint else LLMEndpoint.KeySource.NONE}
    environment = llm.environment_url()
    response = render(request, "workspaces/llm_settings.html", {
        "workspace": workspace, "roles": roles, "endpoint": endpoint,
        "key_ending": llm.key_ending(endpoint) if endpoint else "",
        "environment_url": environment,
        "key_sources": LLMEndpoint.KeySource.choices, "form": form, "errors": errors or {},
    }, status=status)
    add_never_cache_headers(response)
    return response


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def llm_settings(request: HttpRequest, slug: str):
    """Admins set the endpoint the workspace's LLM engine asks; the key is never shown back."""
    workspace, roles = workspace_page(request, slug, role=Role.ADMIN)
    if request.method != "POST":
        return _llm_page(request, workspace, roles)
    form = {"base_url": request.POST.get("base_url", ""), "model": request.POST.get("model", ""),
            "key_source": request.POST.get("key_source", "")}
    try:
        services.set_llm_endpoint(workspace, form["base_url"], form["model"],
                                  form["key_source"], request.POST.get("api_key", ""),
                                  by=actor(request))
    except ServiceError as exc:
        return _llm_page(request, workspace, roles, form=form,
                         errors={exc.field or "general": exc.message}, status=exc.status)
    messages.success(request, f"The LLM engine of {workspace.name} now asks "
                              f"{form['model'].strip()} at {form['base_url'].strip()}.")
    return redirect("llm_settings", slug=workspace.slug)


@login_required
@require_POST
def llm_settings_remove(request: HttpRequest, slug: str):
    workspace, _ = workspace_page(request, slug, role=Role.ADMIN)
    services.remove_llm_endpoint(workspace, by=actor(request))
    messages.success(request, "The workspace's own LLM endpoint is removed (with its key): the "
                              "LLM engine asks the environment's endpoint, if one is set.")
    return redirect("llm_settings", slug=workspace.slug)
