"""Workspaces the caller belongs to, machine tokens, webhook secrets and the audit log."""

from datetime import datetime

from django.http import Http404
from django.urls import reverse
from django.shortcuts import get_object_or_404
from ninja import Router, Schema, Status
from pydantic import Field

from studio.boundary import Id, Text
from studio.errors import PermissionDenied

from . import invitations, services
from .acting import actor_of, require_admin, workspace_for
from .models import (ApiToken, AuditLogEntry, Invitation, Membership, WebhookSecret,
                     Workspace)
from .tokens import acting_roles

router = Router(tags=["workspaces"])


class WorkspaceOut(Schema):
    slug: str
    name: str
    roles: list[str]


class WorkspaceSettingsOut(Schema):
    slug: str
    name: str
    # Events older than this many days are erased by beat (null: kept for ever).
    retention_days: int | None
    live_inactivity_minutes: int


class WorkspaceSettingsIn(Schema):
    # null or 0: keep events for ever.
    retention_days: int | None = Field(None, ge=0, le=100_000)


class MemberOut(Schema):
    username: str
    name: str
    roles: list[str]
    since: datetime


class MemberIn(Schema):
    username: Text
    roles: list[Text]


class RolesIn(Schema):
    roles: list[Text]


class TokenIn(Schema):
    name: str
    roles: list[str]


class TokenOut(Schema):
    id: int
    name: str
    prefix: str
    roles: list[str]
    # The roles it acts with now: those of its roles its creator still holds.
    acting_roles: list[str]
    created_by: str | None
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class TokenCreated(TokenOut):
    token: str  # shown once


class InvitationIn(Schema):
    email: Text
    roles: list[Text]


class InvitationOut(Schema):
    id: int
    email: str
    roles: list[str]
    invited_by: str | None
    created_at: datetime
    expires_at: datetime


class InvitationCreated(InvitationOut):
    invite_url: str  # the one-time link, in this answer only


class WebhookSecretIn(Schema):
    name: Text | None = None  # which sender uses it; none: "secret N"


class WebhookSecretListed(Schema):
    id: int
    name: str
    ending: str  # the secret's last characters, to tell secrets apart; the secret is not shown
    created_at: datetime
    revoked_at: datetime | None


class WebhookSecretOut(Schema):
    id: int
    name: str
    secret: str
    created_at: datetime


class LogEntryOut(Schema):
    id: int
    at: datetime
    actor: str | None
    action: str
    target_type: str
    target_id: int | None
    details: dict


def _token_out(token: ApiToken) -> dict:
    return {"id": token.id, "name": token.name, "prefix": token.prefix, "roles": token.roles,
            "acting_roles": sorted(token.current_roles()),
            "created_by": token.created_by.get_username() if token.created_by else None,
            "created_at": token.created_at, "last_used_at": token.last_used_at,
            "revoked_at": token.revoked_at}




@router.get("", response=list[WorkspaceOut], summary="Workspaces the caller belongs to")
def list_workspaces(request):
    actor = actor_of(request)
    if actor.token is not None:
        ws = actor.token.workspace
        return [{"slug": ws.slug, "name": ws.name, "roles": sorted(acting_roles(actor.token))}]
    roles: dict[int, list[str]] = {}
    for m in Membership.objects.filter(user=actor.user).order_by("role"):
        roles.setdefault(m.workspace_id, []).append(m.role)
    return [{"slug": w.slug, "name": w.name, "roles": roles[w.id]}
            for w in Workspace.objects.filter(id__in=roles).order_by("name")]


def _settings_out(workspace: Workspace) -> dict:
    return {"slug": workspace.slug, "name": workspace.name,
            "retention_days": workspace.retention_days or None,
            "live_inactivity_minutes": workspace.live_inactivity_minutes}


@router.get("{slug}", response=WorkspaceSettingsOut, summary="A workspace's settings")
def get_workspace(request, slug: str):
    return _settings_out(workspace_for(request, slug))


@router.patch("{slug}", response=WorkspaceSettingsOut,
              summary="Change a workspace's settings (admins): retention_days, after which "
                      "events are erased (null or 0: kept for ever)")
def update_workspace(request, slug: str, body: WorkspaceSettingsIn):
    workspace = require_admin(request, slug)
    if "retention_days" in body.model_fields_set:
        services.set_retention(workspace, body.retention_days, by=actor_of(request))
    return _settings_out(workspace)


def _people_only(request):
    if actor_of(request).token is not None:
        raise PermissionDenied("tokens are managed by people, not by other tokens")


def _member(workspace: Workspace, username: str):
    """The member named ``username``, or 404."""
    user = services.find_member(workspace, username)
    if user is None:
        raise Http404("no such member")
    return user


@router.get("{slug}/members", response=list[MemberOut],
            summary="The workspace's members and their roles (admins only)")
def list_members(request, slug: str):
    return services.members_of(require_admin(request, slug))


@router.post("{slug}/members", response={201: MemberOut},
             summary="Add an account to the workspace with roles (admins only)")
def add_member(request, slug: str, body: MemberIn):
    workspace = require_admin(request, slug)
    user = services.add_person(workspace, body.username, body.roles, actor_of(request))
    return Status(201, services.member(workspace, user))


@router.put("{slug}/members/{username}", response=MemberOut,
            summary="Replace a member's roles (admins only; the last admin stays admin: 409)")
def change_member(request, slug: str, username: str, body: RolesIn):
    workspace = require_admin(request, slug)
    user = _member(workspace, username)
    services.set_member_roles(workspace, user, body.roles, actor_of(request))
    return services.member(workspace, user)


@router.delete("{slug}/members/{username}", response={204: None},
               summary="Remove a member (admins only; not the last admin: 409); their tokens "
                       "act with nothing from then on")
def remove_member(request, slug: str, username: str):
    workspace = require_admin(request, slug)
    user = _member(workspace, username)
    services.remove_member(workspace, user, actor_of(request))
    return Status(204, None)


def _invitation_out(invitation: Invitation) -> dict:
    return {"id": invitation.id, "email": invitation.email, "roles": invitation.roles,
            "invited_by": (invitation.created_by.get_username() if invitation.created_by
                           else None),
            "created_at": invitation.created_at, "expires_at": invitation.expires_at}


@router.post("{slug}/invitations", response={201: InvitationCreated},
             summary="Invite a person by email with roles (admins only); the answer's "
                     "invite_url works once, for 7 days, and is not shown again")
def create_invitation(request, slug: str, body: InvitationIn):
    workspace = require_admin(request, slug)
    invitation, token = invitations.invite(workspace, body.email, body.roles, actor_of(request))
    url = request.build_absolute_uri(reverse("invitation", args=[token]))
    return Status(201, {**_invitation_out(invitation), "invite_url": url})


@router.get("{slug}/invitations", response=list[InvitationOut],
            summary="Pending invitations, newest first (admins only; not their links)")
def list_invitations(request, slug: str):
    return [_invitation_out(i) for i in invitations.pending(require_admin(request, slug))]


@router.delete("{slug}/invitations/{invitation_id}", response={204: None},
               summary="Revoke an invitation: its link stops working (admins only; 409 once "
                       "accepted)")
def revoke_invitation(request, slug: str, invitation_id: Id):
    workspace = require_admin(request, slug)
    invitation = get_object_or_404(Invitation, workspace=workspace, id=invitation_id)
    invitations.revoke(invitation, actor_of(request))
    return Status(204, None)


@router.get("{slug}/tokens", response=list[TokenOut],
            summary="Tokens: an admin sees everyone's, anyone else their own")
def list_tokens(request, slug: str):
    workspace = workspace_for(request, slug)
    tokens = workspace.tokens.select_related("created_by").order_by("-created_at")
    actor = actor_of(request)
    if "admin" not in actor.roles_in(workspace):
        if actor.user is None:
            raise PermissionDenied("only an admin's token lists the workspace's tokens")
        tokens = tokens.filter(created_by=actor.user)
    return [_token_out(t) for t in tokens]


@router.post("{slug}/tokens", response={201: TokenCreated},
             summary="Create a token; its secret is in this answer only")
def create_token(request, slug: str, body: TokenIn):
    workspace = workspace_for(request, slug)
    _people_only(request)
    token, secret = services.create_token(workspace, body.name, body.roles, actor_of(request))
    return Status(201, {**_token_out(token), "token": secret})


@router.delete("{slug}/tokens/{token_id}", response={204: None})
def revoke_token(request, slug: str, token_id: Id):
    workspace = workspace_for(request, slug)
    token = get_object_or_404(ApiToken, workspace=workspace, id=token_id)
    _people_only(request)  # then 403 unless it is theirs or they are an admin (the service)
    services.revoke_token(token, actor_of(request))
    return Status(204, None)


@router.post("{slug}/webhook-secrets", response={201: WebhookSecretOut},
             summary="A Standard Webhooks signing secret for live ingestion (admins only), "
                     "named after the sender that uses it")
def create_webhook_secret(request, slug: str, body: WebhookSecretIn | None = None):
    workspace = require_admin(request, slug)
    _people_only(request)
    secret = services.create_webhook_secret(workspace, body.name if body else None,
                                            actor_of(request))
    return Status(201, {"id": secret.id, "name": secret.name, "secret": secret.secret,
                        "created_at": secret.created_at})


@router.get("{slug}/webhook-secrets", response=list[WebhookSecretListed],
            summary="The workspace's webhook secrets, newest first (not their values)")
def list_webhook_secrets(request, slug: str):
    workspace = require_admin(request, slug)
    return [{"id": s.id, "name": s.name, "ending": s.secret[-4:], "created_at": s.created_at,
             "revoked_at": s.revoked_at}
            for s in workspace.webhook_secrets.order_by("-created_at", "-id")]


@router.delete("{slug}/webhook-secrets/{secret_id}", response={204: None},
               summary="Revoke a webhook secret (the end of a rotation)")
def revoke_webhook_secret(request, slug: str, secret_id: Id):
    workspace = require_admin(request, slug)
    secret = get_object_or_404(WebhookSecret, workspace=workspace, id=secret_id)
    _people_only(request)
    services.revoke_webhook_secret(secret, actor_of(request))
    return Status(204, None)


@router.get("{slug}/log", response=list[LogEntryOut], summary="The audit log (append-only, UTC)")
def audit_log(request, slug: str, limit: int = 200, before_id: Id | None = None):
    workspace = workspace_for(request, slug)
    entries = AuditLogEntry.objects.filter(workspace=workspace).select_related("actor",
                                                                                "actor_token")
    if before_id is not None:
        entries = entries.filter(id__lt=before_id)
    entries = entries.order_by("-id")[: max(1, min(limit, 1000))]
    return [{"id": e.id, "at": e.at, "action": e.action, "target_type": e.target_type,
             "target_id": e.target_id, "details": e.details,
             "actor": (e.actor.get_username() if e.actor else
                       f"token {e.actor_token.name}" if e.actor_token else None)}
            for e in entries]
