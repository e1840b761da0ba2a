"""Invitations: an admin invites a person by email with roles; the one-time link lets them join.

The link carries 256 random bits; only their hash is stored, so the database cannot give a link
back (the admin copies it once, from the answer that created it).  A link works once, for
``INVITATION_DAYS`` days, until an admin revokes it.  Whoever opens it either chooses a username
and password (a new account) or, signed in already, adds the roles to their own account.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from studio.errors import Conflict, ServiceError

from .acting import acting_user
from .actions import LogAction
from .models import INVITATION_DAYS, Invitation, Membership, Workspace, hash_token
from .services import checked_roles, record
from .tokens import forget_cached_tokens


class InvitationGone(ServiceError):
    """The link was real but no longer works (used, revoked or expired)."""

    status = 410


def state(invitation: Invitation, now=None) -> str:
    """``pending``, ``accepted``, ``revoked`` or ``expired``."""
    if invitation.accepted_at is not None:
        return "accepted"
    if invitation.revoked_at is not None:
        return "revoked"
    if invitation.expires_at <= (now or timezone.now()):
        return "expired"
    return "pending"


def pending(workspace: Workspace):
    return (Invitation.objects.filter(workspace=workspace, accepted_at=None, revoked_at=None,
                                      expires_at__gt=timezone.now())
            .select_related("created_by").order_by("-created_at", "-id"))


@transaction.atomic
def invite(workspace: Workspace, email: str, roles, by) -> tuple[Invitation, str]:
    """A new invitation and its token (put it in the link; it is never stored)."""
    email = (email or "").strip()
    try:
        validate_email(email)
    except ValidationError:
        raise ServiceError("enter the person's email address, such as sam@example.com",
                           field="email", status=422) from None
    roles = checked_roles(roles)
    token = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        workspace=workspace, email=email, roles=roles, digest=hash_token(token),
        created_by=acting_user(by), expires_at=timezone.now() + timedelta(days=INVITATION_DAYS))
    record(workspace, by, LogAction.INVITATION_CREATED, invitation, email=email, roles=roles)
    return invitation, token


@transaction.atomic
def revoke(invitation: Invitation, by) -> None:
    """The link stops working; revoking twice changes nothing, an accepted one cannot be (409)."""
    if invitation.accepted_at is not None:
        raise Conflict(f"the invitation of {invitation.email} was accepted already: change or "
                       "remove the member instead")
    if invitation.revoked_at is None:
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
        record(invitation.workspace, by, LogAction.INVITATION_REVOKED, invitation,
               email=invitation.email, roles=invitation.roles)


def find(token: str, *, lock: bool = False) -> Invitation:
    """The invitation the link's token opens: 404 for a token that never was one, 410 when
    it was used, revoked or has expired."""
    found = Invitation.objects.select_related("workspace", "created_by")
    if lock:
        found = found.select_for_update(of=("self",))
    invitation = found.filter(digest=hash_token(token or "")).first()
    if invitation is None:
        raise ServiceError("this invitation link is not valid: check that it was copied whole",
                           status=404)
    why = {"accepted": "it was used already (each link works once)",
           "revoked": "an admin of the workspace withdrew it",
           "expired": f"it expired (links work for {INVITATION_DAYS} days)"}.get(state(invitation))
    if why is not None:
        raise InvitationGone(f"This invitation no longer works: {why}. Ask an admin of "
                             f"{invitation.workspace.name} for a new one.",
                             details={"state": state(invitation)})
    return invitation


@transaction.atomic
def accept(token: str, user) -> Invitation:
    """``user`` (signed in, or just created) joins with the invitation's roles, added to any
    they hold there; the link is used up."""
    invitation = find(token, lock=True)
    held = set(Membership.objects.filter(workspace=invitation.workspace, user=user)
               .values_list("role", flat=True))
    for role in sorted(set(invitation.roles) - held):
        Membership.objects.create(workspace=invitation.workspace, user=user, role=role)
    invitation.accepted_at, invitation.accepted_by = timezone.now(), user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    record(invitation.workspace, user, LogAction.INVITATION_ACCEPTED, invitation,
           email=invitation.email, roles=invitation.roles, user=user.get_username())
    # Tokens act with their creator's roles, which the token cache keeps.
    transaction.on_commit(forget_cached_tokens)
    return invitation


@transaction.atomic
def accept_with_new_account(token: str, username: str, password: str):
    """Create the account (Django's password validators decide what is strong enough) and
    accept with it; nothing is created when the link no longer works."""
    invitation = find(token, lock=True)
    users = get_user_model()
    username = (username or "").strip()
    max_length = users._meta.get_field(users.USERNAME_FIELD).max_length
    if not username or len(username) > max_length:
        raise ServiceError(f"choose a username of 1 to {max_length} characters",
                           field="username", status=422)
    try:
        users.username_validator(username)
    except ValidationError:
        raise ServiceError("a username may hold letters, digits and @ . + - _ only",
                           field="username", status=422) from None
    if users.objects.filter(**{f"{users.USERNAME_FIELD}__iexact": username}).exists():
        raise Conflict(f"the username {username!r} is taken: choose another (or, if it is "
                       "yours, sign in first and open the link again)", field="username")
    try:
        validate_password(password, users(username=username, email=invitation.email))
    except ValidationError as exc:
        raise ServiceError(" ".join(exc.messages), field="password", status=422) from None
    user = users.objects.create_user(username=username, email=invitation.email,
                                     password=password)
    accept(token, user)
    return user
