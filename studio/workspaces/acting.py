"""Who acts: the one answer to "which person is behind this request, token or actor".

Services take an ``actor`` that may be an ``api.core.Actor`` (a signed-in person or a machine
token), a bare user, an ``ApiToken``, a request, or None.  This module lives beside the
``ApiToken`` model so every app may import it without reaching up into the HTTP layer; it
reads an actor by its ``user`` and ``token`` attributes and never imports ``studio.api``.
"""

from __future__ import annotations

from django.http import HttpRequest

from .models import ApiToken


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
