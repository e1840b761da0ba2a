"""Sign-in throttling, counted in Django's cache (no table).

Failed sign-ins are counted for ``SIGN_IN_LOCKOUT_SECONDS`` per username, per client address
and per (address, username):
- ``SIGN_IN_MAX_FAILURES`` failures for one username lock that username, from anywhere;
- ``SIGN_IN_MAX_FAILURES_PER_ADDRESS`` failures from one address lock that address for the
  usernames that failed from it.  Someone at the same address (an office behind one NAT) whose
  username has not failed there still signs in; a guesser gets one try per username.
While locked, sign-ins are refused - a correct password too - until the lockout has passed.
The address is the client's, read behind trusted proxies (studio.web.proxy), so that clients
behind one proxy are not one client.  A cache that fails lets sign-ins through (as the live
rate limit does): a broken cache must not lock everyone out."""

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

from .proxy import client_address


def _hash(text: str) -> str:
    # A username or a forwarded address may hold anything; a cache key may not.
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def _account_key(username: str) -> str:
    return f"signin:account:{_hash(username.strip().casefold())}"


def _address_key(address: str) -> str:
    return f"signin:address:{_hash(address)}"


def _pair_key(username: str, address: str) -> str:
    return f"{_address_key(address)}:{_hash(username.strip().casefold())}"


def seconds_locked(username: str, address: str) -> int:
    """How long sign-ins for ``username`` from ``address`` stay refused (0: not locked)."""
    account, by_address, pair = (_account_key(username), _address_key(address),
                                 _pair_key(username, address))
    try:
        found = cache.get_many([f"{account}:locked", f"{by_address}:locked", pair])
    except Exception:  # noqa: BLE001 - see the module's docstring
        return 0
    until = [found.get(f"{account}:locked", 0)]
    if found.get(pair):  # the address's lock holds only usernames that failed from it
        until.append(found.get(f"{by_address}:locked", 0))
    left = max(until) - time.time()
    return math.ceil(left) if left > 0 else 0


def note_failure(username: str, address: str) -> None:
    window = settings.SIGN_IN_LOCKOUT_SECONDS
    limits = [(_account_key(username), settings.SIGN_IN_MAX_FAILURES),
              (_address_key(address), settings.SIGN_IN_MAX_FAILURES_PER_ADDRESS)]
    try:
        # Kept as long as a lock of the address can last (it starts at most a window after
        # the address's first failure, and lasts a window).
        pair = _pair_key(username, address)
        cache.add(pair, 0, timeout=2 * window)
        cache.incr(pair)
        for key, limit in limits:
            cache.add(key, 0, timeout=window)
            if cache.incr(key) >= limit:
                cache.add(f"{key}:locked", time.time() + window, timeout=window)
    except Exception:  # noqa: BLE001
        return


def note_success(username: str, address: str) -> None:
    """A correct password clears the account's count and its failures from this address
    (not the address's count)."""
    try:
        cache.delete_many([_account_key(username), _pair_key(username, address)])
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
            note_success(username, address)
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
