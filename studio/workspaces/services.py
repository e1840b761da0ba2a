"""Writes for workspaces: creation, membership, tokens, webhook secrets, the audit log."""

from __future__ import annotations

import base64
import secrets

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from .models import ApiToken, AuditLogEntry, Membership, Role, WebhookSecret, Workspace


def record(workspace: Workspace, actor, action: str, target=None, **details) -> AuditLogEntry:
    """Append to the workspace's audit log.  ``actor`` is an api.core.Actor, a user or None."""
    user = getattr(actor, "user", actor) if actor is not None else None
    token = getattr(actor, "token", None)
    if user is not None and not getattr(user, "is_authenticated", False):
        user = None
    return AuditLogEntry.objects.create(
        workspace=workspace, actor=user, actor_token=token, action=action,
        target_type=type(target).__name__.lower() if target is not None else "",
        target_id=getattr(target, "pk", None), details=details)


@transaction.atomic
def create_workspace(name: str, owner=None, slug: str | None = None,
                     roles=(Role.AUTHOR, Role.REVIEWER, Role.AUDITOR)) -> Workspace:
    workspace = Workspace.objects.create(name=name, slug=slug or slugify(name)[:60])
    if owner is not None:
        for role in roles:
            Membership.objects.create(workspace=workspace, user=owner, role=role)
    record(workspace, owner, "workspace.created", workspace, name=name)
    return workspace


@transaction.atomic
def add_member(workspace: Workspace, user, role: str, by=None) -> Membership:
    membership, _ = Membership.objects.get_or_create(workspace=workspace, user=user, role=role)
    record(workspace, by, "member.added", membership, user=user.get_username(), role=role)
    return membership


@transaction.atomic
def create_token(workspace: Workspace, name: str, roles: list[str],
                 by=None) -> tuple[ApiToken, str]:
    """A new token and its secret, which is never stored and cannot be shown again."""
    unknown = sorted(set(roles) - set(Role.values))
    if unknown:
        from studio.api.core import ServiceError

        raise ServiceError(f"unknown roles: {', '.join(unknown)}; roles are "
                           f"{', '.join(Role.values)}", field="roles")
    user = getattr(by, "user", by)
    if getattr(user, "pk", None):
        # Separation of duties: a token acts with its own roles, so a person may only pass on
        # roles they hold here (an author minting a reviewer's token could approve with it).
        held = set(Membership.objects.filter(workspace=workspace, user=user)
                   .values_list("role", flat=True))
        lacking = sorted(set(roles) - held)
        if lacking:
            from studio.api.core import PermissionDenied

            raise PermissionDenied(f"a token can only have roles you hold in workspace "
                                   f"{workspace.slug!r}; you do not hold {', '.join(lacking)}")
    secret, prefix, digest = ApiToken.generate()
    token = ApiToken.objects.create(workspace=workspace, name=name, prefix=prefix, digest=digest,
                                    roles=sorted(set(roles)),
                                    created_by=user if getattr(user, "pk", None) else None)
    record(workspace, by, "token.created", token, name=name, roles=token.roles)
    return token, secret


@transaction.atomic
def revoke_token(token: ApiToken, by=None) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        record(token.workspace, by, "token.revoked", token, name=token.name)
        from studio.api.core import forget_cached_tokens  # the API imports this module

        forget_cached_tokens()


@transaction.atomic
def create_webhook_secret(workspace: Workspace, by=None) -> WebhookSecret:
    value = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    secret = WebhookSecret.objects.create(workspace=workspace, secret=value)
    record(workspace, by, "webhook_secret.created", secret)
    return secret


@transaction.atomic
def revoke_webhook_secret(secret: WebhookSecret, by=None) -> None:
    """The end of a rotation: deliveries signed only with this secret get 401 from now on."""
    if secret.revoked_at is None:
        secret.revoked_at = timezone.now()
        secret.save(update_fields=["revoked_at"])
        record(secret.workspace, by, "webhook_secret.revoked", secret)


def create_user(username: str, password: str | None = None, **extra):
    return get_user_model().objects.create_user(username=username, password=password, **extra)
