"""Writes for workspaces: creation, membership, tokens, webhook secrets, the LLM endpoint, the
audit log."""

from __future__ import annotations

import base64
import secrets

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from studio.errors import Conflict, PermissionDenied, ServiceError
from studio.labeling.llm import LLMConfig, LLMError

from . import llm
from .acting import acting_token, acting_user
from .actions import LogAction
from .models import (ApiToken, AuditLogEntry, LLMEndpoint, Membership, Role, WebhookSecret,
                     Workspace)
from .tokens import forget_cached_tokens

_LOG_ACTIONS = frozenset(LogAction.values)


def record(workspace: Workspace, actor, action: LogAction, target=None,
           **details) -> AuditLogEntry:
    """Append to the workspace's audit log.  ``actor`` is an ``acting.Actor``, a user or None;
    a token's entry names the token, not its creator.  ``action`` is one of ``LogAction``:
    anything else is refused (ValueError), so the log holds no action nobody declared."""
    if action not in _LOG_ACTIONS:
        raise ValueError(f"unknown audit-log action {action!r}: declare it in "
                         "studio.workspaces.actions.LogAction first")
    user, token = acting_user(actor, through_token=False), acting_token(actor)
    return AuditLogEntry.objects.create(
        workspace=workspace, actor=user, actor_token=token, action=LogAction(action).value,
        target_type=type(target).__name__.lower() if target is not None else "",
        target_id=getattr(target, "pk", None), details=details)


@transaction.atomic
def create_workspace(name: str, owner=None, slug: str | None = None,
                     roles=(Role.AUTHOR, Role.REVIEWER, Role.AUDITOR, Role.ADMIN)) -> Workspace:
    workspace = Workspace.objects.create(name=name, slug=slug or slugify(name)[:60])
    if owner is not None:
        for role in roles:
            Membership.objects.create(workspace=workspace, user=owner, role=role)
    record(workspace, owner, LogAction.WORKSPACE_CREATED, workspace, name=name)
    return workspace


SLUG_LENGTH = Workspace._meta.get_field("slug").max_length


@transaction.atomic
def open_workspace(name: str, slug: str, by) -> Workspace:
    """A workspace created by a staff member, who becomes its first admin (with every role, as
    ``manage.py create_workspace`` gives).  422 on a bad name or slug, 409 on a taken slug."""
    user = acting_user(by, through_token=False)
    if user is None or not user.is_staff:
        raise PermissionDenied("only staff create workspaces")
    name, slug = name.strip(), (slug.strip() or slugify(name)[:SLUG_LENGTH])
    if not name or len(name) > Workspace._meta.get_field("name").max_length:
        raise ServiceError("give the workspace a name of 1 to 200 characters", field="name",
                           status=422)
    if not slug or slug != slugify(slug) or len(slug) > SLUG_LENGTH:
        example = slugify(name)[:SLUG_LENGTH] or "payments"
        raise ServiceError(f"the address may hold lower-case letters, digits and hyphens (at "
                           f"most {SLUG_LENGTH}), for example {example}", field="slug",
                           status=422)
    if Workspace.objects.filter(slug=slug).exists():
        raise Conflict(f"the address /w/{slug}/ is taken: choose another", field="slug")
    return create_workspace(name, owner=user, slug=slug,
                            roles=(Role.ADMIN, Role.AUTHOR, Role.REVIEWER, Role.AUDITOR))


@transaction.atomic
def set_retention(workspace: Workspace, days: int | None, by=None) -> Workspace:
    """Keep events ``days`` days (None or 0: for ever); beat erases older ones
    (studio.traces.erasure.apply_retention)."""
    days = days or None
    before = workspace.retention_days or None
    if days != before:
        workspace.retention_days = days
        workspace.save(update_fields=["retention_days"])
        record(workspace, by, LogAction.WORKSPACE_RETENTION_CHANGED, workspace, before=before,
               after=days)
    return workspace


@transaction.atomic
def add_member(workspace: Workspace, user, role: str, by=None) -> Membership:
    membership, created = Membership.objects.get_or_create(workspace=workspace, user=user,
                                                           role=role)
    if created:
        record(workspace, by, LogAction.MEMBER_ADDED, membership, user=user.get_username(),
               role=role)
        _forget_tokens_on_commit()
    return membership


def roles_of(workspace: Workspace, user) -> set[str]:
    if not getattr(user, "pk", None):
        return set()
    return set(Membership.objects.filter(workspace=workspace, user=user)
               .values_list("role", flat=True))


def _member_out(user, memberships: list[Membership]) -> dict:
    return {"username": user.get_username(), "name": user.get_full_name(),
            "roles": sorted(m.role for m in memberships),
            "since": min(m.created_at for m in memberships)}


def members_of(workspace: Workspace) -> list[dict]:
    """Each member once: username, name, roles, since when."""
    by_user: dict[int, list[Membership]] = {}
    users = {}
    for m in Membership.objects.filter(workspace=workspace).select_related("user"):
        by_user.setdefault(m.user_id, []).append(m)
        users[m.user_id] = m.user
    return sorted((_member_out(users[uid], ms) for uid, ms in by_user.items()),
                  key=lambda member: member["username"])


def member(workspace: Workspace, user) -> dict:
    return _member_out(user, list(Membership.objects.filter(workspace=workspace, user=user)))


def checked_roles(roles) -> list[str]:
    """``roles`` sorted without repeats; 422 when one is unknown or none is given."""
    roles = sorted(set(roles))
    unknown = [r for r in roles if r not in Role.values]
    if unknown:
        raise ServiceError(f"unknown roles: {', '.join(unknown)}; roles are "
                           f"{', '.join(Role.values)}", field="roles", status=422)
    if not roles:
        raise ServiceError("choose at least one role (to take every role away, remove the "
                           "member)", field="roles", status=422)
    return roles


def _forget_tokens_on_commit() -> None:
    # A token acts with its creator's current roles, which the token cache keeps: this process
    # forgets them once the change is committed (other processes within TOKEN_CACHE_SECONDS).
    transaction.on_commit(forget_cached_tokens)


def _keep_an_admin(workspace: Workspace, user, after: set[str]) -> None:
    """409 when the change would leave the workspace without an admin."""
    if Role.ADMIN in after:
        return
    # Locked: two admins demoting each other at once must not both succeed.
    admins = set(Membership.objects.select_for_update().filter(
        workspace=workspace, role=Role.ADMIN).values_list("user_id", flat=True))
    if admins == {user.pk}:
        raise Conflict(f"{user.get_username()} is the last admin of workspace "
                       f"{workspace.slug!r}: make someone else an admin first", field="roles")


def find_member(workspace: Workspace, username: str):
    """The member of ``workspace`` named ``username``, or None (an account elsewhere too)."""
    membership = (Membership.objects.select_related("user")
                  .filter(workspace=workspace, user__username=username).first())
    return membership.user if membership is not None else None


def find_user(username: str):
    user = get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: username}).first()
    if user is None:
        raise ServiceError(f"there is no account named {username!r}; accounts are created by "
                           "the studio's operator (manage.py createsuperuser or the admin site)",
                           field="username", status=422)
    return user


@transaction.atomic
def add_person(workspace: Workspace, username: str, roles, by=None):
    """Add an account to the workspace with ``roles``; 409 if it is a member already."""
    user = find_user(username)
    roles = checked_roles(roles)
    if roles_of(workspace, user):
        raise Conflict(f"{username} is already a member of workspace {workspace.slug!r}; "
                       "change their roles instead", field="username")
    for role in roles:
        Membership.objects.create(workspace=workspace, user=user, role=role)
    record(workspace, by, LogAction.MEMBER_ADDED, user, user=username, roles=roles)
    _forget_tokens_on_commit()
    return user


@transaction.atomic
def set_member_roles(workspace: Workspace, user, roles, by=None) -> list[str]:
    """Give a member exactly ``roles``; the last admin keeps the admin role (409)."""
    roles = checked_roles(roles)
    before = roles_of(workspace, user)
    _keep_an_admin(workspace, user, set(roles))
    Membership.objects.filter(workspace=workspace, user=user).exclude(role__in=roles).delete()
    for role in set(roles) - before:
        Membership.objects.create(workspace=workspace, user=user, role=role)
    if set(roles) != before:
        record(workspace, by, LogAction.MEMBER_ROLES_CHANGED, user, user=user.get_username(),
               before=sorted(before), after=roles)
        _forget_tokens_on_commit()
    return roles


@transaction.atomic
def remove_member(workspace: Workspace, user, by=None) -> None:
    """Take every role away; the member's tokens act with nothing from now on (their roles
    are checked against the creator's current ones).  The last admin cannot go (409)."""
    before = roles_of(workspace, user)
    _keep_an_admin(workspace, user, set())
    Membership.objects.filter(workspace=workspace, user=user).delete()
    record(workspace, by, LogAction.MEMBER_REMOVED, user, user=user.get_username(),
           roles=sorted(before))
    _forget_tokens_on_commit()


def may_manage_token(token: ApiToken, by) -> bool:
    """Admins manage every token of their workspace; anyone else only the tokens they made."""
    user = acting_user(by, through_token=False)
    if user is None:
        return False
    return token.created_by_id == user.pk or Role.ADMIN in roles_of(token.workspace, user)


@transaction.atomic
def create_token(workspace: Workspace, name: str, roles: list[str],
                 by=None) -> tuple[ApiToken, str]:
    """A new token and its secret, which is never stored and cannot be shown again."""
    unknown = sorted(set(roles) - set(Role.values))
    if unknown:
        raise ServiceError(f"unknown roles: {', '.join(unknown)}; roles are "
                           f"{', '.join(Role.values)}", field="roles")
    name = name.strip()
    if not name or len(name) > ApiToken._meta.get_field("name").max_length:
        raise ServiceError("give the token a name of 1 to 100 characters (what uses it)",
                           field="name", status=422)
    if not roles:
        raise ServiceError("a token without roles could do nothing: choose at least one role",
                           field="roles", status=422)
    user = acting_user(by, through_token=False)
    if user is None:
        # A token acts with the roles its creator holds now: without a creator it would act
        # with none.
        raise PermissionDenied("tokens are created by a signed-in person")
    # Separation of duties: a person may only pass on roles they hold here (an author minting
    # a reviewer's token could approve with it).
    lacking = sorted(set(roles) - roles_of(workspace, user))
    if lacking:
        raise PermissionDenied(f"a token can only have roles you hold in workspace "
                               f"{workspace.slug!r}; you do not hold {', '.join(lacking)}")
    secret, prefix, digest = ApiToken.generate()
    token = ApiToken.objects.create(workspace=workspace, name=name, prefix=prefix, digest=digest,
                                    roles=sorted(set(roles)), created_by=user)
    record(workspace, by, LogAction.TOKEN_CREATED, token, name=name, roles=token.roles)
    return token, secret


@transaction.atomic
def revoke_token(token: ApiToken, by=None) -> None:
    """Revoke; a person revokes their own tokens, an admin anyone's (403 otherwise)."""
    if by is not None and not may_manage_token(token, by):
        raise PermissionDenied("only an admin of the workspace revokes other people's tokens")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        record(token.workspace, by, LogAction.TOKEN_REVOKED, token, name=token.name)
        forget_cached_tokens()


@transaction.atomic
def create_webhook_secret(workspace: Workspace, name: str | None, by=None) -> WebhookSecret:
    """A new signing secret; ``name`` says which sender uses it (1 to 100 characters).  None
    (an API caller of the release before names) numbers it like the migration named the old
    ones: "secret 3"."""
    if name is None:
        name = f"secret {workspace.webhook_secrets.count() + 1}"
    name = name.strip()
    if not name or len(name) > WebhookSecret._meta.get_field("name").max_length:
        raise ServiceError("name the secret after the sender that uses it (1 to 100 "
                           "characters), for example \"payments agent\"", field="name",
                           status=422)
    value = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    secret = WebhookSecret.objects.create(workspace=workspace, name=name, secret=value)
    record(workspace, by, LogAction.WEBHOOK_SECRET_CREATED, secret, name=name)
    return secret


@transaction.atomic
def revoke_webhook_secret(secret: WebhookSecret, by=None) -> None:
    """The end of a rotation: deliveries signed only with this secret get 401 from now on."""
    if secret.revoked_at is None:
        secret.revoked_at = timezone.now()
        secret.save(update_fields=["revoked_at"])
        record(secret.workspace, by, LogAction.WEBHOOK_SECRET_REVOKED, secret, name=secret.name)


@transaction.atomic
def set_llm_endpoint(workspace: Workspace, base_url: str, model: str, key_source: str,
                     api_key: str = "", by=None) -> LLMEndpoint:
    """The workspace's LLM engine asks ``model`` at ``base_url`` from now on.  ``key_source``:
    ``stored`` (``api_key``, kept encrypted; blank keeps the key stored before),
    ``environment`` (LLM_API_KEY, for the environment's own endpoint only) or ``none``.
    The audit log records the change, never the key."""
    base_url, model, api_key = base_url.strip(), model.strip(), api_key.strip()
    try:
        LLMConfig(base_url=base_url, model=model)
    except LLMError:
        raise ServiceError("enter the endpoint's API root as an http:// or https:// URL, for "
                           "example http://127.0.0.1:11434/v1 (/chat/completions is added)",
                           field="base_url", status=422) from None
    if len(base_url) > LLMEndpoint._meta.get_field("base_url").max_length:
        raise ServiceError("the URL is too long", field="base_url", status=422)
    if not model or len(model) > LLMEndpoint._meta.get_field("model").max_length:
        raise ServiceError("name the model to ask (1 to 200 characters), for example "
                           "llama3.1:8b or gpt-4o-mini", field="model", status=422)
    if key_source not in LLMEndpoint.KeySource.values:
        raise ServiceError(f"choose where the API key comes from: "
                           f"{', '.join(LLMEndpoint.KeySource.values)}", field="key_source",
                           status=422)
    if (key_source == LLMEndpoint.KeySource.ENVIRONMENT
            and not llm.same_url(base_url, llm.environment_url())):
        raise ServiceError("the environment's key is only sent to the environment's endpoint "
                           "(LLM_BASE_URL): enter a key for this endpoint instead",
                           field="key_source", status=422)
    endpoint = (LLMEndpoint.objects.select_for_update().filter(workspace=workspace).first()
                or LLMEndpoint(workspace=workspace))
    before = None if endpoint.pk is None else {
        "base_url": endpoint.base_url, "model": endpoint.model,
        "key_source": endpoint.key_source}
    key_changed = False
    if key_source == LLMEndpoint.KeySource.STORED:
        if api_key:
            endpoint.encrypted_key = llm.encrypt_key(api_key)
            key_changed = True
        elif not (endpoint.key_source == LLMEndpoint.KeySource.STORED
                  and endpoint.encrypted_key):
            raise ServiceError("enter the API key to store", field="api_key", status=422)
    else:
        key_changed = bool(endpoint.encrypted_key)
        endpoint.encrypted_key = ""
    after = {"base_url": base_url, "model": model, "key_source": key_source}
    if before == after and not key_changed:
        return endpoint
    endpoint.base_url, endpoint.model, endpoint.key_source = base_url, model, key_source
    endpoint.updated_by = acting_user(by)
    endpoint.save()
    record(workspace, by, LogAction.LLM_ENDPOINT_SET, endpoint, before=before, after=after,
           key_changed=key_changed)
    return endpoint


@transaction.atomic
def remove_llm_endpoint(workspace: Workspace, by=None) -> None:
    """Back to the environment's endpoint; the stored key is deleted with the row."""
    endpoint = LLMEndpoint.objects.select_for_update().filter(workspace=workspace).first()
    if endpoint is None:
        return
    before = {"base_url": endpoint.base_url, "model": endpoint.model,
              "key_source": endpoint.key_source}
    record(workspace, by, LogAction.LLM_ENDPOINT_REMOVED, endpoint, before=before)
    endpoint.delete()


def create_user(username: str, password: str | None = None, **extra):
    return get_user_model().objects.create_user(username=username, password=password, **extra)
