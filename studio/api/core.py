"""What every API router shares: who is calling, which workspace, and one error shape.

A caller is a person (Django session; unsafe methods need the CSRF token) or a machine (a bearer
token of one workspace).  Every workspace route resolves its workspace through
``workspace_for``, which answers 404 - not 403 - to anyone outside it, so the API never confirms
that another workspace's objects exist.
"""

from __future__ import annotations

import hmac
import math
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Annotated, Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404, HttpRequest
from django.utils import timezone
from ninja.errors import HttpError
from ninja.security import HttpBearer, SessionAuth
from ninja.utils import check_csrf
from pydantic import AfterValidator, Field

from studio.workspaces.models import (
    TOKEN_PREFIX_LENGTH,
    ApiToken,
    Membership,
    Workspace,
    hash_token,
)


class ServiceError(Exception):
    """A request the domain refuses: a clear message, a status, optionally the field at fault
    and structured ``details`` (answered as ``{"detail", "field", "details"}``)."""

    status = 400

    def __init__(self, message: str, *, field: str | None = None, status: int | None = None,
                 details: dict | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details
        if status is not None:
            self.status = status


class PermissionDenied(ServiceError):
    status = 403


class Conflict(ServiceError):
    status = 409


@dataclass
class Actor:
    user: AbstractBaseUser | None = None
    token: ApiToken | None = None
    roles_by_workspace: dict[int, set[str]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        if self.user is not None:
            return self.user.get_username()
        return f"token {self.token.name}" if self.token else "anonymous"

    def roles_in(self, workspace: Workspace) -> set[str] | None:
        """The actor's roles in the workspace, or None when it is not a member at all."""
        if self.token is not None:
            return set(acting_roles(self.token)) if self.token.workspace_id == workspace.id \
                else None
        if workspace.id not in self.roles_by_workspace:
            roles = set(Membership.objects.filter(workspace=workspace, user=self.user)
                        .values_list("role", flat=True))
            self.roles_by_workspace[workspace.id] = roles
        roles = self.roles_by_workspace[workspace.id]
        return roles if roles else None


def acting_roles(token: ApiToken) -> frozenset[str]:
    """The roles a token acts with: its roles that its creator holds now (``find_token``
    reads them with the token, so they are as fresh as the token cache)."""
    roles = getattr(token, "acting_roles", None)
    if roles is None:
        roles = token.acting_roles = token.current_roles()
    return roles


_PREFIX = re.compile(f"[0-9a-f]{{{TOKEN_PREFIX_LENGTH}}}")


# Verified tokens, by the hash of the presented secret, for settings.TOKEN_CACHE_SECONDS: the
# lookup was a millisecond or two of ORM work on every webhook delivery.  Each entry keeps the
# roles the token acts with (its creator's current roles among its own), read with it.  Revoking
# a token or changing a membership clears this process's entries at once; other server
# processes honour the change within the TTL.
_TOKEN_CACHE: OrderedDict[str, tuple[float, ApiToken]] = OrderedDict()
_TOKEN_CACHE_LOCK = threading.Lock()
_TOKEN_CACHE_MAX = 1000


def forget_cached_tokens() -> None:
    with _TOKEN_CACHE_LOCK:
        _TOKEN_CACHE.clear()


def find_token(raw: str) -> ApiToken | None:
    """The live token for a presented secret, or None.  Constant-time comparison of hashes."""
    parts = raw.split("_")
    if len(parts) < 3 or parts[0] != "cs" or not _PREFIX.fullmatch(parts[1]):
        return None  # not one of ours: no query (and no odd bytes sent to the database)
    digest = hash_token(raw)
    ttl = settings.TOKEN_CACHE_SECONDS
    with _TOKEN_CACHE_LOCK:
        cached = _TOKEN_CACHE.get(digest)
    if cached is not None and cached[0] > time.monotonic():
        token = cached[1]
    else:
        token = (ApiToken.objects.select_related("workspace")
                 .filter(prefix=parts[1], revoked_at__isnull=True).first())
        if token is None or not hmac.compare_digest(token.digest, digest):
            return None
        token.acting_roles = token.current_roles()
        if ttl > 0:
            with _TOKEN_CACHE_LOCK:
                _TOKEN_CACHE[digest] = (time.monotonic() + ttl, token)
                while len(_TOKEN_CACHE) > _TOKEN_CACHE_MAX:
                    _TOKEN_CACHE.popitem(last=False)
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        token.last_used_at = now
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)  # throttled write
    return token


class TokenAuth(HttpBearer):
    openapi_scheme = "bearer"

    def authenticate(self, request: HttpRequest, token: str):
        found = find_token(token)
        return Actor(token=found) if found is not None else None


class PersonAuth(SessionAuth):
    """A signed-in person; unsafe methods need the CSRF token (403 without it).

    Someone with no session is simply not authenticated (401), whatever the method: the CSRF
    check protects a session, and there is none to protect.
    """

    def _get_key(self, request: HttpRequest):
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        exempt = getattr(request, "_ninja_csrf_exempt", False)
        if self.csrf and not exempt and check_csrf(request):
            raise HttpError(403, "CSRF check failed: send the csrftoken cookie's value in the "
                                 "X-CSRFToken header")
        return request.COOKIES.get(self.param_name)

    def authenticate(self, request: HttpRequest, key):
        user = super().authenticate(request, key)
        return Actor(user=user) if user else None


AUTH = [TokenAuth(), PersonAuth()]


def actor_of(request: HttpRequest) -> Actor:
    return request.auth  # set by the auth classes above


def workspace_for(request: HttpRequest, slug: str, role: str | None = None) -> Workspace:
    """The workspace named by ``slug`` if the caller belongs to it, else 404; with ``role``,
    403 when a member lacks that role."""
    actor = actor_of(request)
    if not slug or "\x00" in slug:
        raise Http404("no such workspace")
    workspace = Workspace.objects.filter(slug=slug).first()
    if workspace is None:
        raise Http404("no such workspace")
    roles = actor.roles_in(workspace)
    if roles is None:
        raise Http404("no such workspace")
    if not roles:
        raise PermissionDenied(no_roles_message(actor.token))
    if role is not None and role not in roles:
        raise PermissionDenied(f"this needs the {role} role in workspace {slug!r}")
    return workspace


def no_roles_message(token: ApiToken | None) -> str:
    name = f"token {token.name!r}" if token is not None else "this caller"
    return (f"{name} acts with no roles: a token acts only with the roles its creator still "
            "holds in the workspace; create a new one with roles you hold")


def require_admin(request: HttpRequest, slug: str) -> Workspace:
    """``workspace_for`` for the routes that manage people, others' tokens and webhook
    secrets: admins only (403 to other members, 404 to outsiders)."""
    return workspace_for(request, slug, role="admin")


# Text that reaches the database: Postgres refuses NUL characters in text and JSON, so input
# schemas refuse them first (422 naming the field, rather than a database error).

def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


Text = Annotated[str, AfterValidator(_no_nul)]

# Ids in paths and bodies: a database key is a positive 64-bit integer, and SQLite raises
# OverflowError (a 500) on a larger one in a foreign-key or ``in`` lookup.  Out of range is 422.
MAX_ID = 2**63 - 1
Id = Annotated[int, Field(ge=1, le=MAX_ID)]


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins real pairs into one character


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored (NUL: Postgres refuses it; a lone surrogate has no UTF-8
    form), or None."""
    if "\x00" in text:
        return "must not contain NUL characters (\\u0000)"
    if not text.isascii() and _LONE_SURROGATE.search(text):
        return ("must not contain a lone surrogate (such as \\ud800: half of a UTF-16 pair, "
                "which no UTF-8 text can hold)")
    return None


def check_json(value: Any, where: str) -> None:
    """Refuse JSON a database column cannot hold: NUL characters, lone surrogates, non-finite
    numbers.  Raises ServiceError (422) naming the place, e.g. ``config.path``.  (Request
    bodies are checked at the boundary, studio.api.boundary; this is for JSON a service reads
    out of form text.)"""
    if isinstance(value, str):
        problem = text_problem(value)
        if problem is not None:
            raise ServiceError(problem, field=where, status=422)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ServiceError("must be a finite number", field=where, status=422)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_json(key, where)
            check_json(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_json(item, f"{where}[{index}]")
