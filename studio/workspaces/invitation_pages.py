"""The page an invitation link opens; no sign-in needed.

A newcomer chooses a username and password and lands signed in in the workspace; someone signed
in already adds the invited roles to their own account.  A link that never was one answers 404,
one used, revoked or expired 410, each with a page that says so.  The link's token is a secret:
the answers are never cached."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.http import HttpRequest
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods

from studio.errors import ServiceError

from . import invitations
from .models import Role

ROLE_LABELS = dict(Role.choices)


def _page(request, template: str, context: dict, status: int):
    response = render(request, template, context, status=status)
    add_never_cache_headers(response)
    return response


def _gone(request, exc: ServiceError):
    return _page(request, "workspaces/invitation_gone.html", {"message": exc.message},
                 exc.status)


def _invitation_page(request, invitation, *, form=None, errors=None, status=200):
    return _page(request, "workspaces/invitation.html", {
        "invitation": invitation,
        "role_labels": [ROLE_LABELS.get(role, role) for role in invitation.roles],
        "form": form or {"username": ""}, "errors": errors or {},
    }, status)


@require_http_methods(["GET", "HEAD", "POST"])
def invitation(request: HttpRequest, token: str):
    try:
        found = invitations.find(token)
    except ServiceError as exc:
        return _gone(request, exc)
    if request.method != "POST":
        return _invitation_page(request, found)
    if request.user.is_authenticated and request.POST.get("as") == "me":
        return _accept_signed_in(request, token)
    return _accept_as_newcomer(request, token, found)


def _accept_signed_in(request, token: str):
    try:
        accepted = invitations.accept(token, request.user)
    except ServiceError as exc:
        return _gone(request, exc)
    messages.success(request, f"You joined {accepted.workspace.name} with the roles "
                              f"{', '.join(accepted.roles)}.")
    return redirect("workspace", slug=accepted.workspace.slug)


def _accept_as_newcomer(request, token: str, found):
    form = {"username": request.POST.get("username", "").strip()}
    password = request.POST.get("password1", "")
    if password != request.POST.get("password2", ""):
        return _invitation_page(request, found, form=form, status=422, errors={
            "password2": "The two passwords differ: type the same password twice."})
    try:
        user = invitations.accept_with_new_account(token, form["username"], password)
    except invitations.InvitationGone as exc:
        return _gone(request, exc)
    except ServiceError as exc:
        return _invitation_page(request, found, form=form, status=exc.status,
                                errors={exc.field or "username": exc.message})
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    messages.success(request, f"Welcome, {user.get_username()}: you joined "
                              f"{found.workspace.name} with the roles "
                              f"{', '.join(found.roles)}.")
    return redirect("workspace", slug=found.workspace.slug)
