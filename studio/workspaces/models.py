"""Workspaces, who belongs to them in which role, machine tokens and the append-only audit log."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models


class Workspace(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=60, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # A live session with no event for this long is ended (and gets its end verdicts) by beat's
    # sweeper (studio.live.ending.end_idle_sessions); 0: never.
    live_inactivity_minutes = models.PositiveIntegerField(default=30)
    # Events older than this many days are erased by beat's retention sweeper
    # (studio.traces.erasure.apply_retention); null or 0: kept for ever.
    retention_days = models.PositiveIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    AUTHOR = "author", "Rule author"
    REVIEWER = "reviewer", "Reviewer"
    AUDITOR = "auditor", "Auditor"
    # Manages the workspace's people, everyone's tokens and the webhook secrets.
    ADMIN = "admin", "Administrator"


class Membership(models.Model):
    """One role of one user in one workspace; a user may hold several roles."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "user", "role"],
                                               name="one_membership_per_role")]


TOKEN_PREFIX_LENGTH = 8


def hash_token(secret: str) -> str:
    # Tokens are 256 random bits: a fast hash is enough (no dictionary to guess from).
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiToken(models.Model):
    """A machine credential for one workspace.  Only a hash is stored; the token is shown once.

    The token reads ``cs_<prefix>_<secret>``; the prefix finds the row, the hash checks it.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=TOKEN_PREFIX_LENGTH, unique=True)
    digest = models.CharField(max_length=64)
    # The roles the token acts with (a subset of Role values).
    roles = models.JSONField(default=list)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def current_roles(self) -> frozenset[str]:
        """The roles the token acts with now: its own roles that its creator still holds in
        the workspace.  A creator removed from the workspace (or deleted) leaves it none."""
        if self.created_by_id is None:
            return frozenset()
        held = Membership.objects.filter(workspace_id=self.workspace_id,
                                         user_id=self.created_by_id).values_list("role",
                                                                                 flat=True)
        return frozenset(self.roles) & frozenset(held)

    @staticmethod
    def generate() -> tuple[str, str, str]:
        """(token shown to the user, prefix, digest)."""
        prefix = secrets.token_hex(TOKEN_PREFIX_LENGTH // 2)
        secret = secrets.token_urlsafe(32)
        token = f"cs_{prefix}_{secret}"
        return token, prefix, hash_token(token)


class WebhookSecret(models.Model):
    """A Standard Webhooks signing secret; several may be active at once for rotation."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE,
                                  related_name="webhook_secrets")
    # Which sender uses it, so an admin knows whom a rotation or a revocation concerns.
    name = models.CharField(max_length=100)
    secret = models.CharField(max_length=200)  # "whsec_" + base64; needed in clear to verify
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)


INVITATION_DAYS = 7


class Invitation(models.Model):
    """A one-time link that lets a person (with an account or not) join a workspace with the
    roles an admin chose.  Only a hash of the link's token is stored; the link is shown once."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE,
                                  related_name="invitations")
    email = models.EmailField()
    roles = models.JSONField(default=list)
    digest = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    revoked_at = models.DateTimeField(null=True, blank=True)


class AppendOnlyQuerySet(models.QuerySet):
    """Bulk updates and deletes would skip the model's guards: refused here too."""

    def update(self, **kwargs):
        raise ValueError("audit log entries are append-only")

    def delete(self):
        raise ValueError("audit log entries are append-only")

    def _raw_delete(self, using):
        raise ValueError("audit log entries are append-only")


class AuditLogEntry(models.Model):
    """Who did what, when (UTC).  Append-only: rows are never deleted, and changed only to
    redact erased data.

    The model refuses ``save`` on an existing row and ``delete``, its queryset refuses
    ``update`` and ``delete``, and on Postgres a trigger refuses DELETE and every UPDATE but
    one: values of ``details`` replaced by ``"[erased]"``, nothing else changed (migrations 0002
    and 0007, ``studio.workspaces.redaction``), so not even raw SQL rewrites history.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.PROTECT, related_name="log")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                              on_delete=models.PROTECT, related_name="+")
    actor_token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.PROTECT,
                                    related_name="+")
    action = models.CharField(max_length=60)
    target_type = models.CharField(max_length=60, blank=True)
    target_id = models.BigIntegerField(null=True, blank=True)
    details = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["at", "id"]

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ValueError("audit log entries are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError("audit log entries are append-only")


class LLMEndpoint(models.Model):
    """The OpenAI-compatible endpoint a workspace's LLM engine asks (else the environment's,
    the ``LLM_*`` variables).  The API key is kept only as a Fernet token
    (``studio.workspaces.llm``); pages show its last four characters, never the key."""

    class KeySource(models.TextChoices):
        STORED = "stored", "A key stored here, encrypted"
        ENVIRONMENT = "environment", "The environment's key (LLM_API_KEY)"
        NONE = "none", "No key (a local endpoint such as Ollama or vLLM)"

    workspace = models.OneToOneField(Workspace, on_delete=models.CASCADE,
                                     related_name="llm_endpoint")
    base_url = models.CharField(max_length=500)
    model = models.CharField(max_length=200)
    key_source = models.CharField(max_length=20, choices=KeySource.choices,
                                  default=KeySource.NONE)
    encrypted_key = models.TextField(blank=True)   # a Fernet token; "" unless key_source=stored
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    def __str__(self) -> str:
        return f"{self.model} at {self.base_url}"
