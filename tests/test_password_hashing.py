"""Passwords in production are stored with a slow salted hasher; the suite swaps in a fast one.

tests/conftest.py makes every test hash with MD5 (1.4 s per PBKDF2 hash on the CI machine was
most of the web tests' setup).  These tests keep the real thing honest: the settings production
runs with name a slow hasher first, and a password stored by it signs in through the real page.
"""

import importlib
import os

from django.conf import global_settings, settings
from django.contrib.auth.hashers import identify_hasher
from django.test import Client, override_settings

from studio.workspaces.services import create_user
from tests.conftest import FAST_PASSWORD_HASHERS

SLOW_SALTED_HASHERS = {
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
}


def production_password_hashers() -> list[str]:
    # Read from the settings module itself: the live settings carry the suite's override.
    module = importlib.import_module(os.environ["DJANGO_SETTINGS_MODULE"])
    return list(getattr(module, "PASSWORD_HASHERS", global_settings.PASSWORD_HASHERS))


def test_production_stores_passwords_with_a_slow_salted_hasher():
    hashers = production_password_hashers()
    assert hashers[0] in SLOW_SALTED_HASHERS, hashers
    assert not set(FAST_PASSWORD_HASHERS) & set(hashers), "the test hasher leaked into settings"


def test_the_suite_hashes_fast_unless_a_test_asks_otherwise(db):
    assert settings.PASSWORD_HASHERS == FAST_PASSWORD_HASHERS
    assert identify_hasher(create_user("quick", "a quick password").password).algorithm == "md5"


def test_a_password_stored_by_the_production_hasher_signs_in_and_a_wrong_one_does_not(db):
    with override_settings(PASSWORD_HASHERS=production_password_hashers()):
        user = create_user("pat", "pat's real password")
        stored = identify_hasher(user.password)
        assert f"django.contrib.auth.hashers.{type(stored).__name__}" in SLOW_SALTED_HASHERS
        refused = Client().post("/accounts/login/", {"username": "pat", "password": "a guess"})
        assert refused.status_code == 200 and "_auth_user_id" not in refused.wsgi_request.session
        signed_in = Client().post("/accounts/login/",
                                  {"username": "pat", "password": "pat's real password"})
        assert signed_in.status_code == 302
        assert signed_in.wsgi_request.session["_auth_user_id"] == str(user.pk)
