"""Sign-in throttling, counted in Django's cache (no table): failed sign-ins are counted per
username and per client address for ``SIGN_IN_LOCKOUT_SECONDS``; once either count reaches its
limit, sign-ins for that username or from that address are refused - a correct password too -
until the lockout has passed.  A cache that fails lets sign-ins through (as the live rate
limit does): a broken cache must not lock everyone out."""

from __future__ import annotations

import hashlib
import math
import time

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.core.exceptions import ValidationError


def _keys(username: str, address: str) -> list[tuple[str, int]]:
    # Hashed: a username may hold anything, a cache key may not.
    account = hashlib.sha256(username.strip().casefold().encode("utf-8", "replace")).hexdigest()
    return [(f"signin:account:{account}", settings.SIGN_IN_MAX_FAILURES),
            (f"signin:address:{address}", settings.SIGN_IN_MAX_FAILURES_PER_ADDRESS)]


def client_address(request) -> str:
    return request.META.get("REMOTE_ADDR", "") if request is not None else ""


def seconds_locked(username: str, address: str) -> int:
    """How long sign-ins for ``username`` from ``address`` stay refused (0: not locked)."""
    try:
        until = cache.get_many([f"{key}:locked" for key, _ in _keys(username, address)])
    except Exception:  # noqa: BLE001 - see the module's docstring
        return 0
    left = max(until.values(), default=0) - time.time()
    return math.ceil(left) if left > 0 else 0


def note_failure(username: str, address: str) -> None:
    window = settings.SIGN_IN_LOCKOUT_SECONDS
    try:
        for key, limit in _keys(username, address):
            cache.add(key, 0, timeout=window)
            if cache.incr(key) >= limit:
                cache.add(f"{key}:locked", time.time() + window, timeout=window)
    except Exception:  # noqa: BLE001
        return


def note_success(username: str) -> None:
    """A correct password clears the account's count (not the address's)."""
    key = _keys(username, "")[0][0]
    try:
        cache.delete(key)
    except Exception:  # noqa: BLE001
        return


def locked_message(seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return (f"Too many failed sign-ins for this account or from this address. Sign-in is "
            f"paused for {minutes} minute{'s' if minutes != 1 else ''}; try again then, or ask "
            "an administrator to check the account.")


class ThrottledSignIn:
    """Mixed into Django's sign-in forms: refuse while locked, count failures."""

    locked_for = 0

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        address = client_address(self.request)
        self.locked_for = seconds_locked(username, address)
        if self.locked_for:
            raise ValidationError(locked_message(self.locked_for), code="throttled")
        try:
            cleaned = super().clean()
        except ValidationError:
            note_failure(username, address)
            raise
        if self.get_user() is not None:
            note_success(username)
        return cleaned


class SignInForm(ThrottledSignIn, AuthenticationForm):
    pass


class AdminSignInForm(ThrottledSignIn, AdminAuthenticationForm):
    pass


class SignInView(LoginView):
    form_class = SignInForm

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.locked_for:
            response.status_code = 429
            response["Retry-After"] = str(form.locked_for)
        return response
