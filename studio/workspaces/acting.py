"""Who acts, and in which workspace: the one answer to "which person is behind this request,
token or actor", and the API's callers.

A caller is a person (Django session; unsafe methods need the CSRF token) or a machine (a bearer
token of one workspace): the API's auth classes put an ``Actor`` on ``request.auth``.  Every
workspace route resolves its workspace through ``workspace_for``, which answers 404 - not 403 -
to anyone outside it, so the API never confirms that another workspace's objects exist.

Services take an ``actor`` that may be an ``Actor``, a bare user, an ``ApiToken``, a request, or
None, and ask ``acting_user`` and ``acting_token`` who it is.  This lives beside the
``ApiToken`` model so every app may import it without reaching up into the API's composition
root (``studio.api.urls``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404, HttpRequest
from ninja.errors import HttpError
from ninja.security import HttpBearer, SessionAuth
from ninja.utils import check_csrf

from studio.boundary import text_problem
from studio.errors import PermissionDenied

from .models import ApiToken, Membership, Workspace
from .tokens import acting_roles, find_token


@dataclass
class Actor:
    """An API caller: a signed-in person or a token (``acting_user`` says whom it acts for)."""

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


def _unwrap_request(actor):
    # The API's auth classes put the Actor on ``request.auth``; pages only have ``request.user``.
    if isinstance(actor, HttpRequest):
        auth = getattr(actor, "auth", None)
        return auth if auth is not None else getattr(actor, "user", None)
    return actor


def acting_token(actor) -> ApiToken | None:
    """The token ``actor`` acts through, or None when a person acts directly."""
    actor = _unwrap_request(actor)
    if isinstance(actor, ApiToken):
        return actor
    token = getattr(actor, "token", None)
    return token if isinstance(token, ApiToken) else None


def acting_user(actor, *, through_token: bool = True):
    """The signed-in user acting for ``actor``, or None.

    A token acts for the person who made it, so it answers its creator (None once the creator is
    deleted).  With ``through_token=False`` a token answers None: for what only a person signed
    in may do (create tokens) and for the audit log, which names the token itself.  Anonymous
    and unsaved users answer None.
    """
    actor = _unwrap_request(actor)
    token = acting_token(actor)
    if isinstance(actor, ApiToken):
        user = None
    else:
        user = getattr(actor, "user", actor) if actor is not None else None
    if user is None and token is not None and through_token:
        user = token.created_by
    if user is None or not getattr(user, "is_authenticated", False) or user.pk is None:
        return None
    return user


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
    if not slug or text_problem(slug) is not None:  # names nothing; Postgres would refuse it
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
