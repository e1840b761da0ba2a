"""Finding the live token for a presented secret, with a short process cache.

Lives beside the ``ApiToken`` model so that the workspace services, which must drop cached
tokens when a token or a membership changes, can reach it; the API's bearer auth
(``acting.TokenAuth``) reads tokens through ``find_token``.
"""

from __future__ import annotations

import hmac
import re
import time

from django.conf import settings
from django.utils import timezone

from studio.caching import LruCache

from .models import TOKEN_PREFIX_LENGTH, ApiToken, hash_token


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
_TOKEN_CACHE_MAX = 1000
_TOKEN_CACHE: LruCache[str, tuple[float, ApiToken]] = LruCache(_TOKEN_CACHE_MAX)


def forget_cached_tokens() -> None:
    _TOKEN_CACHE.clear()


def find_token(raw: str) -> ApiToken | None:
    """The live token for a presented secret, or None.  Constant-time comparison of hashes."""
    parts = raw.split("_")
    if len(parts) < 3 or parts[0] != "cs" or not _PREFIX.fullmatch(parts[1]):
        return None  # not one of ours: no query (and no odd bytes sent to the database)
    digest = hash_token(raw)
    ttl = settings.TOKEN_CACHE_SECONDS
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
            _TOKEN_CACHE.put(digest, (time.monotonic() + ttl, token))
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        token.last_used_at = now
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)  # throttled write
    return token
